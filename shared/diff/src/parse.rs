//! Parsing with a deadline, reusing one parser per language and thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

use tree_sitter::{InputEdit, ParseOptions, Parser, Point};

use crate::lang::Lang;

thread_local! {
    static PARSERS: RefCell<HashMap<Lang, Parser>> = RefCell::new(HashMap::new());
}

/// Why a file has no syntax tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseFailure {
    /// The deadline passed before the parse finished.
    #[error("the analysis deadline passed while parsing")]
    Deadline,
}

/// Parses `source`; tree-sitter recovers from syntax errors, so the only failure is the deadline.
pub fn parse(
    lang: Lang,
    source: &str,
    deadline: Instant,
) -> Result<tree_sitter::Tree, ParseFailure> {
    reparse(lang, source, None, deadline)
}

/// Parses `source` as an edit of `previous` (its text and tree): the text between their
/// common prefix and suffix is the edit, and tree-sitter reuses every subtree outside it. An
/// agent's rollout against a cached "before" re-parses only what it changed; the tree is
/// the same as a fresh parse's.
pub fn reparse(
    lang: Lang,
    source: &str,
    previous: Option<(&str, &tree_sitter::Tree)>,
    deadline: Instant,
) -> Result<tree_sitter::Tree, ParseFailure> {
    let old = previous.map(|(text, tree)| {
        let mut tree = tree.clone();
        tree.edit(&edit_between(text, source));
        tree
    });
    PARSERS.with_borrow_mut(|parsers| {
        let parser = parsers.entry(lang).or_insert_with(|| {
            let mut parser = Parser::new();
            parser
                .set_language(&lang.grammar())
                .expect("bundled grammars match the tree-sitter ABI");
            parser
        });
        let bytes = source.as_bytes();
        let mut read = |offset: usize, _| bytes.get(offset..).unwrap_or_default();
        // Returning true from the progress callback cancels the parse.
        let mut past_deadline = |_: &tree_sitter::ParseState| Instant::now() >= deadline;
        let options = ParseOptions::new().progress_callback(&mut past_deadline);
        let tree = parser.parse_with_options(&mut read, old.as_ref(), Some(options));
        // A cancelled parse leaves state behind that would resume on the next call.
        if tree.is_none() {
            parser.reset();
        }
        tree.ok_or(ParseFailure::Deadline)
    })
}

/// The single edit that turns `old` into `new`: everything between their common prefix and
/// common suffix replaced.
fn edit_between(old: &str, new: &str) -> InputEdit {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    let (old_end, new_end) = (a.len() - suffix, b.len() - suffix);
    InputEdit {
        start_byte: prefix,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position: point(a, prefix),
        old_end_position: point(a, old_end),
        new_end_position: point(b, new_end),
    }
}

/// Row and byte column of `offset` in `text`, as tree-sitter counts them.
fn point(text: &[u8], offset: usize) -> Point {
    let head = &text[..offset];
    let line_start = head.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    Point {
        row: head.iter().filter(|&&c| c == b'\n').count(),
        column: offset - line_start,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::tree::Tree;

    /// Edits of real code (typing inside a token, deleting a line, inserting a block, joining
    /// lines, an edit at either end): the re-parse must give the fresh parse's tree.
    #[test]
    fn a_reparse_gives_the_fresh_parse() {
        let before = "import os\n\ndef total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n\nprint(total([1, 2]))\n";
        let edits = [
            before.replace("s += x", "s += x * 2"),
            before.replace("    s = 0\n", ""),
            before.replace(
                "    return s\n",
                "    if not xs:\n        return None\n    return s\n",
            ),
            before.replace("):\n    s", "): s"),
            format!("# header\n{before}"),
            format!("{before}print(1)\n"),
            before.replace("total", "sum_all"),
            String::new(),
        ];
        let deadline = Instant::now() + Duration::from_secs(10);
        let old = parse(Lang::Python, before, deadline).unwrap();
        for after in &edits {
            let fresh = parse(Lang::Python, after, deadline).unwrap();
            let incremental = reparse(Lang::Python, after, Some((before, &old)), deadline).unwrap();
            assert_eq!(
                incremental.root_node().to_sexp(),
                fresh.root_node().to_sexp(),
                "{after:?}"
            );
            let tree =
                |t: &tree_sitter::Tree| Tree::from_syntax(Lang::Python, t, after, 10_000).unwrap();
            assert_eq!(tree(&incremental).to_bracket(), tree(&fresh).to_bracket());
        }
    }
}
