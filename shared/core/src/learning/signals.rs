//! Trait evidence accumulated between policy updates.
//!
//! A credit of reward `r` for trait values `x` adds, per trait,
//! `signal += r × (x − current)` and `weight += |r|`, where `current` is the trait's value in
//! the agent's summary ([`DEFAULT_TRAIT_VALUE`] when unset). Traits change only when a policy
//! update is applied, and an applied update clears the signals it used, so `current` is the
//! same for every credit of one window and the sums do not depend on the order of credits.
//! `signal / weight` ∈ [−1, 1] is the reward-weighted direction the trait should move in.
//! At most [`MAX_TRAITS`] trait names are tracked, the alphabetically first
//! (see [`bounded`](super::bounded)).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bounded::entry;

/// Most distinct traits an agent tracks.
pub const MAX_TRAITS: usize = 64;
/// The value of a trait the agent has never updated.
pub const DEFAULT_TRAIT_VALUE: f64 = 0.5;

/// Reward-weighted trait evidence: what one judged reply or action contributes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Credit {
    /// The trait values (in [0, 1]) that were judged.
    pub traits: BTreeMap<String, f64>,
    /// The judgement's reward in [−1, 1].
    pub reward: f64,
}

/// Accumulated evidence for one trait.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TraitSignal {
    /// Σ r × (x − current).
    pub signal: f64,
    /// Σ |r|.
    pub weight: f64,
}

/// Per-trait evidence since the last applied policy update.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TraitSignals {
    /// Trait name → evidence.
    pub traits: BTreeMap<String, TraitSignal>,
}

impl TraitSignals {
    /// The evidence for `name`.
    pub fn get(&self, name: &str) -> Option<&TraitSignal> {
        self.traits.get(name)
    }

    /// Whether there is no evidence.
    pub fn is_empty(&self) -> bool {
        self.traits.is_empty()
    }

    /// Adds `credit`, measured against the `current` trait values.
    pub(crate) fn add(&mut self, credit: &Credit, current: &BTreeMap<String, f64>) {
        let r = credit.reward;
        for (name, x) in &credit.traits {
            let at = current.get(name).copied().unwrap_or(DEFAULT_TRAIT_VALUE);
            if let Some(s) = entry(&mut self.traits, name, MAX_TRAITS) {
                s.signal += r * (x - at);
                s.weight += r.abs();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credits_point_towards_rewarded_values() {
        let mut s = TraitSignals::default();
        let current = [("warmth".to_string(), 0.2)].into();
        let credit = |x: f64, reward| Credit {
            traits: [("warmth".to_string(), x), ("verbosity".to_string(), x)].into(),
            reward,
        };
        s.add(&credit(0.8, 1.0), &current);
        s.add(&credit(0.9, -0.5), &current);
        let warmth = s.get("warmth").unwrap();
        assert!((warmth.signal - (0.6 - 0.35)).abs() < 1e-12);
        assert_eq!(warmth.weight, 1.5);
        let verbosity = s.get("verbosity").unwrap();
        assert!((verbosity.signal - (0.3 - 0.2)).abs() < 1e-12);
        let json = serde_json::to_value(&s).unwrap();
        assert!(json["warmth"]["weight"].is_number());
    }
}
