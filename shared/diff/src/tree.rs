//! The normalised syntax tree the distance is computed on, stored in postorder.
//!
//! Normalisation (the same rule for every language; the comment kinds differ, see
//! [`Lang::is_comment`]): keep every named node and every leaf token; drop comments with their
//! subtrees and zero-width MISSING nodes the parser invented; lift the children of anonymous
//! inner nodes. An inner node's label is its kind (`function_definition`); a named leaf's label
//! is `kind:text` (`identifier:total`); an anonymous leaf's label is its text (`+`, `return`).
//! Syntax errors stay in the tree as `ERROR` nodes and are counted.

use std::collections::HashMap;
use std::ops::ControlFlow;

use crate::lang::Lang;
use crate::visit::{self, Visitor};

/// A tree in postorder: the subtree of node `i` is the index range `i + 1 - sizes[i] ..= i`, so
/// its leftmost leaf is `i + 1 - sizes[i]` and the root is the last node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    labels: Vec<u32>,
    sizes: Vec<u32>,
    symbols: Vec<Box<str>>,
    errors: u32,
}

/// The tree had more nodes than allowed; the caller falls back to line metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the syntax tree has more than {limit} nodes")]
pub struct NodeLimit {
    /// The node limit the tree exceeded.
    pub limit: usize,
}

impl Tree {
    /// Normalises a tree-sitter tree of `source`.
    pub fn from_syntax(
        lang: Lang,
        syntax: &tree_sitter::Tree,
        source: &str,
        max_nodes: usize,
    ) -> Result<Tree, NodeLimit> {
        let mut normaliser = Normaliser::new(lang, source, max_nodes);
        visit::walk(syntax, &mut normaliser);
        normaliser.finish()
    }

    /// Parses bracket notation `{label{child}{child}}` (labels escape `\`, `{`, `}` with `\`).
    pub fn from_bracket(text: &str) -> Option<Tree> {
        let mut builder = Builder::default();
        let mut open: Vec<(usize, String)> = Vec::new();
        let mut chars = text.trim().chars();
        let mut label: Option<String> = None;
        while let Some(c) = chars.next() {
            match c {
                '{' => {
                    if let Some(pending) = label.take() {
                        open.last_mut()?.1 = pending;
                    }
                    open.push((builder.len(), String::new()));
                    label = Some(String::new());
                }
                '}' => {
                    if let Some(pending) = label.take() {
                        open.last_mut()?.1 = pending;
                    }
                    let (start, name) = open.pop()?;
                    builder.push(&name, start);
                    if open.is_empty() {
                        return chars.next().is_none().then(|| builder.finish(0));
                    }
                }
                '\\' => label.as_mut()?.push(chars.next()?),
                other => label.as_mut()?.push(other),
            }
        }
        None
    }

    /// The tree in bracket notation, children in order.
    pub fn to_bracket(&self) -> String {
        let mut out = String::with_capacity(self.labels.len() * 8);
        if self.labels.is_empty() {
            return out;
        }
        // Walk in preorder: push a node's children in reverse so the first child comes out first.
        enum Step {
            Open(usize),
            Close,
        }
        let mut stack = vec![Step::Open(self.labels.len() - 1)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Close => out.push('}'),
                Step::Open(node) => {
                    out.push('{');
                    escape_into(&mut out, self.label(node));
                    stack.push(Step::Close);
                    let children: Vec<usize> = self.children(node).collect();
                    stack.extend(children.into_iter().rev().map(Step::Open));
                }
            }
        }
        out
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether the tree has no nodes.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Label ids in postorder; compare ids of two trees only after [`Tree::labels_in`].
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// Subtree sizes in postorder.
    pub fn sizes(&self) -> &[u32] {
        &self.sizes
    }

    /// The label of `node`, a postorder index.
    pub fn label(&self, node: usize) -> &str {
        &self.symbols[self.labels[node] as usize]
    }

    /// ERROR and MISSING nodes the parser produced.
    pub fn errors(&self) -> u32 {
        self.errors
    }

    /// The children of `node`, left to right.
    pub fn children(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        let first = node + 1 - self.sizes[node] as usize;
        let mut next = node;
        // Walk from the last child leftwards, then reverse: children are found by their sizes.
        let mut found = Vec::new();
        while next > first {
            let child = next - 1;
            found.push(child);
            next = child + 1 - self.sizes[child] as usize;
        }
        found.into_iter().rev()
    }

