//! Complexity assessment: a transparent, additive score over features of the task.
//!
//! Each feature contributes a small integer weight; the sum decides the tier
//! (≤ 0 trivial, 1–3 standard, ≥ 4 complex). The features with a non-zero weight
//! are returned so a caller can see exactly why a task got its budget.

use serde::{Deserialize, Serialize};

/// The three budget tiers of the source design.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Complexity {
    /// A one-line or cosmetic change.
    Trivial,
    /// An ordinary, local change.
    Standard,
    /// A change across many files, or a design-level task.
    Complex,
}

impl Complexity {
    /// Every tier, in increasing order.
    pub const ALL: [Complexity; 3] = [Self::Trivial, Self::Standard, Self::Complex];

    /// The lowercase name used on the wire and in storage keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Trivial => "trivial",
            Self::Standard => "standard",
            Self::Complex => "complex",
        }
    }
}

/// What the agent platform tells us about a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskDescription {
    /// Free-text description of the task.
    pub description: String,
    /// Files the task is expected to touch, when known.
    pub files_touched: Vec<String>,
    /// Tools the agent may use, when known.
    pub tools_available: Vec<String>,
}

/// One feature that contributed to the score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Stable name of the feature, e.g. `files_touched`.
    pub name: String,
    /// What was observed, e.g. `7 files`.
    pub observed: String,
    /// The weight it added to the score (may be negative).
    pub weight: i32,
}

/// The outcome of [`assess`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assessment {
    /// The tier used for the budget.
    pub complexity: Complexity,
    /// The additive score (absent when the caller overrode the tier).
    pub score: Option<i32>,
    /// The features that decided it (non-zero weights only).
    pub features: Vec<Feature>,
    /// True when the caller's `complexity` override was used.
    pub overridden: bool,
}

const COMPLEX_WORDS: &[&str] = &[
    "refactor",
    "migrate",
    "migration",
    "architecture",
    "redesign",
    "concurrency",
    "concurrent",
    "race condition",
    "deadlock",
    "distributed",
    "security",
    "vulnerability",
    "performance",
    "optimize",
    "optimise",
    "rewrite",
    "across",
    "end-to-end",
    "protocol",
];

const TRIVIAL_WORDS: &[&str] = &[
    "typo",
    "rename",
    "spelling",
    "comment",
    "docstring",
    "formatting",
    "bump",
    "readme",
    "log message",
    "whitespace",
];

/// Scores `task` and picks its tier; `override_to` skips the scoring but keeps the evidence.
pub fn assess(task: &TaskDescription, override_to: Option<Complexity>) -> Assessment {
    let features = features_of(task);
    let score: i32 = features.iter().map(|f| f.weight).sum();
    match override_to {
        Some(complexity) => Assessment {
            complexity,
            score: None,
            features,
            overridden: true,
        },
        None => Assessment {
            complexity: tier_for(score),
            score: Some(score),
            features,
            overridden: false,
        },
    }
}

fn tier_for(score: i32) -> Complexity {
    match score {
        i32::MIN..=0 => Complexity::Trivial,
        1..=3 => Complexity::Standard,
        _ => Complexity::Complex,
    }
}

fn features_of(task: &TaskDescription) -> Vec<Feature> {
    let text = task.description.to_lowercase();
    let words = text.split_whitespace().count();
    let mut out = Vec::new();
    let mut push = |name: &str, observed: String, weight: i32| {
        if weight != 0 {
            out.push(Feature {
                name: name.to_owned(),
                observed,
                weight,
            });
        }
    };

    // A short description is a baseline "standard" task; length alone moves it a little.
    let length_weight = match words {
        0..=5 => 0,
        6..=40 => 1,
        41..=120 => 2,
        _ => 3,
    };
    push(
        "description_length",
        format!("{words} words"),
        length_weight,
    );

    let files = task.files_touched.len();
    let files_weight = match files {
        0 | 1 => 0,
        2..=4 => 1,
        5..=14 => 2,
        _ => 3,
    };
    push("files_touched", format!("{files} files"), files_weight);

    let tools = task.tools_available.len();
    push(
        "tools_available",
        format!("{tools} tools"),
        i32::from(tools >= 4),
    );

    let complex: Vec<&str> = COMPLEX_WORDS
        .iter()
        .copied()
        .filter(|w| text.contains(w))
        .collect();
    let complex_weight = i32::try_from(complex.len()).unwrap_or(i32::MAX).min(2) * 2;
    push("complex_keywords", complex.join(", "), complex_weight);

    let trivial: Vec<&str> = TRIVIAL_WORDS
        .iter()
        .copied()
        .filter(|w| text.contains(w))
        .collect();
    push(
        "trivial_keywords",
        trivial.join(", "),
        if trivial.is_empty() { 0 } else { -3 },
    );

    let steps = text
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            l.starts_with("- ")
                || l.starts_with("* ")
                || l.split_once('.')
                    .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    push(
        "listed_steps",
        format!("{steps} steps"),
        i32::from(steps >= 3),
    );

    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(description: &str, files: usize) -> TaskDescription {
        TaskDescription {
            description: description.to_owned(),
            files_touched: (0..files).map(|i| format!("src/f{i}.rs")).collect(),
            tools_available: vec![],
        }
    }

    #[test]
    fn tiers_follow_the_evidence() {
        let cases = [
            ("Fix typo in README", 1, Complexity::Trivial),
            (
                "Fix the off-by-one error in the pagination helper",
                1,
                Complexity::Standard,
            ),
            (
                "Refactor the storage layer to remove the race condition between writers",
                6,
                Complexity::Complex,
            ),
        ];
        for (description, files, expected) in cases {
            let a = assess(&task(description, files), None);
            assert_eq!(a.complexity, expected, "{description}: {a:?}");
            assert!(!a.overridden);
        }
    }

    #[test]
    fn override_keeps_the_features_as_evidence() {
        let a = assess(&task("Fix typo in README", 1), Some(Complexity::Complex));
        assert_eq!(a.complexity, Complexity::Complex);
        assert!(a.overridden);
        assert_eq!(a.score, None);
        assert!(a.features.iter().any(|f| f.name == "trivial_keywords"));
    }

    #[test]
    fn only_deciding_features_are_listed() {
        let a = assess(&task("Fix the bug", 1), None);
        assert!(a.features.iter().all(|f| f.weight != 0));
    }
}
