//! The per-(tenant, agent, user) relationship: how familiar the user is and how they feel.
//!
//! `strength = familiarity × affinity`, in [0, 1]:
//! - familiarity `= 1 − e^(−interactions / 10)`: every event counts, saturating around 30;
//! - affinity `= (decayed mean reward + 1) / 2`: the half-life-decayed mean of the rewards of
//!   feedback, session and action events (0.5 with none). Replies count as interactions but
//!   their placeholder reward is not a judgement, so it is not averaged in.
//!
//! The decayed mean is a ratio of two sums decayed alike, so it does not depend on the anchor,
//! and the whole relationship is the same in any order.

use serde::{Deserialize, Serialize};

use super::config::LearningConfig;
use super::event::{Event, EventBody};
use super::reward::clamp_reward;
use super::stats::{advance, weight_at};

/// Interactions at which familiarity reaches `1 − 1/e`.
const FAMILIARITY_SCALE: f64 = 10.0;

/// An agent's relationship with one user.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Relationship {
    /// Events between them.
    pub interactions: u64,
    /// Decayed Σ reward of judged events, relative to `anchor_ms`.
    pub decayed_reward: f64,
    /// Decayed count of judged events, relative to `anchor_ms`.
    pub decayed_weight: f64,
    /// The time the decayed sums are relative to (the newest judged event).
    pub anchor_ms: Option<i64>,
    /// The newest event's time.
    pub last_at_ms: i64,
    /// familiarity × affinity, in [0, 1].
    pub strength: f64,
}

impl Relationship {
    /// Counts one (new, deduplicated) event and its reward, and recomputes the strength.
    pub fn apply(&mut self, event: &Event, reward: f64, config: &LearningConfig) {
        let at = event.occurred_at_ms;
        self.interactions += 1;
        self.last_at_ms = if self.interactions == 1 {
            at
        } else {
            self.last_at_ms.max(at)
        };
        if !matches!(event.body, EventBody::Reply(_)) {
            let factor = advance(&mut self.anchor_ms, at, config.half_life_days);
            self.decayed_reward *= factor;
            self.decayed_weight *= factor;
            let anchor = self.anchor_ms.unwrap_or(at);
            let w = weight_at(anchor, at, config.half_life_days);
            self.decayed_reward += w * clamp_reward(reward);
            self.decayed_weight += w;
        }
        self.strength = self.familiarity() * self.affinity();
    }

    /// `1 − e^(−interactions / 10)`.
    pub fn familiarity(&self) -> f64 {
        1.0 - (-(self.interactions as f64) / FAMILIARITY_SCALE).exp()
    }

    /// `(decayed mean reward + 1) / 2`.
    pub fn affinity(&self) -> f64 {
        let mean = if self.decayed_weight > 0.0 {
            (self.decayed_reward / self.decayed_weight).clamp(-1.0, 1.0)
        } else {
            0.0
        };
        (mean + 1.0) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::testkit::{feedback_value, reply};

    #[test]
    fn strength_grows_with_familiarity_and_affinity() {
        let config = LearningConfig::default();
        let mut r = Relationship::default();
        r.apply(&reply("r", 5, "m", &[]), 0.0, &config);
        assert_eq!(r.affinity(), 0.5);
        r.apply(&feedback_value("f", 3, 1.0), 1.0, &config);
        let want = (1.0 - (-0.2f64).exp()) * 1.0;
        assert!((r.strength - want).abs() < 1e-12);
        assert_eq!(r.last_at_ms, 5);
        for i in 0..50 {
            r.apply(&feedback_value(&format!("n{i}"), 10, -1.0), -1.0, &config);
        }
        assert!(r.strength < 0.05 && r.strength >= 0.0);
    }

    #[test]
    fn order_does_not_matter() {
        let config = LearningConfig::default();
        let events = [
            (feedback_value("a", 0, 1.0), 1.0),
            (feedback_value("b", 20 * 86_400_000, -0.5), -0.5),
            (reply("c", 40 * 86_400_000, "m", &[]), 0.0),
        ];
        let run = |order: &[usize]| {
            let mut r = Relationship::default();
            for &i in order {
                r.apply(&events[i].0, events[i].1, &config);
            }
            r
        };
        let (a, b) = (run(&[0, 1, 2]), run(&[2, 1, 0]));
        assert!((a.strength - b.strength).abs() < 1e-12);
        assert!((a.decayed_weight - b.decayed_weight).abs() < 1e-12);
        assert_eq!((a.last_at_ms, a.anchor_ms), (b.last_at_ms, b.anchor_ms));
    }
}
