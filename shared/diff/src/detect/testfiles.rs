//! Changes to the tests themselves: test files and test functions modified or deleted, and
//! assertion counts that went down. Adding tests is never a flag.

use std::collections::HashMap;

use super::facts::{DefKind, Definition, Facts, TestKind};
use super::model::{FileChange, Flag, FlagKind};
use super::paths::{is_test_path, is_test_setup};
use super::run::Snapshot;

pub(crate) fn check(change: &FileChange<'_>, snapshot: &Snapshot<'_, '_>, flags: &mut Vec<Flag>) {
    let path = change.path;
    let test_file = is_test_path(path);
    let flag = |kind, line, detail: String| Flag {
        kind,
        file: path.to_owned(),
        line,
        detail,
    };
    match (change.before, change.after) {
        (Some(before), None) if test_file => {
            flags.push(match snapshot.renamed_to(path, before.text) {
                Some(to) => flag(
                    FlagKind::TestModified,
                    1,
                    format!("test file renamed to {to}"),
                ),
                None => flag(FlagKind::TestDeleted, 1, "test file deleted".to_owned()),
            })
        }
        (Some(before), None) => {
            for test in watched(before.facts, false) {
                flags.push(flag(
                    FlagKind::TestDeleted,
                    test.line,
                    format!("test `{}` deleted with its file", test.key),
                ));
            }
        }
        (None, Some(_)) if is_test_setup(path) => {
            flags.push(flag(
                FlagKind::TestModified,
                1,
                "new test configuration file".to_owned(),
            ));
        }
        (Some(before), Some(after)) => {
            let changed_line = first_changed_line(before.text, after.text);
            let found = flags.len();
            let (Some(old), Some(new)) = (before.facts, after.facts) else {
                if test_file {
                    flags.push(flag(
                        FlagKind::TestModified,
                        changed_line,
                        "test file changed".to_owned(),
                    ));
                }
                return;
            };
            compare(old, new, test_file, flags, &flag);
            if test_file && new.loose_assertions < old.loose_assertions {
                let detail = format!(
                    "assertions outside test functions went from {} to {}",
                    old.loose_assertions, new.loose_assertions
                );
                flags.push(flag(FlagKind::AssertionRemoved, changed_line, detail));
            }
            // Lines only added to a test file are new tests, imports or fixtures; anything
            // else that changed outside a function (or any change to test configuration)
            // still changes how the tests run.
            let rewritten = is_test_setup(path) || !only_added(before.text, after.text);
            if test_file && flags.len() == found && rewritten {
                flags.push(flag(
                    FlagKind::TestModified,
                    changed_line,
                    "test file changed".to_owned(),
                ));
            }
        }
        _ => {}
    }
}

/// The functions whose edits are flagged: in a test file every test and helper, elsewhere
/// the tests marked as such.
fn watched(facts: Option<&Facts>, test_file: bool) -> impl Iterator<Item = &Definition> {
    facts
        .into_iter()
        .flat_map(|f| &f.definitions)
        .filter(move |d| match d.test {
            TestKind::Marked => true,
            TestKind::ByName | TestKind::No => test_file && d.kind == DefKind::Function,
        })
}

/// Pairs functions by key (in order, for repeated keys) and reports the removed, the edited
/// and the tests that lost assertions. Removing a helper from a test file changes the tests;
/// removing a test deletes it.
fn compare(
    before: &Facts,
    after: &Facts,
    test_file: bool,
    flags: &mut Vec<Flag>,
    flag: &dyn Fn(FlagKind, u32, String) -> Flag,
) {
    let mut remaining: HashMap<&str, Vec<&Definition>> = HashMap::new();
    for def in watched(Some(after), test_file)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        remaining.entry(def.key.as_str()).or_default().push(def);
    }
    let is_test =
        |d: &Definition| d.test == TestKind::Marked || (test_file && d.test == TestKind::ByName);
    for old in watched(Some(before), test_file) {
        let what = if is_test(old) { "test" } else { "helper" };
        let Some(new) = remaining.get_mut(old.key.as_str()).and_then(Vec::pop) else {
            let (kind, verb) = if is_test(old) {
                (FlagKind::TestDeleted, "removed")
            } else {
                (FlagKind::TestModified, "removed from a test file")
            };
            flags.push(flag(kind, old.line, format!("{what} `{}` {verb}", old.key)));
            continue;
        };
        if new.body != old.body {
            flags.push(flag(
                FlagKind::TestModified,
                new.line,
                format!("{what} `{}` changed", new.key),
            ));
        }
        if new.assertions < old.assertions {
            let detail = format!(
                "assertions in {what} `{}` went from {} to {}",
                new.key, old.assertions, new.assertions
            );
            flags.push(flag(FlagKind::AssertionRemoved, new.line, detail));
        }
    }
}

