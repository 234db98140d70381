//! The per-(tenant, agent) learning projection: one JSON document updated by each event.
//!
//! [`AgentProjection::apply`] is order-independent (see the [module docs](super)): applying the
//! same set of events in any order gives the same projection, up to float rounding. The
//! document stays bounded — at most `daily_days + 1` daily buckets, `high_quality_cap` (≤ 200)
//! high-quality entries, `history_len` (≤ 64) recent actions, [`MAX_ACTIONS`] action names and
//! [`MAX_TRAITS`] traits — which with ids at their 256-character limit is under 300 KB, and
//! with typical ids a few tens of KB.
//!
//! [`MAX_ACTIONS`]: super::MAX_ACTIONS

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::behaviour::Behaviour;
use super::config::{EpsilonConfig, LearningConfig};
use super::event::{Event, EventBody};
use super::feedback::FeedbackStats;
use super::reward::clamp_reward;
use super::signals::{Credit, MAX_TRAITS, TraitSignals};
use super::stats::DAY_MS;
use crate::calendar::utc_date;

/// What an agent has learned and what it is shown: the output of policy updates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Trait values in [0, 1]; unset traits are [`DEFAULT_TRAIT_VALUE`](super::DEFAULT_TRAIT_VALUE).
    pub traits: BTreeMap<String, f64>,
    /// Action → probability: a softmax of each action's mean reward (see [`plan`](super::plan)).
    pub action_policy: BTreeMap<String, f64>,
    /// Exploration rate: the chance the agent tries something other than its policy suggests.
    pub epsilon: f64,
}

impl Default for Summary {
    fn default() -> Self {
        Self {
            traits: BTreeMap::new(),
            action_policy: BTreeMap::new(),
            epsilon: EpsilonConfig::default().initial,
        }
    }
}

/// Everything learned about one agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentProjection {
    /// Bumped by each policy update that changed the summary.
    pub learning_version: u64,
    /// The current traits and policy.
    pub summary: Summary,
    /// Feedback statistics.
    pub feedback: FeedbackStats,
    /// Actions.
    pub behaviour: Behaviour,
    /// Replies seen.
    pub replies: u64,
    /// Sessions ended.
    pub sessions: u64,
    /// Trait evidence since the last update.
    pub signals: TraitSignals,
    /// Feedback events since the last update.
    pub feedback_since_update: u64,
    /// Learning is stopped until an operator calls [`unfreeze`](Self::unfreeze).
    pub frozen: bool,
    /// An operator should look at this agent.
    pub needs_review: bool,
    /// Why it was frozen.
    pub frozen_reason: Option<String>,
    /// When the last policy update was applied.
    pub last_update_ms: Option<i64>,
    /// When a training dataset was last requested.
    pub dataset_requested_ms: Option<i64>,
    /// The newest time seen (an event's or a prune's): retention windows end here.
    pub horizon_ms: Option<i64>,
}

impl AgentProjection {
    /// Applies one new (deduplicated) event with its reward: feedback statistics, daily
    /// buckets and high-quality list, actions, counts. Reply and feedback trait credit comes
    /// separately through [`credit`](Self::credit) (from a [`ReplyLedger`](super::ReplyLedger));
    /// an action's traits are credited here, with the action's reward. The reward is clamped
    /// to [−1, 1].
    pub fn apply(&mut self, event: &Event, reward: f64, config: &LearningConfig) {
        let reward = clamp_reward(reward);
        let horizon = self.advance(event.occurred_at_ms, config);
        match &event.body {
            EventBody::Feedback(f) => {
                self.feedback.record(event, f, reward, horizon, config);
                self.feedback_since_update += 1;
            }
            EventBody::Reply(_) => self.replies += 1,
            EventBody::SessionEnded(_) => self.sessions += 1,
            EventBody::Action(a) => {
                self.behaviour.record(event, a, reward, config.history_len);
                self.credit(&Credit {
                    traits: a.traits.clone(),
                    reward,
                });
            }
        }
    }

    /// Adds trait evidence (from a [`ReplyLedger`](super::ReplyLedger) or an action).
    pub fn credit(&mut self, credit: &Credit) {
        let credit = Credit {
            traits: credit.traits.clone(),
            reward: clamp_reward(credit.reward),
        };
        self.signals.add(&credit, &self.summary.traits);
        debug_assert!(self.signals.traits.len() <= MAX_TRAITS);
    }

