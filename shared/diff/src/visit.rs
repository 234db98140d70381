//! One walk over a syntax tree that several readers share. The normalised tree and the
//! detectors' facts are both read from every node of a file; walking the tree once for both
//! halves the cursor moves, which are most of the cost of reading a parsed file.

use std::ops::ControlFlow;

use tree_sitter::{Node, Tree};

/// A reader of a syntax tree, told of every node in document order.
pub(crate) trait Visitor<'t> {
    /// `node` is entered (`field`: its field name in its parent); `Break` ends the walk.
    fn enter(&mut self, node: Node<'t>, field: Option<&'static str>) -> ControlFlow<()>;
    /// `node` is left, after all its children; `Break` ends the walk.
    fn leave(&mut self, node: Node<'t>) -> ControlFlow<()>;
}

impl<'t, V: Visitor<'t>> Visitor<'t> for &mut V {
    fn enter(&mut self, node: Node<'t>, field: Option<&'static str>) -> ControlFlow<()> {
        (**self).enter(node, field)
    }

    fn leave(&mut self, node: Node<'t>) -> ControlFlow<()> {
        (**self).leave(node)
    }
}

/// Two readers in one walk; it ends when either ends it.
impl<'t, A: Visitor<'t>, B: Visitor<'t>> Visitor<'t> for (A, B) {
    fn enter(&mut self, node: Node<'t>, field: Option<&'static str>) -> ControlFlow<()> {
        self.0.enter(node, field)?;
        self.1.enter(node, field)
    }

    fn leave(&mut self, node: Node<'t>) -> ControlFlow<()> {
        self.0.leave(node)?;
        self.1.leave(node)
    }
}

/// Walks every node of `syntax`, iteratively (trees can be far deeper than the stack allows).
pub(crate) fn walk<'t>(syntax: &'t Tree, mut visitor: impl Visitor<'t>) {
    let mut cursor = syntax.walk();
    'walk: loop {
        if visitor.enter(cursor.node(), cursor.field_name()).is_break() {
            return;
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if visitor.leave(cursor.node()).is_break() {
                return;
            }
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}
