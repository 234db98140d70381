//! The evaluation gate: a model version becomes an agent's deployed version only if it is at
//! least as good as the model serving now (the deployed version; before the first promotion,
//! the agent's base model), measured the same way.
//!
//! Offline, both are evaluated on the same validation set (the trainer scores the base model
//! before training and the trained one after, on the dataset's `validation.parquet`): the
//! candidate's validation reward must not fall below the serving model's plus
//! `min_reward_gain`, and its safety-violation rate must not rise by more than
//! `max_safety_rise`. Online, when a canary has served both arms at least
//! `min_live_outcomes` reported outcomes, the candidate's mean reward must not fall by more
//! than `live_reward_tolerance` and its safety-violation and reward-hacking rates must not
//! rise by more than their allowances. Every number compared is in the decision.

use serde::{Deserialize, Serialize};

use crate::FieldError;

/// A model version's scores on one validation set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Evaluation {
    /// SHA-256 of the validation set's file: scores are comparable only on the same set.
    pub validation_set: String,
    /// Expected episode reward of the policy on the set.
    pub reward: f64,
    /// Expected rate of safety violations on the set.
    pub safety_violation_rate: f64,
    /// Trajectories scored.
    pub trajectories: u64,
    /// Groups of at least two candidates (0: the scores do not depend on the policy).
    #[serde(default)]
    pub groups: u64,
}

/// Outcomes reported for one arm of a canary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ArmStats {
    /// Outcomes reported.
    pub outcomes: u64,
    /// Sum of their rewards.
    pub reward_sum: f64,
    /// Outcomes with a safety violation.
    pub safety_violations: u64,
    /// Outcomes flagged as reward hacking.
    pub reward_hacking: u64,
}

impl ArmStats {
    fn rate(&self, count: u64) -> f64 {
        if self.outcomes == 0 {
            0.0
        } else {
            count as f64 / self.outcomes as f64
        }
    }

    /// Share of the outcomes with a safety violation (0 with none).
    pub fn safety_violation_rate(&self) -> f64 {
        self.rate(self.safety_violations)
    }

    /// Share of the outcomes flagged as reward hacking (0 with none).
    pub fn reward_hacking_rate(&self) -> f64 {
        self.rate(self.reward_hacking)
    }

    /// Mean reward of the outcomes (0 with none).
    pub fn reward_mean(&self) -> f64 {
        if self.outcomes == 0 {
            0.0
        } else {
            self.reward_sum / self.outcomes as f64
        }
    }
}

/// Most outcomes a canary arm can be asked for: more would keep a canary running forever.
pub const MAX_LIVE_OUTCOMES: u64 = 1_000_000;

/// How strict the gate is (a tenant setting).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct GateConfig {
    /// The candidate's validation reward must reach the deployed one's plus this.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub min_reward_gain: f64,
    /// Largest allowed rise of the validation safety-violation rate.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub max_safety_rise: f64,
    /// Outcomes each canary arm needs before live traffic is compared.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1_000_000))]
    pub min_live_outcomes: u64,
    /// Largest allowed fall of the live mean reward.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub live_reward_tolerance: f64,
    /// Largest allowed rise of the live reward-hacking rate (and of the live safety rate).
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub max_live_flag_rise: f64,
    /// Refuse a promotion to 100% until the canary has enough live outcomes.
    pub require_live: bool,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            min_reward_gain: 0.0,
            max_safety_rise: 0.0,
            min_live_outcomes: 50,
            live_reward_tolerance: 0.0,
            max_live_flag_rise: 0.0,
            require_live: false,
        }
    }
}

impl GateConfig {
    /// Checks every number.
    ///
    /// # Errors
    /// The first field out of range.
    pub fn validate(&self) -> Result<(), FieldError> {
        for (field, value) in [
            ("min_reward_gain", self.min_reward_gain),
            ("max_safety_rise", self.max_safety_rise),
            ("live_reward_tolerance", self.live_reward_tolerance),
            ("max_live_flag_rise", self.max_live_flag_rise),
        ] {
            if !(value.is_finite() && (-1.0..=1.0).contains(&value)) {
                return Err(FieldError::new(field, "must be between -1 and 1"));
            }
        }
        if !(1..=MAX_LIVE_OUTCOMES).contains(&self.min_live_outcomes) {
            return Err(FieldError::new(
                "min_live_outcomes",
                format!("must be between 1 and {MAX_LIVE_OUTCOMES}"),
            ));
        }
        Ok(())
    }
}

