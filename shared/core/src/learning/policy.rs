//! Policy updates: turn accumulated evidence into trait changes, an action policy and an
//! exploration rate — or freeze the agent when its users are consistently unhappy.
//!
//! - **Traits.** For each trait whose evidence weight `Σ|r|` is at least `min_signal_weight`:
//!   `to = clamp(from + learning_rate × signal / weight, min, max)`, with `from` the current
//!   value ([`DEFAULT_TRAIT_VALUE`] when unset) and the bounds from the configuration. Because
//!   `|signal / weight| ≤ 1`, one update moves a trait by at most `learning_rate`.
//!   [`AUTONOMY`] may only rise when the agent is trusted; decreases are always allowed.
//! - **Action policy.** `p(a) = exp(avg_reward(a) / T) / Σ_b exp(avg_reward(b) / T)` over the
//!   actions with statistics, with temperature `T = policy.temperature` (0.5: an action
//!   averaging 0.5 more reward than another is chosen e ≈ 2.7 times as often).
//! - **Exploration.** `epsilon = max(min, initial / (1 + n × decay))` after `n` feedbacks.
//! - **Freeze.** When the mean feedback reward was below `freeze_sentiment` on *each* of the
//!   last `freeze_days` UTC days (today included), the plan is a freeze with no changes. A day
//!   without feedback breaks the streak: silence is not evidence of unhappiness. A frozen agent
//!   stays frozen until [`AgentProjection::unfreeze`].

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::config::LearningConfig;
use super::projection::AgentProjection;
use super::signals::{DEFAULT_TRAIT_VALUE, MAX_TRAITS};

/// The trait that only trusted agents may raise.
pub const AUTONOMY: &str = "autonomy";

/// Per-agent settings that gate what an update may do.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct AgentSettings {
    /// The agent may gain autonomy.
    pub trusted: bool,
    /// Plans are computed and recorded but the caller does not apply them.
    pub shadow: bool,
}

/// A policy update, computed by [`plan`] and applied by [`AgentProjection::apply_plan`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Traits that change.
    pub deltas: BTreeMap<String, TraitDelta>,
    /// Traits with evidence that do not change, and why.
    pub skipped: BTreeMap<String, SkipReason>,
    /// The new action policy.
    pub action_policy: BTreeMap<String, f64>,
    /// The new exploration rate.
    pub epsilon: f64,
    /// Set when the agent is (or becomes) frozen: the reason. A frozen plan changes nothing.
    pub frozen: Option<String>,
}

/// One trait's change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TraitDelta {
    /// The current value.
    pub from: f64,
    /// The new value, within the trait's bounds.
    pub to: f64,
    /// `to − from`.
    pub delta: f64,
    /// Whether the bounds cut the step short.
    pub clamped: bool,
}

/// Why a trait with evidence does not change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// Too little evidence yet; it is kept for the next update.
    InsufficientSignal {
        /// Σ |reward| so far.
        weight: f64,
        /// `policy.min_signal_weight`.
        min: f64,
    },
    /// [`AUTONOMY`] would rise but the agent is not trusted.
    NotTrusted,
    /// The step would leave the bounds and the trait is already at the bound.
    AtBound {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
    /// The evidence is balanced: the step is zero.
    Unchanged,
    /// The agent already has [`MAX_TRAITS`] traits.
    TraitLimit,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InsufficientSignal { weight, min } => {
                write!(f, "signal weight {weight} below {min}")
            }
            Self::NotTrusted => f.write_str("agent not trusted"),
            Self::AtBound { min, max } => write!(f, "clamped to [{min}, {max}]"),
            Self::Unchanged => f.write_str("no change"),
            Self::TraitLimit => write!(f, "at most {MAX_TRAITS} traits"),
        }
    }
}

impl Plan {
    /// Whether this plan freezes the agent.
    pub fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }
}

/// Computes the next policy update from the projection (see the module docs for the rules).
pub fn plan(
    p: &AgentProjection,
    settings: &AgentSettings,
    config: &LearningConfig,
    now_ms: i64,
) -> Plan {
    let frozen = if p.frozen {
        Some(p.frozen_reason.clone().unwrap_or_else(|| "frozen".into()))
    } else {
        freeze_reason(p, config, now_ms)
    };
    if frozen.is_some() {
        return Plan {
            deltas: BTreeMap::new(),
            skipped: BTreeMap::new(),
            action_policy: p.summary.action_policy.clone(),
            epsilon: p.summary.epsilon,
            frozen,
        };
    }
    let (deltas, skipped) = trait_steps(p, settings, config);
    Plan {
        deltas,
        skipped,
        action_policy: action_policy(p, config.policy.temperature),
        epsilon: config.policy.epsilon.at(p.feedback.total()),
        frozen: None,
    }
}

