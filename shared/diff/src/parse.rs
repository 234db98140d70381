//! Parsing with a deadline, reusing one parser per language and thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

use tree_sitter::{ParseOptions, Parser};

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
        let tree = parser.parse_with_options(&mut read, None, Some(options));
        // A cancelled parse leaves state behind that would resume on the next call.
        if tree.is_none() {
            parser.reset();
        }
        tree.ok_or(ParseFailure::Deadline)
    })
}