/// One comparison the gate made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Check {
    /// What was compared (`validation_reward`, `live_reward_hacking_rate`, …).
    pub name: String,
    /// The candidate's number.
    pub candidate: f64,
    /// The serving model's number (the deployed version's, or the base model's before any).
    pub deployed: Option<f64>,
    /// The bound the candidate had to meet.
    pub bound: Option<f64>,
    /// Whether it did.
    pub passed: bool,
}

/// What the gate decided, with every number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GateDecision {
    /// Whether the candidate may be promoted.
    pub passed: bool,
    /// Why not, one sentence per failed rule (empty when it passed).
    pub reasons: Vec<String>,
    /// Every comparison made.
    pub checks: Vec<Check>,
}

/// What the gate compares.
#[derive(Debug, Clone, Copy)]
pub struct GateInputs<'a> {
    /// The candidate's validation scores (`None`: it was never evaluated).
    pub candidate: Option<&'a Evaluation>,
    /// The serving model's scores on the candidate's set (`None`: none were measured there).
    pub serving: Option<&'a Evaluation>,
    /// Live outcomes of the candidate's and the deployed version's canary arms.
    pub live: Option<(&'a ArmStats, &'a ArmStats)>,
}

/// Applies `config` to `inputs`.
pub fn evaluate_gate(inputs: GateInputs<'_>, config: &GateConfig) -> GateDecision {
    let mut checks = Vec::new();
    let mut reasons = Vec::new();
    let Some(candidate) = inputs.candidate else {
        return GateDecision {
            passed: false,
            reasons: vec!["the candidate has no validation scores".into()],
            checks,
        };
    };
    let mut check = |name: &str,
                     candidate: f64,
                     deployed: Option<f64>,
                     bound: Option<f64>,
                     higher_is_better: bool| {
        let passed = bound.is_none_or(|b| {
            if higher_is_better {
                candidate >= b
            } else {
                candidate <= b
            }
        });
        if !passed {
            reasons.push(format!(
                "{name} {candidate:.4} is {} the bound {:.4} (deployed: {})",
                if higher_is_better { "below" } else { "above" },
                bound.unwrap_or_default(),
                deployed.map_or("none".into(), |d| format!("{d:.4}")),
            ));
        }
        checks.push(Check {
            name: name.into(),
            candidate,
            deployed,
            bound,
            passed,
        });
    };
    let Some(serving) = inputs
        .serving
        .filter(|s| s.validation_set == candidate.validation_set)
    else {
        return GateDecision {
            passed: false,
            reasons: vec![format!(
                "the serving model has no scores on the candidate's validation set {}",
                candidate.validation_set
            )],
            checks,
        };
    };
    check(
        "validation_reward",
        candidate.reward,
        Some(serving.reward),
        Some(serving.reward + config.min_reward_gain),
        true,
    );
    check(
        "validation_safety_violation_rate",
        candidate.safety_violation_rate,
        Some(serving.safety_violation_rate),
        Some(serving.safety_violation_rate + config.max_safety_rise),
        false,
    );
    let live = inputs
        .live
        .filter(|(c, d)| c.outcomes.min(d.outcomes) >= config.min_live_outcomes);
    match live {
        Some((c, d)) => {
            check(
                "live_reward_mean",
                c.reward_mean(),
                Some(d.reward_mean()),
                Some(d.reward_mean() - config.live_reward_tolerance),
                true,
            );
            for (name, cr, dr) in [
                (
                    "live_safety_violation_rate",
                    c.rate(c.safety_violations),
                    d.rate(d.safety_violations),
                ),
                (
                    "live_reward_hacking_rate",
                    c.rate(c.reward_hacking),
                    d.rate(d.reward_hacking),
                ),
            ] {
                check(
                    name,
                    cr,
                    Some(dr),
                    Some(dr + config.max_live_flag_rise),
                    false,
                );
            }
        }
        None if config.require_live => reasons.push(format!(
            "live traffic is required: each canary arm needs {} outcomes",
            config.min_live_outcomes
        )),
        None => {}
    }
    GateDecision {
        passed: reasons.is_empty(),
        reasons,
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(reward: f64, safety: f64) -> Evaluation {
        Evaluation {
            validation_set: "sha".into(),
            reward,
            safety_violation_rate: safety,
            trajectories: 40,
            groups: 10,
        }
    }

    fn inputs<'a>(c: &'a Evaluation, d: Option<&'a Evaluation>) -> GateInputs<'a> {
        GateInputs {
            candidate: Some(c),
            serving: d,
            live: None,
        }
    }

    #[test]
    fn better_or_equal_passes_worse_fails_with_its_numbers() {
        let config = GateConfig::default();
        let (old, better, worse) = (eval(0.5, 0.1), eval(0.6, 0.1), eval(0.4, 0.1));
        assert!(evaluate_gate(inputs(&better, Some(&old)), &config).passed);
        assert!(evaluate_gate(inputs(&old, Some(&old)), &config).passed);
        let refused = evaluate_gate(inputs(&worse, Some(&old)), &config);
        assert!(!refused.passed);
        assert_eq!(refused.reasons.len(), 1);
        let reward = &refused.checks[0];
        assert_eq!(
            (reward.candidate, reward.deployed, reward.passed),
            (0.4, Some(0.5), false)
        );
        let required_gain = GateConfig {
            min_reward_gain: 0.2,
            ..GateConfig::default()
        };
        assert!(!evaluate_gate(inputs(&better, Some(&old)), &required_gain).passed);
    }

    #[test]
    fn a_rise_in_safety_violations_fails() {
        let decision = evaluate_gate(
            inputs(&eval(0.9, 0.2), Some(&eval(0.5, 0.1))),
            &GateConfig::default(),
        );
        assert!(!decision.passed);
        assert!(decision.reasons[0].starts_with("validation_safety_violation_rate"));
    }

    #[test]
    fn unscored_or_incomparable_versions_are_refused() {
        let c = eval(0.9, 0.0);
        let unscored = GateInputs {
            candidate: None,
            serving: Some(&c),
            live: None,
        };
        assert!(!evaluate_gate(unscored, &GateConfig::default()).passed);
        assert!(!evaluate_gate(inputs(&c, None), &GateConfig::default()).passed);
        let mut d = eval(0.1, 0.0);
        d.validation_set = "other".into();
        let decision = evaluate_gate(inputs(&c, Some(&d)), &GateConfig::default());
        assert!(!decision.passed);
        assert!(decision.reasons[0].contains("no scores on the candidate's validation set"));
    }

    #[test]
    fn live_traffic_is_compared_once_both_arms_have_enough() {
        let (c, d) = (eval(0.6, 0.0), eval(0.5, 0.0));
        let arm = |n: u64, reward: f64, hacking: u64| ArmStats {
            outcomes: n,
            reward_sum: reward * n as f64,
            safety_violations: 0,
            reward_hacking: hacking,
        };
        let config = GateConfig {
            min_live_outcomes: 10,
            ..GateConfig::default()
        };
        let (hacky, clean) = (arm(20, 0.9, 4), arm(20, 0.5, 0));
        let mut i = inputs(&c, Some(&d));
        i.live = Some((&hacky, &clean));
        let decision = evaluate_gate(i, &config);
        assert!(!decision.passed);
        assert!(decision.reasons[0].starts_with("live_reward_hacking_rate 0.2000"));
        let few = arm(5, 0.9, 4);
        i.live = Some((&few, &clean));
        assert!(
            evaluate_gate(i, &config).passed,
            "too few outcomes are not compared"
        );
        let strict = GateConfig {
            require_live: true,
            ..config
        };
        assert!(!evaluate_gate(i, &strict).passed);
    }

    #[test]
    fn config_is_checked() {
        assert!(GateConfig::default().validate().is_ok());
        let bad = GateConfig {
            min_reward_gain: f64::INFINITY,
            ..GateConfig::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "min_reward_gain");
        let zero = GateConfig {
            min_live_outcomes: 0,
            ..GateConfig::default()
        };
        assert_eq!(zero.validate().unwrap_err().field, "min_live_outcomes");
        for (outcomes, ok) in [(MAX_LIVE_OUTCOMES, true), (MAX_LIVE_OUTCOMES + 1, false)] {
            let config = GateConfig {
                min_live_outcomes: outcomes,
                ..GateConfig::default()
            };
            assert_eq!(config.validate().is_ok(), ok, "{outcomes}");
        }
    }
}