    /// Drops high-quality entries and daily buckets that `now_ms` puts out of their windows,
    /// and decays the decayed statistics to `now_ms`.
    pub fn prune(&mut self, now_ms: i64, config: &LearningConfig) {
        self.advance(now_ms, config);
    }

    /// The mean feedback reward of each of the `days` UTC days ending with `now_ms`'s day,
    /// oldest first; `None` for a day without feedback (or older than the kept buckets).
    pub fn sentiment(&self, now_ms: i64, days: u32) -> Vec<(String, Option<f64>)> {
        (0..i64::from(days))
            .rev()
            .map(|back| {
                let date = utc_date(now_ms - back * DAY_MS);
                let mean = self.feedback.daily.get(&date).and_then(|d| d.mean());
                (date, mean)
            })
            .collect()
    }

    /// Positive feedback in the `days` UTC days ending with `now_ms`'s day.
    pub fn positives_within(&self, now_ms: i64, days: u32) -> u64 {
        let from = utc_date(now_ms - i64::from(days.saturating_sub(1)) * DAY_MS);
        let to = utc_date(now_ms);
        self.feedback
            .daily
            .range(from..=to)
            .map(|(_, d)| d.positive)
            .sum()
    }

    /// Mean feedback reward of the `days` UTC days ending today (the agent's sentiment over
    /// them); `None` without feedback in that time.
    pub fn sentiment_within(&self, now_ms: i64, days: u32) -> Option<f64> {
        let from = utc_date(now_ms - i64::from(days.saturating_sub(1)) * DAY_MS);
        let to = utc_date(now_ms);
        let (sum, count) = self
            .feedback
            .daily
            .range(from..=to)
            .fold((0.0, 0), |(s, n), (_, d)| (s + d.sum, n + d.count));
        (count > 0).then(|| sum / count as f64)
    }

    /// Whether the threshold trigger fires: `feedback_since_update ≥ policy.update_threshold`.
    pub fn update_due(&self, config: &LearningConfig) -> bool {
        self.feedback_since_update >= config.policy.update_threshold
    }

    /// Lifts a freeze (an operator's decision). If the daily sentiment is still below the
    /// threshold on each of the last `freeze_days` days, the next plan freezes again; one day
    /// of better feedback breaks the streak.
    pub fn unfreeze(&mut self) {
        self.frozen = false;
        self.needs_review = false;
        self.frozen_reason = None;
    }

