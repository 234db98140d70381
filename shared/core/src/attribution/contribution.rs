//! Contribution tracking (the source design's "ContributionTracker"): per-event scores, a
//! bounded history, windowed aggregates and rankings.
//!
//! The score of one contribution is
//!
//! ```text
//! score = (quality_after − quality_before) × impact_multiplier / max(effort_ratio, ε),  ε = 1e-6
//! ```
//!
//! so improvements count positively, regressions negatively, impact scales the change, and
//! cheaper contributions (a smaller effort ratio) score higher; the floor ε keeps a zero effort
//! from dividing by zero. The history is a FIFO of at most `capacity` entries (default
//! 100 000): recording into a full history drops the oldest entry. Aggregates cover entries
//! whose timestamp lies in `[from, to)`, regardless of the order they were recorded in.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

/// Default number of contributions kept.
pub const DEFAULT_HISTORY_CAPACITY: usize = 100_000;

/// The floor ε of the effort ratio in the score.
pub const EFFORT_FLOOR: f64 = 1e-6;

/// One contribution of one agent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Contribution {
    /// The agent's index.
    pub agent: usize,
    /// When, in epoch milliseconds.
    pub timestamp_ms: u64,
    /// Quality before the contribution.
    pub quality_before: f64,
    /// Quality after the contribution.
    pub quality_after: f64,
    /// How much the change matters (≥ 0).
    pub impact_multiplier: f64,
    /// Effort spent relative to the expected effort (≥ 0).
    pub effort_ratio: f64,
}

impl Contribution {
    /// (after − before) × impact / max(effort, ε); see the module docs.
    pub fn score(&self) -> f64 {
        (self.quality_after - self.quality_before) * self.impact_multiplier
            / self.effort_ratio.max(EFFORT_FLOOR)
    }
}

/// A contribution as stored, with its score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoredContribution {
    /// The contribution.
    pub contribution: Contribution,
    /// Its score.
    pub score: f64,
}

/// A contribution that cannot be recorded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordError {
    /// A field is NaN or infinite.
    #[error("{field} is not finite")]
    NonFinite {
        /// The field.
        field: &'static str,
    },
    /// A field that must be non-negative is negative.
    #[error("{field} = {value} is negative")]
    Negative {
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// The score overflows (quality values too large).
    #[error("the score of the contribution is not finite")]
    ScoreOverflow,
}

/// A tracker that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrackerError {
    /// The capacity is zero.
    #[error("the history capacity must be at least 1")]
    ZeroCapacity,
}

/// A time window that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    /// `from` is after `to`.
    #[error("window starts at {from_ms} after it ends at {to_ms}")]
    Reversed {
        /// Start.
        from_ms: u64,
        /// End.
        to_ms: u64,
    },
}

/// The half-open interval `[from_ms, to_ms)` of epoch milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    from_ms: u64,
    to_ms: u64,
}

impl Window {
    /// `[from_ms, to_ms)`.
    ///
    /// # Errors
    /// [`WindowError::Reversed`] when `from_ms > to_ms`.
    pub fn new(from_ms: u64, to_ms: u64) -> Result<Self, WindowError> {
        if from_ms > to_ms {
            return Err(WindowError::Reversed { from_ms, to_ms });
        }
        Ok(Self { from_ms, to_ms })
    }

    /// Every timestamp (below `u64::MAX`).
    pub fn all() -> Self {
        Self {
            from_ms: 0,
            to_ms: u64::MAX,
        }
    }

    /// Whether `from_ms ≤ t < to_ms`.
    pub fn contains(&self, t: u64) -> bool {
        self.from_ms <= t && t < self.to_ms
    }
}

/// One agent's contributions within a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AgentAggregate {
    /// The agent.
    pub agent: usize,
    /// Sum of scores.
    pub sum: f64,
    /// Number of contributions.
    pub count: usize,
    /// Mean score.
    pub mean: f64,
}

/// What a ranking orders by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RankBy {
    /// Total score in the window.
    #[default]
    Sum,
    /// Mean score per contribution in the window.
    Mean,
}