    /// This tree's labels expressed in `other`'s label ids, so labels of both trees compare as
    /// integers; labels `other` lacks get fresh ids past its own.
    pub fn labels_in(&self, other: &Tree) -> Vec<u32> {
        let known: HashMap<&str, u32> = other
            .symbols
            .iter()
            .enumerate()
            .map(|(id, s)| (&**s, id as u32))
            .collect();
        let mut fresh = other.symbols.len() as u32;
        let mapped: Vec<u32> = self
            .symbols
            .iter()
            .map(|s| {
                known.get(&**s).copied().unwrap_or_else(|| {
                    fresh += 1;
                    fresh - 1
                })
            })
            .collect();
        self.labels.iter().map(|&l| mapped[l as usize]).collect()
    }
}

fn escape_into(out: &mut String, label: &str) {
    for c in label.chars() {
        if matches!(c, '\\' | '{' | '}') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Builds the normalised tree during a [`visit::walk`], alone or beside other readers.
pub(crate) struct Normaliser<'s> {
    lang: Lang,
    source: &'s str,
    max_nodes: usize,
    builder: Builder,
    /// One entry per entered node: where its subtree starts in the output, or None when the
    /// node itself is not kept.
    open: Vec<Option<usize>>,
    /// Depth inside a dropped node (a comment or a MISSING node): nothing in it is kept.
    dropped: u32,
    errors: u32,
    failed: Option<NodeLimit>,
}

impl<'s> Normaliser<'s> {
    pub(crate) fn new(lang: Lang, source: &'s str, max_nodes: usize) -> Self {
        Self {
            lang,
            source,
            max_nodes,
            builder: Builder::default(),
            open: Vec::new(),
            dropped: 0,
            errors: 0,
            failed: None,
        }
    }

    /// The tree, once the walk is over.
    pub(crate) fn finish(self) -> Result<Tree, NodeLimit> {
        match self.failed {
            Some(limit) => Err(limit),
            None => Ok(self.builder.finish(self.errors)),
        }
    }
}

impl<'t> Visitor<'t> for Normaliser<'_> {
    fn enter(&mut self, node: tree_sitter::Node<'t>, _: Option<&'static str>) -> ControlFlow<()> {
        if self.dropped > 0 {
            self.dropped += 1;
            return ControlFlow::Continue(());
        }
        if node.is_error() || node.is_missing() {
            self.errors += 1;
        }
        if node.is_missing() || self.lang.is_comment(node.kind()) {
            self.dropped = 1;
        } else {
            let keep = node.is_named() || node.child_count() == 0;
            self.open.push(keep.then_some(self.builder.len()));
        }
        ControlFlow::Continue(())
    }

    fn leave(&mut self, node: tree_sitter::Node<'t>) -> ControlFlow<()> {
        if self.dropped > 0 {
            self.dropped -= 1;
            return ControlFlow::Continue(());
        }
        match self
            .builder
            .close(&mut self.open, node, self.source, self.max_nodes)
        {
            Ok(()) => ControlFlow::Continue(()),
            Err(limit) => {
                self.failed = Some(limit);
                ControlFlow::Break(())
            }
        }
    }
}

#[derive(Default)]
struct Builder {
    labels: Vec<u32>,
    sizes: Vec<u32>,
    symbols: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
    /// Symbol ids of labels that are just a node kind, by kind id: most nodes are inner nodes
    /// or fixed tokens, and this spares them a string hash.
    by_kind: Vec<Option<u32>>,
    scratch: String,
}

impl Builder {
    fn len(&self) -> usize {
        self.labels.len()
    }

    fn symbol(&mut self, label: &str) -> u32 {
        match self.ids.get(label) {
            Some(&id) => id,
            None => {
                let id = self.symbols.len() as u32;
                self.symbols.push(label.into());
                self.ids.insert(label.into(), id);
                id
            }
        }
    }

    fn push(&mut self, label: &str, start: usize) {
        let id = self.symbol(label);
        self.push_id(id, start);
    }

    fn push_id(&mut self, id: u32, start: usize) {
        self.sizes.push((self.labels.len() - start + 1) as u32);
        self.labels.push(id);
    }

    /// The symbol of the label `kind`, cached by kind id.
    fn kind_symbol(&mut self, node: tree_sitter::Node<'_>) -> u32 {
        let kind = usize::from(node.kind_id());
        if let Some(Some(id)) = self.by_kind.get(kind) {
            return *id;
        }
        let id = self.symbol(node.kind());
        if self.by_kind.len() <= kind {
            self.by_kind.resize(kind + 1, None);
        }
        self.by_kind[kind] = Some(id);
        id
    }

