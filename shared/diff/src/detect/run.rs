//! Running the detectors over a change, and the snapshot-wide lookups they share: test
//! literals, references to names, and the baseline a file's additions are measured against.

use std::cell::OnceCell;
use std::collections::HashMap;

use super::facts::Facts;
use super::model::{FileChange, Findings};
use super::paths::is_test_path;
use super::text::{contains_word, is_word_char};
use super::{definitions, marks, testfiles};

/// Runs every detector; the result is ordered by file, line and kind.
pub fn detect(changes: &[FileChange<'_>]) -> Findings {
    let snapshot = Snapshot::new(changes);
    let mut found = Findings::default();
    for change in changes {
        if let (Some(before), Some(after)) = (change.before, change.after)
            && before.text == after.text
        {
            continue;
        }
        testfiles::check(change, &snapshot, &mut found.flags);
        let baseline = snapshot.baseline(change);
        marks::check(change, &baseline, &snapshot, &mut found);
        let unreferenced = definitions::unreferenced_file(change, &snapshot);
        definitions::check(
            change,
            &baseline,
            &snapshot,
            unreferenced.is_none(),
            &mut found,
        );
        found.scaffolding.extend(unreferenced);
    }
    found.flags.sort_by(|a, b| {
        (&a.file, a.line, a.kind, &a.detail).cmp(&(&b.file, b.line, b.kind, &b.detail))
    });
    found.scaffolding.sort_by(|a, b| {
        (&a.file, a.line, a.kind, &a.detail).cmp(&(&b.file, b.line, b.kind, &b.detail))
    });
    found
}

/// Lookups over both snapshots, built once per [`detect`] call.
pub(crate) struct Snapshot<'c, 'a> {
    pub changes: &'c [FileChange<'a>],
    /// Facts of files that exist only before: the baseline of new files, so that code moved
    /// to a new file does not count as added.
    deleted: Vec<&'a Facts>,
    /// Each literal used by test code, with the first test file that uses it.
    test_literals: HashMap<&'a str, &'a str>,
    /// Test files without facts (no grammar): searched as text.
    unparsed_tests: Vec<(&'a str, &'a str)>,
    /// Definition sites in the after snapshot, by name.
    definitions: HashMap<&'a str, u32>,
    /// Word counts of after files without facts, built when first needed.
    words: OnceCell<HashMap<&'a str, u32>>,
}

impl<'c, 'a> Snapshot<'c, 'a> {
    fn new(changes: &'c [FileChange<'a>]) -> Self {
        let mut snapshot = Snapshot {
            changes,
            deleted: Vec::new(),
            test_literals: HashMap::new(),
            unparsed_tests: Vec::new(),
            definitions: HashMap::new(),
            words: OnceCell::new(),
        };
        for change in changes {
            let test_file = is_test_path(change.path);
            for side in [change.before, change.after].into_iter().flatten() {
                match side.facts {
                    Some(facts) => {
                        let literals = if test_file {
                            &facts.literals
                        } else {
                            &facts.test_literals
                        };
                        for literal in literals {
                            snapshot
                                .test_literals
                                .entry(literal.as_str())
                                .or_insert(change.path);
                        }
                    }
                    None if test_file => snapshot.unparsed_tests.push((change.path, side.text)),
                    None => {}
                }
            }
            match (change.before, change.after) {
                (Some(before), None) => snapshot.deleted.extend(before.facts),
                (_, Some(after)) => {
                    for definition in after.facts.iter().flat_map(|f| &f.definitions) {
                        *snapshot
                            .definitions
                            .entry(definition.name.as_str())
                            .or_default() += 1;
                    }
                }
                (None, None) => {}
            }
        }
        snapshot
    }

    /// What a file's additions are measured against: its before side, or for a new file
    /// everything deleted.
    pub fn baseline(&self, change: &FileChange<'a>) -> Vec<&'a Facts> {
        match change.before {
            Some(before) => before.facts.into_iter().collect(),
            None => self.deleted.clone(),
        }
    }

    /// A test file that uses `literal`, if any does.
    pub fn test_file_with(&self, literal: &str) -> Option<&'a str> {
        self.test_literals.get(literal).copied().or_else(|| {
            self.unparsed_tests
                .iter()
                .find(|(_, text)| contains_word(text, literal))
                .map(|(path, _)| *path)
        })
    }

    /// Mentions of `name` in the after snapshot other than its definitions.
    pub fn references(&self, name: &str) -> u32 {
        let words = self.words.get_or_init(|| {
            let mut words = HashMap::new();
            for after in self
                .changes
                .iter()
                .filter_map(|c| c.after)
                .filter(|a| a.facts.is_none())
            {
                for word in after
                    .text
                    .split(|c: char| !is_word_char(c))
                    .filter(|w| !w.is_empty())
                {
                    *words.entry(word).or_default() += 1;
                }
            }
            words
        });
        let parsed: u32 = self
            .changes
            .iter()
            .filter_map(|c| c.after?.facts)
            .map(|f| f.identifiers.get(name).copied().unwrap_or(0))
            .sum();
        let mentions = parsed + words.get(name).copied().unwrap_or(0);
        mentions.saturating_sub(self.definitions.get(name).copied().unwrap_or(0))
    }

    /// Whether any after file other than `path` mentions `word` as a whole word.
    pub fn mentioned_elsewhere(&self, path: &str, word: &str) -> bool {
        self.changes
            .iter()
            .filter(|c| c.path != path)
            .filter_map(|c| c.after)
            .any(|after| contains_word(after.text, word))
    }

    /// The new path of a deleted file whose content reappears unchanged under another name.
    pub fn renamed_to(&self, path: &str, text: &str) -> Option<&'a str> {
        self.changes
            .iter()
            .find(|c| {
                c.path != path && c.before.is_none() && c.after.is_some_and(|a| a.text == text)
            })
            .map(|c| c.path)
    }
}