/// A bounded history of scored contributions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContributionTracker {
    capacity: usize,
    history: VecDeque<ScoredContribution>,
}

impl Default for ContributionTracker {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_HISTORY_CAPACITY,
            history: VecDeque::new(),
        }
    }
}

impl ContributionTracker {
    /// An empty tracker keeping at most `capacity` contributions.
    ///
    /// # Errors
    /// [`TrackerError::ZeroCapacity`].
    pub fn new(capacity: usize) -> Result<Self, TrackerError> {
        if capacity == 0 {
            return Err(TrackerError::ZeroCapacity);
        }
        Ok(Self {
            capacity,
            history: VecDeque::new(),
        })
    }

    /// Scores and records `contribution`, dropping the oldest entry when full; returns the score.
    ///
    /// # Errors
    /// [`RecordError`] for a non-finite field, a negative impact or effort, or a score that
    /// overflows; nothing is recorded then.
    pub fn record(&mut self, contribution: Contribution) -> Result<f64, RecordError> {
        let c = &contribution;
        for (field, value) in [
            ("quality_before", c.quality_before),
            ("quality_after", c.quality_after),
            ("impact_multiplier", c.impact_multiplier),
            ("effort_ratio", c.effort_ratio),
        ] {
            if !value.is_finite() {
                return Err(RecordError::NonFinite { field });
            }
        }
        for (field, value) in [
            ("impact_multiplier", c.impact_multiplier),
            ("effort_ratio", c.effort_ratio),
        ] {
            if value < 0.0 {
                return Err(RecordError::Negative { field, value });
            }
        }
        let score = c.score();
        if !score.is_finite() {
            return Err(RecordError::ScoreOverflow);
        }
        if self.history.len() == self.capacity {
            self.history.pop_front();
        }
        self.history.push_back(ScoredContribution {
            contribution,
            score,
        });
        Ok(score)
    }

    /// Contributions kept, oldest first.
    pub fn history(&self) -> impl ExactSizeIterator<Item = &ScoredContribution> {
        self.history.iter()
    }

    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Per-agent sum, count and mean of the scores in `window`, by increasing agent id; agents
    /// without contributions in the window are absent.
    pub fn aggregate(&self, window: Window) -> Vec<AgentAggregate> {
        let mut by_agent: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
        for entry in &self.history {
            if window.contains(entry.contribution.timestamp_ms) {
                let slot = by_agent.entry(entry.contribution.agent).or_default();
                slot.0 += entry.score;
                slot.1 += 1;
            }
        }
        by_agent
            .into_iter()
            .map(|(agent, (sum, count))| AgentAggregate {
                agent,
                sum,
                count,
                mean: sum / count as f64,
            })
            .collect()
    }

