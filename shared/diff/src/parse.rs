//! Parsing with a deadline, reusing one parser per language and thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

use tree_sitter::{InputEdit, ParseOptions, Parser, Point};

use crate::lang::Lang;
use crate::lines::Hunk;

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

/// Parses `source` as an edit of `previous`: its text, its tree, and the hunks that turn that
/// text into `source` (from [`crate::lines::line_diff`]). Each hunk, trimmed to the bytes that
/// differ, is one edit of the tree, and tree-sitter reuses every subtree outside them: an
/// agent's rollout against a cached "before" re-parses only what it changed, and so does a
/// multi-hunk change. The tree is the same as a fresh parse's.
pub fn reparse(
    lang: Lang,
    source: &str,
    previous: Option<(&str, &tree_sitter::Tree, &[Hunk])>,
    deadline: Instant,
) -> Result<tree_sitter::Tree, ParseFailure> {
    let old = previous.map(|(text, tree, hunks)| {
        let (old, new) = (text.as_bytes(), source.as_bytes());
        let mut at = (0, Point { row: 0, column: 0 });
        let edits: Vec<InputEdit> = hunks.iter().map(|h| edit(old, new, h, &mut at)).collect();
        let mut tree = tree.clone();
        // Last to first: an edit's positions, taken in the before text, still hold while
        // only the text after it has changed.
        for edit in edits.iter().rev() {
            tree.edit(edit);
        }
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

/// The edit of `hunk`, narrowed to the bytes that differ: its common prefix and suffix are
/// left out (a token typed inside a line, a minified file's one long line). `at` is a byte
/// offset of the old text and its position, at or before the hunk; it moves to the edit's end.
fn edit(old: &[u8], new: &[u8], hunk: &Hunk, at: &mut (usize, Point)) -> InputEdit {
    let (a, b) = (&old[hunk.old.clone()], &new[hunk.new.clone()]);
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    let (start, old_end) = (hunk.old.start + prefix, hunk.old.end - suffix);
    let inserted = &b[prefix..b.len() - suffix];
    let start_position = advance(at.1, &old[at.0..start]);
    let old_end_position = advance(start_position, &old[start..old_end]);
    *at = (old_end, old_end_position);
    InputEdit {
        start_byte: start,
        old_end_byte: old_end,
        new_end_byte: start + inserted.len(),
        start_position,
        old_end_position,
        new_end_position: advance(start_position, inserted),
    }
}

/// Where `from` ends up after `text`.
fn advance(from: Point, text: &[u8]) -> Point {
    match text.iter().rposition(|&c| c == b'\n') {
        Some(last) => Point {
            row: from.row + text.iter().filter(|&&c| c == b'\n').count(),
            column: text.len() - last - 1,
        },
        None => Point {
            row: from.row,
            column: from.column + text.len(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::lines::line_diff;
    use crate::tree::Tree;

    /// Edits of real code (typing inside a token, deleting a line, inserting a block, joining
    /// lines, an edit at either end, several hunks at once): the re-parse must give the fresh
    /// parse's tree.
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
            // Hunks at the start, in the middle and at the end, one joining two lines.
            before
                .replace("import os", "import sys")
                .replace("        s += x\n    return s", "        s += x; return s")
                .replace("[1, 2]", "[3]"),
            String::new(),
        ];
        let deadline = Instant::now() + Duration::from_secs(10);
        let old = parse(Lang::Python, before, deadline).unwrap();
        for after in &edits {
            let fresh = parse(Lang::Python, after, deadline).unwrap();
            let (_, hunks) = line_diff(before, after, deadline);
            let previous = Some((before, &old, &hunks[..]));
            let incremental = reparse(Lang::Python, after, previous, deadline).unwrap();
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
