//! Selection rules and which agents meet them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Episode;

/// The rules of one dataset build. Defaults are the source design's: agents with ≥ 100
/// positive feedbacks in 30 days and ≥ 50 high-quality interactions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Rules {
    /// Positive episodes (reward above `positive_threshold`, or success without a reward)
    /// an agent needs inside the window.
    pub min_positive_feedback: u32,
    /// Episodes with a reward of at least `high_quality_threshold` an agent needs inside the window.
    pub min_high_quality_interactions: u32,
    /// The window, in days before the build.
    pub window_days: u32,
    /// A reward above this is positive feedback.
    pub positive_threshold: f64,
    /// A reward at or above this is a high-quality interaction.
    pub high_quality_threshold: f64,
    /// Estimated Jaccard similarity (word 5-shingles) at or above which an episode is a near
    /// duplicate of an earlier one and dropped.
    pub near_duplicate_jaccard: f64,
    /// Share of conversations that go to validation.
    pub validation_fraction: f64,
    /// Seed of the split (change it to draw another split).
    pub split_seed: u64,
    /// Smallest GRPO group kept in the manifest's group statistics.
    pub min_group_size: usize,
    /// Smallest reward gap between the chosen and rejected episode of a preference pair.
    pub preference_margin: f64,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            min_positive_feedback: 100,
            min_high_quality_interactions: 50,
            window_days: 30,
            positive_threshold: 0.0,
            high_quality_threshold: 0.8,
            near_duplicate_jaccard: 0.9,
            validation_fraction: 0.1,
            split_seed: 0,
            min_group_size: 2,
            preference_margin: 0.1,
        }
    }
}

/// A rule out of range; `field` names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct RulesError {
    /// The rule at fault.
    pub field: &'static str,
    /// Why.
    pub reason: &'static str,
}

impl Rules {
    /// Checks every rule is in range.
    ///
    /// # Errors
    /// The first rule out of range.
    pub fn validate(&self) -> Result<(), RulesError> {
        let unit = |v: f64| (0.0..=1.0).contains(&v);
        let checks = [
            (self.window_days >= 1, "window_days", "must be at least 1"),
            (
                self.positive_threshold.is_finite(),
                "positive_threshold",
                "must be a finite number",
            ),
            (
                self.high_quality_threshold.is_finite(),
                "high_quality_threshold",
                "must be a finite number",
            ),
            (
                unit(self.near_duplicate_jaccard),
                "near_duplicate_jaccard",
                "must be in [0, 1]",
            ),
            (
                self.validation_fraction.is_finite()
                    && (0.0..1.0).contains(&self.validation_fraction),
                "validation_fraction",
                "must be in [0, 1)",
            ),
            (
                self.min_group_size >= 2,
                "min_group_size",
                "must be at least 2",
            ),
            (
                self.preference_margin.is_finite() && self.preference_margin >= 0.0,
                "preference_margin",
                "must be a finite number ≥ 0",
            ),
        ];
        match checks.into_iter().find(|(ok, _, _)| !ok) {
            Some((_, field, reason)) => Err(RulesError { field, reason }),
            None => Ok(()),
        }
    }

    /// Whether `e` counts as positive feedback.
    pub fn is_positive(&self, e: &Episode) -> bool {
        match e.reward {
            Some(r) => r > self.positive_threshold,
            None => e.success == Some(true),
        }
    }

    fn is_high_quality(&self, e: &Episode) -> bool {
        e.reward.is_some_and(|r| r >= self.high_quality_threshold)
    }
}

/// Where an agent's feedback counts come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountsSource {
    /// The episodes in the turn table, judged by the rules (the scheduled build, and the only
    /// source of manifests written before requested builds existed).
    #[default]
    Episodes,
    /// The learning service's projection, which asked for the dataset
    /// (`dataset.generation.requested`): its own thresholds already passed.
    Learning,
}

/// One agent's counts inside the window, and whether it qualifies. Read back from manifests,
/// where a reader may need only the id and the verdict, the rest defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentStats {
    /// The agent.
    pub agent_id: String,
    /// Episodes inside the window.
    pub episodes: u32,
    /// Positive ones.
    pub positive_feedback: u32,
    /// High-quality ones.
    pub high_quality_interactions: u32,
    /// What the two counts above were taken from.
    pub counts_from: CountsSource,
    /// Whether the agent's episodes go into the dataset.
    pub selected: bool,
}

/// An agent the learning service asked a dataset for, with its projection's feedback counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The agent.
    pub agent_id: String,
    /// Positive feedbacks inside the learning service's window.
    pub positive_count: u32,
    /// Live high-quality interactions.
    pub high_quality: u32,
}

/// Which agents a build takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every agent whose episodes meet the rules' thresholds (the scheduled build).
    Rules,
    /// The agents the learning service named, on its projections' counts: each is taken when
    /// it has episodes inside the window.
    Requested(Vec<Request>),
}

