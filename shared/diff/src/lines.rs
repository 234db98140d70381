//! Line metrics: what every file gets, with or without a grammar.

use std::time::Instant;

use similar::{Algorithm, DiffTag, TextDiff};

/// Line counts of one file's change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Lines inserted.
    pub added: usize,
    /// Lines deleted.
    pub removed: usize,
    /// A modified line counts once: per hunk, the larger of its added and removed lines.
    pub changed: usize,
    /// Lines in the before text.
    pub before: usize,
    /// Lines in the after text.
    pub after: usize,
}

/// Diffs `before` and `after` by lines (Myers; past `deadline` the diff gets coarser, never
/// wrong: every reported line really differs or was really kept).
pub fn line_stats(before: &str, after: &str, deadline: Instant) -> LineStats {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(deadline)
        .diff_lines(before, after);
    let mut stats = LineStats::default();
    for op in diff.ops() {
        let (tag, old, new) = op.as_tag_tuple();
        stats.before += old.len();
        stats.after += new.len();
        if tag != DiffTag::Equal {
            stats.removed += old.len();
            stats.added += new.len();
            stats.changed += old.len().max(new.len());
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn stats(a: &str, b: &str) -> LineStats {
        line_stats(a, b, Instant::now() + Duration::from_secs(5))
    }

    #[test]
    fn a_modified_line_counts_once() {
        let s = stats("a\nb\nc\n", "a\nB\nc\nd\n");
        assert_eq!(
            (s.added, s.removed, s.changed, s.before, s.after),
            (2, 1, 2, 3, 4)
        );
    }

    #[test]
    fn identical_and_empty_texts() {
        assert_eq!(stats("x\n", "x\n").changed, 0);
        let s = stats("", "one\ntwo\n");
        assert_eq!((s.added, s.changed, s.before, s.after), (2, 2, 0, 2));
    }
}
