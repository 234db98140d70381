//! Text helpers shared by the detectors: node text without panics, a canonical compact form for
//! multiset keys, whole-word search, and the small name patterns the tables are written in.

use tree_sitter::Node;

/// Snippets longer than this are cut in details, and nodes longer than this are not inspected
/// as a whole (keeps every per-node check bounded, so one pass stays linear).
pub(crate) const SNIPPET: usize = 240;

/// The source text of `node`; empty if the byte range is not valid in `source`.
pub(crate) fn text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or_default()
}

/// 1-based line of the node's first byte.
pub(crate) fn line(node: Node<'_>) -> u32 {
    u32::try_from(node.start_position().row).map_or(u32::MAX, |row| row.saturating_add(1))
}

pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Whitespace dropped except one space between two word characters: `sys.exit( 0 )` and
/// `sys.exit(0)` compare equal, `typeof  jest` stays `typeof jest`.
pub(crate) fn compact(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_whitespace() {
            gap = true;
            continue;
        }
        if gap && is_word_char(c) && out.chars().next_back().is_some_and(is_word_char) {
            out.push(' ');
        }
        gap = false;
        out.push(c);
    }
    out
}

/// `s` cut to [`SNIPPET`] characters for a detail string.
pub(crate) fn snippet(s: &str) -> String {
    match s.char_indices().nth(SNIPPET) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_owned(),
    }
}

/// The content of a string literal: prefixes (`r`, `b`, `f`, `#`) and quotes stripped.
pub(crate) fn unquote(s: &str) -> &str {
    s.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '#')
        .trim_matches(|c| matches!(c, '"' | '\'' | '`' | '#'))
}

/// Whether `needle` occurs in `hay` with no word character glued to either end.
pub(crate) fn contains_word(hay: &str, needle: &str) -> bool {
    count_words(hay, needle, 1) > 0
}

/// Whole-word occurrences of `needle` in `hay`, counting no further than `limit`.
pub(crate) fn count_words(hay: &str, needle: &str, limit: u32) -> u32 {
    if needle.is_empty() {
        return 0;
    }
    let mut found = 0;
    for (at, _) in hay.match_indices(needle) {
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().next();
        let glued_before = before.is_some_and(is_word_char) && needle.starts_with(is_word_char);
        let glued_after = after.is_some_and(is_word_char) && needle.ends_with(is_word_char);
        if !glued_before && !glued_after {
            found += 1;
            if found >= limit {
                break;
            }
        }
    }
    found
}

/// Whether `s` is shaped like an identifier (so a string holding it may be a dynamic reference).
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_') && chars.all(is_word_char)
}

/// A pattern over a callee, decorator name or word, as written in the language tables.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pat {
    Is(&'static str),
    Prefix(&'static str),
    Suffix(&'static str),
    /// The last `.`/`::` segment starts with this (`Assertions.assertEquals`, `assertThat`).
    Last(&'static str),
    /// A string literal containing this, ignoring ASCII case.
    Quoted(&'static str),
}

impl Pat {
    pub(crate) fn matches(self, s: &str) -> bool {
        match self {
            Pat::Is(p) => s == p,
            Pat::Prefix(p) => s.starts_with(p),
            Pat::Suffix(p) => s.ends_with(p),
            Pat::Last(p) => s
                .rsplit(['.', ':'])
                .next()
                .is_some_and(|last| last.starts_with(p)),
            Pat::Quoted(_) => false,
        }
    }

    /// Matches a word of a node: `quoted` words are string contents.
    pub(crate) fn matches_word(self, word: &str, quoted: bool) -> bool {
        match self {
            Pat::Quoted(p) => quoted && word.to_ascii_lowercase().contains(p),
            _ => self.matches(word),
        }
    }

    /// A cheap test before splitting a node into words: the text holds the pattern's literal
    /// part (any case, for [`Pat::Quoted`]).
    pub(crate) fn may_match_in(self, raw: &str) -> bool {
        match self {
            Pat::Is(p) | Pat::Prefix(p) | Pat::Suffix(p) | Pat::Last(p) => raw.contains(p),
            Pat::Quoted(p) => raw
                .as_bytes()
                .windows(p.len())
                .any(|w| w.eq_ignore_ascii_case(p.as_bytes())),
        }
    }
}

pub(crate) fn matches_any(pats: &[Pat], s: &str) -> bool {
    pats.iter().any(|p| p.matches(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_keeps_only_the_spaces_between_words() {
        assert_eq!(compact("sys.exit( 0 )"), "sys.exit(0)");
        assert_eq!(
            compact("typeof   jest !== 'undefined'"),
            "typeof jest!=='undefined'"
        );
        assert_eq!(compact("if x is None:\n    return"), "if x is None:return");
    }

    #[test]
    fn words_are_matched_whole() {
        assert!(contains_word("import { helper } from './helper'", "helper"));
        assert!(!contains_word("helpers()", "helper"));
        assert!(contains_word("from a.my-mod import x", "my-mod"));
        assert_eq!(count_words("f(f, ff, f_)", "f", 10), 2);
    }

    #[test]
    fn unquote_strips_prefixes_and_quotes() {
        assert_eq!(unquote("\"abc\""), "abc");
        assert_eq!(unquote("r#\"abc\"#"), "abc");
        assert_eq!(unquote("f'{x}'"), "{x}");
        assert_eq!(unquote("\"\"\"doc\"\"\""), "doc");
    }

    #[test]
    fn patterns_match_the_last_segment() {
        assert!(Pat::Last("assert").matches("Assertions.assertEquals"));
        assert!(!Pat::Last("assert").matches("assertThat(x).isEqualTo"));
        assert!(Pat::Quoted("junit").matches_word("org.JUnit.Test", true));
        assert!(!Pat::Quoted("junit").matches_word("junit", false));
    }

    #[test]
    fn snippets_cut_on_char_boundaries() {
        let long = "é".repeat(SNIPPET + 5);
        assert!(snippet(&long).ends_with('…'));
        assert_eq!(snippet("short"), "short");
    }
}