/// Every agent's counts inside the window ending at `now_ms`, by agent id, and whether
/// `selection` takes it.
pub fn select_agents(
    episodes: &[Episode],
    rules: &Rules,
    selection: &Selection,
    now_ms: i64,
) -> Vec<AgentStats> {
    let since = now_ms.saturating_sub(i64::from(rules.window_days) * 86_400_000);
    let mut stats: BTreeMap<&str, AgentStats> = BTreeMap::new();
    for e in episodes
        .iter()
        .filter(|e| e.ingested_at_ms >= since && e.ingested_at_ms <= now_ms)
    {
        let s = stats.entry(&e.agent_id).or_insert_with(|| AgentStats {
            agent_id: e.agent_id.clone(),
            episodes: 0,
            positive_feedback: 0,
            high_quality_interactions: 0,
            counts_from: CountsSource::Episodes,
            selected: false,
        });
        s.episodes += 1;
        s.positive_feedback += u32::from(rules.is_positive(e));
        s.high_quality_interactions += u32::from(rules.is_high_quality(e));
    }
    match selection {
        Selection::Rules => stats
            .into_values()
            .map(|mut s| {
                s.selected = s.positive_feedback >= rules.min_positive_feedback
                    && s.high_quality_interactions >= rules.min_high_quality_interactions;
                s
            })
            .collect(),
        Selection::Requested(requests) => {
            let mut named: BTreeMap<&str, &Request> = BTreeMap::new();
            for r in requests {
                named.insert(&r.agent_id, r);
            }
            named
                .into_values()
                .map(|r| {
                    let episodes = stats.get(r.agent_id.as_str()).map_or(0, |s| s.episodes);
                    AgentStats {
                        agent_id: r.agent_id.clone(),
                        episodes,
                        positive_feedback: r.positive_count,
                        high_quality_interactions: r.high_quality,
                        counts_from: CountsSource::Learning,
                        selected: episodes > 0,
                    }
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::MinHash;

    fn episode(agent: &str, reward: Option<f64>, at: i64) -> Episode {
        Episode {
            trajectory_id: format!("{agent}-{at}"),
            conversation_id: format!("c-{at}"),
            agent_id: agent.into(),
            group_id: None,
            reward,
            success: None,
            ingested_at_ms: at,
            signature: MinHash::of(""),
        }
    }

    #[test]
    fn agents_qualify_on_both_thresholds_inside_the_window() {
        let day = 86_400_000;
        let now = 100 * day;
        let rules = Rules {
            min_positive_feedback: 2,
            min_high_quality_interactions: 1,
            ..Rules::default()
        };
        let episodes = vec![
            episode("a", Some(0.9), now - day),
            episode("a", Some(0.3), now - 2 * day),
            episode("b", Some(0.9), now - day),
            episode("b", Some(0.9), now - 40 * day), // outside the 30-day window
            episode("c", Some(-0.5), now - day),
            episode("c", Some(0.5), now - day),
        ];
        let stats = select_agents(&episodes, &rules, &Selection::Rules, now);
        let selected: Vec<_> = stats
            .iter()
            .filter(|s| s.selected)
            .map(|s| s.agent_id.as_str())
            .collect();
        assert_eq!(selected, ["a"]);
        let b = stats.iter().find(|s| s.agent_id == "b").unwrap();
        assert_eq!(
            (b.episodes, b.positive_feedback, b.high_quality_interactions),
            (1, 1, 1)
        );
    }

    #[test]
    fn requested_agents_take_the_learning_counts_and_need_episodes() {
        let day = 86_400_000;
        let now = 100 * day;
        let episodes = vec![
            episode("a", Some(-0.9), now - day),
            episode("b", Some(0.9), now - day),
            episode("c", Some(0.9), now - 40 * day), // outside the window
        ];
        let request = |agent: &str| Request {
            agent_id: agent.into(),
            positive_count: 120,
            high_quality: 60,
        };
        let requested = Selection::Requested(vec![request("c"), request("a"), request("a")]);
        let stats = select_agents(&episodes, &Rules::default(), &requested, now);
        let summary: Vec<_> = stats
            .iter()
            .map(|s| {
                (
                    s.agent_id.as_str(),
                    s.episodes,
                    s.positive_feedback,
                    s.selected,
                )
            })
            .collect();
        // `a` fails the default rules on its episodes but the learning service's counts
        // stand; `b` was not named; `c` has nothing inside the window.
        assert_eq!(summary, [("a", 1, 120, true), ("c", 0, 120, false)]);
        assert!(
            stats
                .iter()
                .all(|s| s.counts_from == CountsSource::Learning)
        );
    }

    #[test]
    fn rules_parse_partially_and_validate_by_field() {
        let rules: Rules = serde_json::from_str(
            r#"{"min_positive_feedback": 0, "min_high_quality_interactions": 0}"#,
        )
        .unwrap();
        assert_eq!(rules.window_days, 30);
        assert!(rules.validate().is_ok());
        let bad = Rules {
            validation_fraction: 1.0,
            ..Rules::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "validation_fraction");
        assert!(serde_json::from_str::<Rules>(r#"{"min_positive": 1}"#).is_err());
    }
}