fn freeze_reason(p: &AgentProjection, config: &LearningConfig, now_ms: i64) -> Option<String> {
    let (threshold, days) = (config.policy.freeze_sentiment, config.policy.freeze_days);
    let sentiment = p.sentiment(now_ms, days);
    let streak = !sentiment.is_empty()
        && sentiment
            .iter()
            .all(|(_, mean)| mean.is_some_and(|m| m < threshold));
    streak.then(|| format!("daily sentiment below {threshold} on each of the last {days} days"))
}

type Steps = (BTreeMap<String, TraitDelta>, BTreeMap<String, SkipReason>);

fn trait_steps(p: &AgentProjection, settings: &AgentSettings, config: &LearningConfig) -> Steps {
    let policy = &config.policy;
    let (mut deltas, mut skipped) = (BTreeMap::new(), BTreeMap::new());
    let mut room = MAX_TRAITS.saturating_sub(p.summary.traits.len());
    for (name, s) in &p.signals.traits {
        if s.weight <= 0.0 || s.weight < policy.min_signal_weight {
            let (weight, min) = (s.weight, policy.min_signal_weight);
            skipped.insert(name.clone(), SkipReason::InsufficientSignal { weight, min });
            continue;
        }
        let current = p.summary.traits.get(name).copied();
        if current.is_none() && room == 0 {
            skipped.insert(name.clone(), SkipReason::TraitLimit);
            continue;
        }
        let from = current.unwrap_or(DEFAULT_TRAIT_VALUE);
        let bounds = policy.bounds(name);
        let raw = from + policy.learning_rate * s.signal / s.weight;
        // Not `clamp`: an unvalidated config with min > max must not panic.
        let to = raw.max(bounds.min).min(bounds.max);
        let reason = if name == AUTONOMY && !settings.trusted && to > from {
            Some(SkipReason::NotTrusted)
        } else if to == from && raw != to {
            Some(SkipReason::AtBound {
                min: bounds.min,
                max: bounds.max,
            })
        } else if to == from {
            Some(SkipReason::Unchanged)
        } else {
            None
        };
        if let Some(reason) = reason {
            skipped.insert(name.clone(), reason);
            continue;
        }
        room -= usize::from(current.is_none());
        let delta = TraitDelta {
            from,
            to,
            delta: to - from,
            clamped: raw != to,
        };
        deltas.insert(name.clone(), delta);
    }
    (deltas, skipped)
}

/// Softmax of mean action rewards at `temperature`, with the maximum subtracted first so no
/// exponent overflows.
fn action_policy(p: &AgentProjection, temperature: f64) -> BTreeMap<String, f64> {
    let actions = &p.behaviour.actions;
    let best = actions
        .values()
        .map(|a| a.avg_reward)
        .fold(f64::NEG_INFINITY, f64::max);
    let weights: BTreeMap<String, f64> = actions
        .iter()
        .map(|(name, a)| (name.clone(), ((a.avg_reward - best) / temperature).exp()))
        .collect();
    let total: f64 = weights.values().sum();
    weights
        .into_iter()
        .map(|(name, w)| (name, w / total))
        .collect()
}

