//! Line metrics: what every file gets, with or without a grammar.

use std::ops::Range;
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

/// A changed run of lines (either side may be empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Its bytes in the before text.
    pub old: Range<usize>,
    /// The bytes of the after text that replace them.
    pub new: Range<usize>,
}

/// Diffs `before` and `after` by lines (Myers; past `deadline` the diff gets coarser, never
/// wrong: every reported line really differs or was really kept): the counts, and the hunks
/// in order.
pub fn line_diff(before: &str, after: &str, deadline: Instant) -> (LineStats, Vec<Hunk>) {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(deadline)
        .diff_lines(before, after);
    // Each line's first byte, and the text's end.
    let offsets = |lines: &mut dyn Iterator<Item = &str>| {
        let mut at = 0;
        let mut starts = vec![0];
        starts.extend(lines.map(|line| {
            at += line.len();
            at
        }));
        starts
    };
    let old_at = offsets(&mut diff.iter_old_slices());
    let new_at = offsets(&mut diff.iter_new_slices());
    let mut stats = LineStats::default();
    let mut hunks: Vec<Hunk> = Vec::new();
    for op in diff.ops() {
        let (tag, old, new) = op.as_tag_tuple();
        stats.before += old.len();
        stats.after += new.len();
        if tag == DiffTag::Equal {
            continue;
        }
        stats.removed += old.len();
        stats.added += new.len();
        stats.changed += old.len().max(new.len());
        let hunk = Hunk {
            old: old_at[old.start]..old_at[old.end],
            new: new_at[new.start]..new_at[new.end],
        };
        // A replacement can come as a deletion and an insertion side by side: one hunk.
        match hunks.last_mut() {
            Some(last) if last.old.end == hunk.old.start && last.new.end == hunk.new.start => {
                last.old.end = hunk.old.end;
                last.new.end = hunk.new.end;
            }
            _ => hunks.push(hunk),
        }
    }
    (stats, hunks)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn stats(a: &str, b: &str) -> LineStats {
        line_diff(a, b, Instant::now() + Duration::from_secs(5)).0
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
    fn hunks_are_the_changed_bytes_of_whole_lines() {
        let (before, after) = ("a\nb\nc\nd\ne", "a\nB\nc\nd\nf\ng");
        let (_, hunks) = line_diff(before, after, Instant::now() + Duration::from_secs(5));
        assert_eq!(
            hunks,
            [
                Hunk {
                    old: 2..4,
                    new: 2..4
                },
                Hunk {
                    old: 8..9,
                    new: 8..11
                },
            ]
        );
        // Replaying the hunks on the before text gives the after text.
        let mut replayed = before.to_owned();
        for hunk in hunks.iter().rev() {
            replayed.replace_range(hunk.old.clone(), &after[hunk.new.clone()]);
        }
        assert_eq!(replayed, after);
    }

    #[test]
    fn identical_and_empty_texts() {
        assert_eq!(stats("x\n", "x\n").changed, 0);
        let s = stats("", "one\ntwo\n");
        assert_eq!((s.added, s.changed, s.before, s.after), (2, 2, 0, 2));
    }
}
