//! The reply ledger: what is known about one reply, whichever of the reply and its feedback
//! arrives first.
//!
//! A reply's reward is the placeholder until feedback arrives, then the mean of its feedback
//! rewards (the retroactive update). Trait credit is one [`Credit`] per feedback, carrying
//! that feedback's reward, issued as soon as both the reply's traits and the feedback are
//! known: by [`ReplyLedger::record_feedback`] when the reply came first, by
//! [`ReplyLedger::record_reply`] for feedback that came first. Either way each feedback is
//! credited exactly once, so the credits in total do not depend on the order. The placeholder
//! itself is never credited, so nothing has to be taken back when feedback replaces it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::config::LearningConfig;
use super::event::{Event, Reply};
use super::reward::clamp_reward;
use super::signals::Credit;

/// Most feedbacks kept per reply. Beyond it further feedback is ignored (an abuse guard: which
/// feedback is kept then depends on arrival order, unlike everything else here).
pub const MAX_FEEDBACK_PER_REPLY: usize = 1_000;

/// What is known about one reply, keyed by its `message_id` (= feedback `source_id`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplyLedger {
    /// The agent that replied, once the reply is known.
    pub agent_id: Option<String>,
    /// The reply event, once known.
    pub reply_event_id: Option<String>,
    /// The trait values the reply expressed.
    pub traits: BTreeMap<String, f64>,
    /// When the reply was sent.
    pub replied_at_ms: Option<i64>,
    /// Feedback event id → reward.
    pub feedback: BTreeMap<String, f64>,
    /// The placeholder until feedback arrives, then the mean of the feedback rewards.
    pub reward: f64,
}

impl ReplyLedger {
    /// Records the reply and returns one credit per feedback already recorded (none when the
    /// reply expressed no traits). A second reply event for the same message is ignored.
    pub fn record_reply(
        &mut self,
        event: &Event,
        reply: &Reply,
        config: &LearningConfig,
    ) -> Vec<Credit> {
        if self.reply_event_id.is_some() {
            return Vec::new();
        }
        self.agent_id = Some(event.agent_id.clone());
        self.reply_event_id = Some(event.event_id.clone());
        self.traits = reply.traits.clone();
        self.replied_at_ms = Some(event.occurred_at_ms);
        if self.feedback.is_empty() {
            self.reward = clamp_reward(config.rewards.reply_placeholder);
        }
        if self.traits.is_empty() {
            return Vec::new();
        }
        self.feedback
            .values()
            .map(|&reward| self.credit(reward))
            .collect()
    }

    /// Records one feedback reward; the reply's reward becomes the mean of its feedback.
    /// Returns the credit when the reply's traits are already known. Repeated event ids and
    /// feedback beyond [`MAX_FEEDBACK_PER_REPLY`] are ignored.
    pub fn record_feedback(&mut self, event_id: &str, reward: f64) -> Option<Credit> {
        if self.feedback.contains_key(event_id) || self.feedback.len() >= MAX_FEEDBACK_PER_REPLY {
            return None;
        }
        let reward = clamp_reward(reward);
        self.feedback.insert(event_id.to_string(), reward);
        // Summed in key order, so the mean is bit-for-bit the same in any arrival order.
        self.reward = self.feedback.values().sum::<f64>() / self.feedback.len() as f64;
        (self.is_known() && !self.traits.is_empty()).then(|| self.credit(reward))
    }

    /// Whether the reply itself has been recorded.
    pub fn is_known(&self) -> bool {
        self.reply_event_id.is_some()
    }

    fn credit(&self, reward: f64) -> Credit {
        Credit {
            traits: self.traits.clone(),
            reward,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::EventBody;
    use crate::learning::testkit::reply;

    fn record(ledger: &mut ReplyLedger, config: &LearningConfig) -> Vec<Credit> {
        let e = reply("r", 5, "m", &[("warmth", 0.8)]);
        let EventBody::Reply(body) = &e.body else {
            unreachable!()
        };
        ledger.record_reply(&e, body, config)
    }

    fn total(credits: &[Credit]) -> f64 {
        credits.iter().map(|c| c.reward).sum()
    }

    #[test]
    fn feedback_before_and_after_the_reply_agree() {
        let config = LearningConfig {
            rewards: crate::learning::RewardWeights {
                reply_placeholder: 0.1,
                ..Default::default()
            },
            ..LearningConfig::default()
        };

        let mut before = ReplyLedger::default();
        assert!(before.record_feedback("f1", 0.5).is_none());
        assert!(before.record_feedback("f2", -0.2).is_none());
        let mut credits_before = record(&mut before, &config);

        let mut after = ReplyLedger::default();
        assert!(record(&mut after, &config).is_empty());
        assert_eq!(after.reward, 0.1);
        let mut credits_after: Vec<Credit> = ["f2", "f1"]
            .iter()
            .zip([-0.2, 0.5])
            .filter_map(|(id, r)| after.record_feedback(id, r))
            .collect();

        assert_eq!(before, after);
        assert!((after.reward - 0.15).abs() < 1e-12);
        let by_reward = |a: &Credit, b: &Credit| a.reward.total_cmp(&b.reward);
        credits_before.sort_by(by_reward);
        credits_after.sort_by(by_reward);
        assert_eq!(credits_before, credits_after);
        assert!((total(&credits_before) - 0.3).abs() < 1e-12);
        assert_eq!(credits_before[0].traits["warmth"], 0.8);
    }

    #[test]
    fn repeats_are_ignored() {
        let config = LearningConfig::default();
        let mut ledger = ReplyLedger::default();
        record(&mut ledger, &config);
        assert!(ledger.record_feedback("f", 1.0).is_some());
        assert!(ledger.record_feedback("f", -1.0).is_none());
        assert!(record(&mut ledger, &config).is_empty());
        assert_eq!(ledger.reward, 1.0);
    }
}