    fn close(
        &mut self,
        open: &mut Vec<Option<usize>>,
        node: tree_sitter::Node<'_>,
        source: &str,
        max_nodes: usize,
    ) -> Result<(), NodeLimit> {
        let Some(start) = open.pop().flatten() else {
            return Ok(());
        };
        if self.len() >= max_nodes {
            return Err(NodeLimit { limit: max_nodes });
        }
        if node.child_count() > 0 {
            let id = self.kind_symbol(node);
            self.push_id(id, start);
            return Ok(());
        }
        let text = String::from_utf8_lossy(&source.as_bytes()[node.byte_range()]);
        if !node.is_named() && text == node.kind() {
            let id = self.kind_symbol(node);
            self.push_id(id, start);
            return Ok(());
        }
        let mut label = std::mem::take(&mut self.scratch);
        label.clear();
        if node.is_named() {
            label.push_str(node.kind());
            label.push(':');
        }
        label.push_str(&text);
        self.push(&label, start);
        self.scratch = label;
        Ok(())
    }

    fn finish(self, errors: u32) -> Tree {
        Tree {
            labels: self.labels,
            sizes: self.sizes,
            symbols: self.symbols,
            errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::parse::parse;

    fn normalise(lang: Lang, source: &str) -> Tree {
        let deadline = Instant::now() + Duration::from_secs(5);
        let syntax = parse(lang, source, deadline).unwrap();
        Tree::from_syntax(lang, &syntax, source, 1_000_000).unwrap()
    }

    #[test]
    fn python_statement_normalises_to_named_nodes_and_tokens() {
        let tree = normalise(Lang::Python, "x = y + 1  # why\n");
        assert_eq!(
            tree.to_bracket(),
            "{module{expression_statement{assignment{identifier:x}{=}{binary_operator\
             {identifier:y}{+}{integer:1}}}}}"
        );
        assert_eq!(tree.errors(), 0);
    }

    #[test]
    fn comments_are_dropped_in_every_language() {
        let cases = [
            (Lang::Rust, "// a\nfn f() {} /* b */", "// z\nfn f() {}"),
            (Lang::Go, "package p // a\n", "package p\n"),
            (Lang::Java, "class A { /* x */ }", "class A { // y\n}"),
            (Lang::TypeScript, "let a = 1; // c", "let a = 1;"),
            (Lang::JavaScript, "/* c */ f();", "f();"),
        ];
        for (lang, with, without) in cases {
            assert_eq!(
                normalise(lang, with).to_bracket(),
                normalise(lang, without).to_bracket()
            );
        }
    }

    #[test]
    fn syntax_errors_are_kept_and_counted() {
        let tree = normalise(Lang::Python, "x = )\nreturn 1\n");
        assert!(tree.errors() > 0);
        assert!(tree.to_bracket().contains("ERROR"));
    }

    #[test]
    fn bracket_notation_round_trips_with_escapes() {
        let tree = normalise(Lang::JavaScript, "const s = \"{\\\\}\"; f({a: 1});");
        let text = tree.to_bracket();
        let back = Tree::from_bracket(&text).unwrap();
        assert_eq!(back.to_bracket(), text);
        assert_eq!(back.sizes(), tree.sizes());
        assert_eq!(Tree::from_bracket("{a}{b}"), None);
        assert_eq!(Tree::from_bracket("{a"), None);
    }

    #[test]
    fn node_limit_is_reported() {
        let deadline = Instant::now() + Duration::from_secs(5);
        let source = "x = 1\n".repeat(100);
        let syntax = parse(Lang::Python, &source, deadline).unwrap();
        assert_eq!(
            Tree::from_syntax(Lang::Python, &syntax, &source, 50),
            Err(NodeLimit { limit: 50 })
        );
    }

    #[test]
    fn past_deadline_parse_is_cancelled() {
        let source = "x = [1, 2, 3]\n".repeat(20_000);
        assert!(parse(Lang::Python, &source, Instant::now()).is_err());
        // The parser is usable again afterwards.
        assert!(
            parse(
                Lang::Python,
                "x = 1\n",
                Instant::now() + Duration::from_secs(5)
            )
            .is_ok()
        );
    }
}