    /// The aggregates of `window`, best first by `by`; ties are broken by increasing agent id.
    pub fn ranking(&self, window: Window, by: RankBy) -> Vec<AgentAggregate> {
        let key = |a: &AgentAggregate| match by {
            RankBy::Sum => a.sum,
            RankBy::Mean => a.mean,
        };
        let mut ranked = self.aggregate(window);
        ranked.sort_by(|a, b| key(b).total_cmp(&key(a)).then(a.agent.cmp(&b.agent)));
        ranked
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn contribution(agent: usize, timestamp_ms: u64, gain: f64) -> Contribution {
        Contribution {
            agent,
            timestamp_ms,
            quality_before: 0.5,
            quality_after: 0.5 + gain,
            impact_multiplier: 1.0,
            effort_ratio: 1.0,
        }
    }

    #[test]
    fn scores_follow_the_formula() {
        let c = Contribution {
            agent: 0,
            timestamp_ms: 0,
            quality_before: 0.25,
            quality_after: 0.75,
            impact_multiplier: 3.0,
            effort_ratio: 0.5,
        };
        assert_eq!(c.score(), 3.0);
        assert_eq!(
            Contribution {
                effort_ratio: 0.0,
                ..c
            }
            .score(),
            1.5e6
        );
        assert_eq!(
            Contribution {
                quality_after: 0.0,
                ..c
            }
            .score(),
            -1.5
        );
    }

    #[test]
    fn invalid_contributions_are_refused() {
        let mut t = ContributionTracker::default();
        let c = contribution(0, 0, 0.1);
        assert_eq!(
            t.record(Contribution {
                quality_after: f64::NAN,
                ..c
            }),
            Err(RecordError::NonFinite {
                field: "quality_after"
            })
        );
        assert_eq!(
            t.record(Contribution {
                effort_ratio: -1.0,
                ..c
            }),
            Err(RecordError::Negative {
                field: "effort_ratio",
                value: -1.0
            })
        );
        assert_eq!(
            t.record(Contribution {
                quality_after: f64::MAX,
                quality_before: -f64::MAX,
                ..c
            }),
            Err(RecordError::ScoreOverflow)
        );
        assert_eq!(t.history().len(), 0);
        assert_eq!(ContributionTracker::new(0), Err(TrackerError::ZeroCapacity));
        assert_eq!(
            Window::new(5, 4),
            Err(WindowError::Reversed {
                from_ms: 5,
                to_ms: 4
            })
        );
    }

    #[test]
    fn windows_are_half_open_and_rankings_break_ties_by_id() {
        let mut t = ContributionTracker::default();
        t.record(contribution(2, 10, 0.25)).unwrap();
        t.record(contribution(1, 20, 0.25)).unwrap();
        t.record(contribution(1, 30, 0.5)).unwrap();
        t.record(contribution(0, 5, 1.0)).unwrap();

        let w = Window::new(10, 30).unwrap();
        let agg = t.aggregate(w);
        assert_eq!(
            agg,
            vec![
                AgentAggregate {
                    agent: 1,
                    sum: 0.25,
                    count: 1,
                    mean: 0.25
                },
                AgentAggregate {
                    agent: 2,
                    sum: 0.25,
                    count: 1,
                    mean: 0.25
                },
            ]
        );
        let ids = |r: Vec<AgentAggregate>| r.iter().map(|a| a.agent).collect::<Vec<_>>();
        assert_eq!(ids(t.ranking(w, RankBy::Sum)), vec![1, 2]);
        assert_eq!(ids(t.ranking(Window::all(), RankBy::Sum)), vec![0, 1, 2]);
        assert_eq!(ids(t.ranking(Window::all(), RankBy::Mean)), vec![0, 1, 2]);
        assert!(t.aggregate(Window::new(7, 7).unwrap()).is_empty());
    }

    #[test]
    fn a_full_history_drops_the_oldest() {
        let mut t = ContributionTracker::new(3).unwrap();
        for k in 0..5 {
            t.record(contribution(k, k as u64, 0.1)).unwrap();
        }
        let agents: Vec<usize> = t.history().map(|e| e.contribution.agent).collect();
        assert_eq!(agents, vec![2, 3, 4]);
        assert_eq!(t.capacity(), 3);
        assert_eq!(ContributionTracker::default().capacity(), 100_000);
    }

    proptest! {
        #[test]
        fn aggregates_partition_the_window(
            entries in prop::collection::vec((0usize..5, 0u64..100, -1.0f64..1.0), 0..60),
            from in 0u64..100,
            len in 0u64..100,
        ) {
            let mut t = ContributionTracker::default();
            for (agent, ts, gain) in &entries {
                t.record(contribution(*agent, *ts, *gain)).unwrap();
            }
            let w = Window::new(from, from + len).unwrap();
            let agg = t.aggregate(w);
            let in_window = entries.iter().filter(|e| w.contains(e.1)).count();
            prop_assert_eq!(agg.iter().map(|a| a.count).sum::<usize>(), in_window);
            let ranked = t.ranking(w, RankBy::Sum);
            prop_assert_eq!(ranked.len(), agg.len());
            for pair in ranked.windows(2) {
                prop_assert!(pair[0].sum > pair[1].sum
                    || (pair[0].sum == pair[1].sum && pair[0].agent < pair[1].agent));
            }
        }
    }
}