    /// Moves the horizon to include `at_ms` and applies the retention windows; returns it.
    fn advance(&mut self, at_ms: i64, config: &LearningConfig) -> i64 {
        let horizon = self.horizon_ms.map_or(at_ms, |h| h.max(at_ms));
        self.horizon_ms = Some(horizon);
        self.feedback.advance(horizon, config);
        horizon
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::testkit::{self, action_with_traits, feedback_value, run_all};
    use crate::learning::{HighQuality, MAX_ACTIONS};
    use proptest::prelude::*;

    #[test]
    fn counts_and_action_traits() {
        let config = LearningConfig::default();
        let mut p = AgentProjection::default();
        p.apply(
            &testkit::reply("r", 0, "m", &[("warmth", 0.9)]),
            0.0,
            &config,
        );
        p.apply(&testkit::session("s", 0, 100.0, 5), 0.25, &config);
        p.apply(
            &action_with_traits("a", 0, "search", &[("autonomy", 1.0)]),
            0.2,
            &config,
        );
        p.apply(&feedback_value("f", 0, 0.9), 0.9, &config);
        assert_eq!((p.replies, p.sessions, p.feedback_since_update), (1, 1, 1));
        // Reply traits wait for the ledger; action traits are credited at once.
        assert!(p.signals.get("warmth").is_none());
        let autonomy = p.signals.get("autonomy").unwrap();
        assert!((autonomy.signal - 0.1).abs() < 1e-12);
        assert_eq!(p.feedback.high_quality.len(), 1);
        assert!(!p.update_due(&config));
    }

    #[test]
    fn sentiment_within_averages_the_window_only() {
        let config = LearningConfig::default();
        let mut p = AgentProjection::default();
        let now = 30 * DAY_MS;
        for (i, (days_ago, r)) in [(0, -0.8), (3, -0.6), (6, -0.7), (7, 1.0), (20, 1.0)]
            .into_iter()
            .enumerate()
        {
            let at = now - days_ago * DAY_MS;
            p.apply(&feedback_value(&format!("f{i}"), at, r), r, &config);
        }
        let s = p.sentiment_within(now, 7).unwrap();
        assert!((s - (-0.7)).abs() < 1e-12, "{s}");
        assert!(p.sentiment_within(now + 40 * DAY_MS, 7).is_none());
    }

    #[test]
    fn prune_drops_expired_entries() {
        let config = LearningConfig::default();
        let mut p = AgentProjection::default();
        p.apply(&feedback_value("f", 0, 0.9), 0.9, &config);
        p.prune(90 * DAY_MS, &config);
        assert_eq!(p.feedback.high_quality.len(), 1);
        p.prune(90 * DAY_MS + 1, &config);
        assert!(p.feedback.high_quality.is_empty());
        assert!(p.feedback.daily.is_empty());
        assert_eq!(p.feedback.positive_count, 1);
    }

    #[test]
    fn sentiment_lists_each_day() {
        let config = LearningConfig::default();
        let mut p = AgentProjection::default();
        p.apply(&feedback_value("a", 0, -1.0), -1.0, &config);
        p.apply(&feedback_value("b", 10, 0.0), 0.0, &config);
        p.apply(&feedback_value("c", 2 * DAY_MS, 0.5), 0.5, &config);
        let s = p.sentiment(2 * DAY_MS + 5, 3);
        assert_eq!(
            s,
            [
                ("1970-01-01".to_string(), Some(-0.5)),
                ("1970-01-02".to_string(), None),
                ("1970-01-03".to_string(), Some(0.5)),
            ]
        );
        assert_eq!(p.positives_within(2 * DAY_MS, 1), 1);
        assert_eq!(p.positives_within(2 * DAY_MS, 3), 1);
    }

    #[test]
    fn worst_case_document_is_under_300_kb() {
        let config = LearningConfig {
            history_len: 64,
            ..LearningConfig::default()
        };
        let id = |i: usize| format!("{i:0>256}");
        let name = |i: usize| format!("{i:0>64}");
        let mut p = AgentProjection::default();
        let now = 1_800_000_000_000;
        for i in 0..config.high_quality_cap {
            p.feedback.high_quality.push(HighQuality {
                event_id: id(i),
                source_id: Some(id(i)),
                user_id: id(i),
                reward: 0.812_345_678_901_234_5,
                at_ms: now,
            });
        }
        for i in 0..config.daily_days() as usize + 1 {
            p.apply(
                &feedback_value(&id(i), now - i as i64 * DAY_MS, -0.1),
                -0.123_456_789_012_345_6,
                &config,
            );
        }
        for i in 0..MAX_ACTIONS.max(config.history_len) {
            let e = action_with_traits(&id(i), now, &name(i), &[]);
            p.apply(&e, 0.123_456_789_012_345_6, &config);
            p.summary
                .action_policy
                .insert(name(i), 0.123_456_789_012_345_6);
        }
        for i in 0..MAX_TRAITS {
            p.summary.traits.insert(name(i), 0.123_456_789_012_345_6);
            p.signals.add(
                &Credit {
                    traits: [(name(i), 0.987_654_321)].into(),
                    reward: 0.123_456_789_012_345_6,
                },
                &BTreeMap::new(),
            );
        }
        p.frozen_reason = Some("x".repeat(200));
        let bytes = serde_json::to_vec(&p).unwrap().len();
        assert!(bytes < 300_000, "{bytes} bytes");
    }

    proptest! {
        /// The same events in two orders, replies and feedback going through the ledger.
        #[test]
        fn apply_is_order_independent((events, shuffled) in testkit::event_set_and_shuffle()) {
            let config = testkit::small_config();
            let a = run_all(&events, &config);
            let b = run_all(&shuffled, &config);
            testkit::assert_json_close(&a, &b)?;
        }
    }
}