impl AgentProjection {
    /// Applies a plan. A frozen plan sets `frozen`, `needs_review` and `frozen_reason` and
    /// nothing else. Otherwise the plan's traits, action policy and epsilon are stored, the
    /// evidence it used is cleared (evidence skipped as insufficient is kept to grow),
    /// `feedback_since_update` resets and `last_update_ms` is set; `learning_version` is bumped
    /// only when the summary changed. Returns whether it was bumped.
    pub fn apply_plan(&mut self, plan: &Plan, now_ms: i64) -> bool {
        if let Some(reason) = &plan.frozen {
            self.frozen = true;
            self.needs_review = true;
            self.frozen_reason = Some(reason.clone());
            return false;
        }
        let mut changed = false;
        for (name, d) in &plan.deltas {
            changed |= self.summary.traits.insert(name.clone(), d.to) != Some(d.to);
        }
        changed |= self.summary.action_policy != plan.action_policy;
        changed |= self.summary.epsilon != plan.epsilon;
        self.summary.action_policy = plan.action_policy.clone();
        self.summary.epsilon = plan.epsilon;
        self.signals.traits.retain(|name, _| {
            matches!(
                plan.skipped.get(name),
                Some(SkipReason::InsufficientSignal { .. })
            )
        });
        self.feedback_since_update = 0;
        self.last_update_ms = Some(now_ms);
        self.learning_version += u64::from(changed);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::config::TraitBounds;
    use crate::learning::signals::{Credit, TraitSignal};
    use crate::learning::stats::DAY_MS;
    use crate::learning::testkit::{action_with_traits, feedback_value};
    use proptest::prelude::*;

    const NOW: i64 = 1_800_000_000_000;

    fn with_signal(traits: &[(&str, f64, f64)]) -> AgentProjection {
        let mut p = AgentProjection::default();
        for &(name, signal, weight) in traits {
            p.signals
                .traits
                .insert(name.into(), TraitSignal { signal, weight });
        }
        p
    }

    fn daily(days: &[f64]) -> AgentProjection {
        let config = LearningConfig::default();
        let mut p = AgentProjection::default();
        for (i, &r) in days.iter().enumerate() {
            let at = NOW - (days.len() - 1 - i) as i64 * DAY_MS;
            p.apply(&feedback_value(&format!("f{i}"), at, r), r, &config);
        }
        p
    }

    #[test]
    fn traits_step_towards_the_evidence_within_bounds() {
        let mut config = LearningConfig::default();
        config.policy.trait_bounds.insert(
            "warmth".into(),
            TraitBounds {
                min: 0.0,
                max: 0.55,
            },
        );
        let p = with_signal(&[
            ("warmth", 2.0, 2.0),
            ("verbosity", -1.0, 4.0),
            ("humour", 0.1, 0.5),
        ]);
        let plan = plan(&p, &AgentSettings::default(), &config, NOW);
        assert_eq!(plan.frozen, None);
        let warmth = plan.deltas["warmth"];
        assert_eq!((warmth.from, warmth.to, warmth.clamped), (0.5, 0.55, true));
        let verbosity = plan.deltas["verbosity"];
        assert!((verbosity.to - 0.475).abs() < 1e-12 && !verbosity.clamped);
        assert!(matches!(
            plan.skipped["humour"],
            SkipReason::InsufficientSignal { .. }
        ));
        assert_eq!(
            plan.skipped["humour"].to_string(),
            "signal weight 0.5 below 1"
        );
        assert_eq!(plan.epsilon, 0.2);
    }

    #[test]
    fn autonomy_rises_only_when_trusted() {
        let config = LearningConfig::default();
        let up = with_signal(&[(AUTONOMY, 1.0, 1.0)]);
        let untrusted = plan(&up, &AgentSettings::default(), &config, NOW);
        assert_eq!(untrusted.skipped[AUTONOMY], SkipReason::NotTrusted);
        assert_eq!(untrusted.skipped[AUTONOMY].to_string(), "agent not trusted");
        let trusted = AgentSettings {
            trusted: true,
            shadow: false,
        };
        assert!((plan(&up, &trusted, &config, NOW).deltas[AUTONOMY].to - 0.6).abs() < 1e-12);
        let down = with_signal(&[(AUTONOMY, -1.0, 1.0)]);
        let d = plan(&down, &AgentSettings::default(), &config, NOW).deltas[AUTONOMY];
        assert!((d.delta + 0.1).abs() < 1e-12);
    }

    #[test]
    fn at_bound_is_skipped() {
        let config = LearningConfig::default();
        let mut p = with_signal(&[("warmth", 1.0, 1.0)]);
        p.summary.traits.insert("warmth".into(), 1.0);
        let plan = plan(&p, &AgentSettings::default(), &config, NOW);
        assert_eq!(plan.skipped["warmth"].to_string(), "clamped to [0, 1]");
    }

    #[test]
    fn apply_plan_updates_and_bumps_once() {
        let config = LearningConfig::default();
        let mut p = AgentProjection::default();
        p.apply(
            &action_with_traits("a", NOW, "search", &[("warmth", 1.0)]),
            1.0,
            &config,
        );
        p.credit(&Credit {
            traits: [("humour".to_string(), 1.0)].into(),
            reward: 0.2,
        });
        p.apply(&feedback_value("f", NOW, 0.5), 0.5, &config);
        let first = plan(&p, &AgentSettings::default(), &config, NOW);
        assert_eq!(first.action_policy["search"], 1.0);
        assert!(p.apply_plan(&first, NOW));
        assert_eq!(p.learning_version, 1);
        assert!((p.summary.traits["warmth"] - 0.55).abs() < 1e-12);
        assert_eq!(p.feedback_since_update, 0);
        assert_eq!(p.last_update_ms, Some(NOW));
        // The insufficient humour evidence survives; the used warmth evidence does not.
        assert!(p.signals.get("humour").is_some() && p.signals.get("warmth").is_none());
        let again = plan(&p, &AgentSettings::default(), &config, NOW);
        assert!(!p.apply_plan(&again, NOW + 1));
        assert_eq!(p.learning_version, 1);
    }

    #[test]
    fn action_policy_is_a_softmax() {
        let config = LearningConfig::default();
        let mut p = AgentProjection::default();
        p.apply(&action_with_traits("a", 0, "good", &[]), 0.5, &config);
        p.apply(&action_with_traits("b", 0, "bad", &[]), 0.0, &config);
        let policy = plan(&p, &AgentSettings::default(), &config, 0).action_policy;
        assert!((policy["good"] / policy["bad"] - 1f64.exp()).abs() < 1e-9);
        assert!((policy.values().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn seven_bad_days_freeze() {
        let config = LearningConfig::default();
        let mut p = daily(&[-0.8; 7]);
        let frozen = plan(&p, &AgentSettings::default(), &config, NOW);
        let reason = frozen.frozen.clone().unwrap();
        assert_eq!(
            reason,
            "daily sentiment below -0.5 on each of the last 7 days"
        );
        assert!(frozen.deltas.is_empty());
        assert!(!p.apply_plan(&frozen, NOW));
        assert!(p.frozen && p.needs_review);
        assert_eq!(p.frozen_reason.as_deref(), Some(reason.as_str()));
        // Stays frozen whatever the sentiment later, until an operator lifts it.
        p.apply(&feedback_value("good", NOW, 1.0), 1.0, &config);
        let later = plan(&p, &AgentSettings::default(), &config, NOW + 30 * DAY_MS);
        assert_eq!(later.frozen, Some(reason));
        p.unfreeze();
        assert!(!p.frozen && !p.needs_review && p.frozen_reason.is_none());
        assert!(!plan(&p, &AgentSettings::default(), &config, NOW).is_frozen());
    }

    #[test]
    fn six_bad_days_or_a_good_day_do_not_freeze() {
        let config = LearningConfig::default();
        let settings = AgentSettings::default();
        assert!(!plan(&daily(&[-0.8; 6]), &settings, &config, NOW).is_frozen());
        let broken = daily(&[-0.8, -0.8, -0.8, 0.4, -0.8, -0.8, -0.8]);
        assert!(!plan(&broken, &settings, &config, NOW).is_frozen());
        let exactly_at_threshold = daily(&[-0.5; 7]);
        assert!(!plan(&exactly_at_threshold, &settings, &config, NOW).is_frozen());
        let mut gap = daily(&[-0.8; 8]);
        gap.feedback
            .daily
            .remove(&crate::calendar::utc_date(NOW - 3 * DAY_MS));
        assert!(!plan(&gap, &settings, &config, NOW).is_frozen());
    }

    proptest! {
        #[test]
        fn plans_respect_bounds_and_trust(
            traits in proptest::collection::btree_map(
                prop_oneof![Just(AUTONOMY.to_string()), "[a-d]"],
                (0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64, -5.0..5.0f64, 0.0..5.0f64, any::<bool>()),
                0..6,
            ),
            trusted: bool,
            learning_rate in 0.001..=1.0f64,
        ) {
            let mut config = LearningConfig::default();
            config.policy.learning_rate = learning_rate;
            let mut p = AgentProjection::default();
            for (name, &(a, b, value, signal, weight, has_value)) in &traits {
                let (min, max) = (a.min(b), a.max(b));
                config.policy.trait_bounds.insert(name.clone(), TraitBounds { min, max });
                if has_value {
                    p.summary.traits.insert(name.clone(), value.clamp(min, max));
                }
                // |signal| ≤ weight, as the accumulation guarantees.
                let signal = signal.clamp(-weight, weight);
                p.signals.traits.insert(name.clone(), TraitSignal { signal, weight });
            }
            let settings = AgentSettings { trusted, shadow: false };
            let plan = plan(&p, &settings, &config, NOW);
            for (name, d) in &plan.deltas {
                let b = config.policy.bounds(name);
                prop_assert!(b.min <= d.to && d.to <= b.max, "{name}: {d:?} outside {b:?}");
                prop_assert!((d.delta).abs() <= learning_rate + 1.0);
                if name == AUTONOMY && !trusted {
                    prop_assert!(d.to <= d.from, "untrusted autonomy rose: {d:?}");
                }
            }
            let mut applied = p.clone();
            applied.apply_plan(&plan, NOW);
            for (name, value) in &applied.summary.traits {
                let b = config.policy.bounds(name);
                prop_assert!(b.min <= *value && *value <= b.max);
            }
            if !trusted {
                let before = p.summary.traits.get(AUTONOMY).copied().unwrap_or(DEFAULT_TRAIT_VALUE);
                let after = applied.summary.traits.get(AUTONOMY).copied().unwrap_or(DEFAULT_TRAIT_VALUE);
                prop_assert!(after <= before);
            }
        }
    }
}