/// Whether every line of `before` is still in `after`, in order.
fn only_added(before: &str, after: &str) -> bool {
    let mut kept = before.lines().peekable();
    for line in after.lines() {
        if kept.peek() == Some(&line) {
            kept.next();
        }
    }
    kept.peek().is_none()
}

/// The first line (1-based, in `after`) where the texts differ.
fn first_changed_line(before: &str, after: &str) -> u32 {
    // Every line before the first differing byte is equal on both sides: they are counted,
    // and only the rest is compared line by line.
    let prefix = before
        .bytes()
        .zip(after.bytes())
        .take_while(|(b, a)| b == a)
        .count();
    // The prefix can end inside a character; a line starts after a newline byte.
    let start = after.as_bytes()[..prefix]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    let (before_rest, after_rest) = (&before[start..], &after[start..]);
    let same = newlines(&after[..start])
        + before_rest
            .lines()
            .zip(after_rest.lines())
            .position(|(b, a)| b != a)
            .unwrap_or_else(|| line_count(before_rest).min(line_count(after_rest)));
    let last = line_count(after).max(1);
    u32::try_from((same + 1).min(last)).unwrap_or(u32::MAX)
}

fn newlines(text: &str) -> usize {
    text.bytes().filter(|&c| c == b'\n').count()
}

/// `text.lines().count()` without splitting the lines out.
fn line_count(text: &str) -> usize {
    newlines(text) + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_changed_line_is_in_the_after_text() {
        assert_eq!(first_changed_line("a\nb\nc", "a\nx\nc"), 2);
        assert_eq!(first_changed_line("a\nb", "a\nb\nc"), 3);
        assert_eq!(first_changed_line("a\nb\nc", "a\nb"), 2);
        assert_eq!(first_changed_line("", "x"), 1);
        // `┗` and `┃` share their first two bytes.
        assert_eq!(first_changed_line("a\n┗\n", "a\n┃\n"), 2);
        assert_eq!(first_changed_line("┗", "┃"), 1);
    }

    /// Against its definition (the first unequal pair of `lines()`), on every pair of short
    /// texts over an alphabet with both line endings.
    #[test]
    fn first_changed_line_matches_a_line_by_line_comparison() {
        fn reference(before: &str, after: &str) -> u32 {
            let same = before
                .lines()
                .zip(after.lines())
                .position(|(b, a)| b != a)
                .unwrap_or_else(|| before.lines().count().min(after.lines().count()));
            let last = after.lines().count().max(1);
            u32::try_from((same + 1).min(last)).unwrap()
        }
        let mut texts = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = texts
                .iter()
                .filter(|t| t.len() == texts.last().map_or(0, String::len))
                .flat_map(|t| ["a", "b", "\n", "\r"].map(|c| format!("{t}{c}")))
                .collect();
            texts.extend(longer);
        }
        for before in &texts {
            for after in &texts {
                assert_eq!(
                    first_changed_line(before, after),
                    reference(before, after),
                    "{before:?} → {after:?}"
                );
            }
        }
    }

    #[test]
    fn only_added_lines() {
        assert!(only_added("a\nb", "x\na\ny\nb\nz"));
        assert!(!only_added("a\nb", "a\nc"));
        assert!(!only_added("a\nb", "b\na"));
        assert!(only_added("", "a"));
    }
}
