//! Per-tenant budget configuration, with the source design's defaults and validation.

use serde::{Deserialize, Serialize};

use super::Complexity;

/// What may raise a budget's allocation while the agent runs.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// The agent's confidence fell below the configured threshold.
    LowConfidence,
    /// Some but not all of the work verified.
    PartialSuccess,
    /// A verifier rejected the agent's output.
    VerifierRejection,
}

impl Trigger {
    /// The kebab-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LowConfidence => "low-confidence",
            Self::PartialSuccess => "partial-success",
            Self::VerifierRejection => "verifier-rejection",
        }
    }
}

/// Token amounts of one tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierConfig {
    /// Tokens allocated when the budget is created.
    pub base_tokens: u64,
    /// The tier's ceiling: escalations never allocate past it.
    pub max_total_tokens: u64,
    /// The triggers that may escalate a budget of this tier.
    pub allowed_triggers: Vec<Trigger>,
}

/// What one escalation trigger adds, and how often it may fire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerConfig {
    /// Tokens added to the allocation (capped at the tier's ceiling).
    pub additional_tokens: u64,
    /// Minimum time between two escalations by this trigger on one budget.
    pub cooldown_seconds: u64,
}

/// Adaptive allocation: learn the base allocation from what successful tasks consumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveConfig {
    /// Feature flag; off by default.
    pub enabled: bool,
    /// Share (0–100) of the tenant's tasks, by `task_id`, that get it once enabled: a gradual
    /// rollout on the buckets of model canaries, sticky as the share grows.
    #[serde(default = "all_tasks")]
    pub percent: f64,
    /// The quantile of successful consumption to allocate, in (0, 1].
    pub quantile: f64,
    /// Extra room on top of the quantile, as a fraction (0.1 = +10%).
    pub headroom: f64,
    /// Completed successful budgets needed before the learned value is used.
    pub min_samples: usize,
    /// How many recent successful budgets are remembered per tier.
    pub window: usize,
    /// The learned allocation never goes below this many tokens.
    pub floor_tokens: u64,
}

/// A tenant's complete budget configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetConfig {
    /// The trivial tier.
    pub trivial: TierConfig,
    /// The standard tier.
    pub standard: TierConfig,
    /// The complex tier.
    pub complex: TierConfig,
    /// The low-confidence trigger.
    pub low_confidence: TriggerConfig,
    /// The partial-success trigger.
    pub partial_success: TriggerConfig,
    /// The verifier-rejection trigger.
    pub verifier_rejection: TriggerConfig,
    /// A confidence below this counts as a low-confidence trigger.
    pub low_confidence_threshold: f64,
    /// No tier may allocate more than this, whatever its own ceiling says.
    pub hard_ceiling_tokens: u64,
    /// Escalations allowed per budget.
    pub max_escalations: u32,
    /// Orchestration loops allowed before the task goes to a human.
    pub max_loops: u32,
    /// Adaptive allocation.
    pub adaptive: AdaptiveConfig,
}

/// Orchestration loops (or critic refinements) before a task goes to a human, unless a
/// tenant sets its own.
pub const DEFAULT_MAX_LOOPS: u32 = 3;

/// Whether `completed` loops have used up a limit of `max`: the rule that hands a task to a
/// human, shared by the budget ledger and the critic gates so the two never disagree.
#[must_use]
pub fn loop_limit_reached(completed: u32, max: u32) -> bool {
    completed >= max
}

impl Default for BudgetConfig {
    fn default() -> Self {
        use Trigger::*;
        Self {
            trivial: TierConfig {
                base_tokens: 500,
                max_total_tokens: 1_000,
                allowed_triggers: vec![LowConfidence],
            },
            standard: TierConfig {
                base_tokens: 2_000,
                max_total_tokens: 4_000,
                allowed_triggers: vec![LowConfidence, PartialSuccess],
            },
            complex: TierConfig {
                base_tokens: 8_000,
                max_total_tokens: 16_000,
                allowed_triggers: vec![LowConfidence, PartialSuccess, VerifierRejection],
            },
            low_confidence: TriggerConfig {
                additional_tokens: 500,
                cooldown_seconds: 30,
            },
            partial_success: TriggerConfig {
                additional_tokens: 1_000,
                cooldown_seconds: 60,
            },
            verifier_rejection: TriggerConfig {
                additional_tokens: 2_000,
                cooldown_seconds: 60,
            },
            low_confidence_threshold: 0.5,
            hard_ceiling_tokens: 16_000,
            max_escalations: 3,
            max_loops: DEFAULT_MAX_LOOPS,
            adaptive: AdaptiveConfig::default(),
        }
    }
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            percent: all_tasks(),
            quantile: 0.9,
            headroom: 0.1,
            min_samples: 20,
            window: 200,
            floor_tokens: 100,
        }
    }
}

fn all_tasks() -> f64 {
    100.0
}

impl BudgetConfig {
    /// Whether the task `task_id` of `tenant` gets adaptive allocation: the flag is on and the
    /// task's bucket is inside `adaptive.percent`.
    pub fn adaptive_for(&self, tenant: &str, task_id: &str) -> bool {
        self.adaptive.enabled
            && crate::training::rolled_out(
                self.adaptive.percent,
                crate::training::bucket(tenant, ADAPTIVE_FLAG, task_id),
            )
    }
}

/// The flag's name in its buckets' hash (a model canary hashes the agent id there).
const ADAPTIVE_FLAG: &str = "#flag#budgets.adaptive";

/// A configuration value out of range; `field` is the dotted path of the culprit.
pub type ConfigError = crate::FieldError;

fn check(ok: bool, field: &str, reason: impl Into<String>) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, reason))
    }
}

/// Upper bound on any token figure: keeps arithmetic far from overflow and DynamoDB numbers exact.
const MAX_TOKENS: u64 = 1 << 40;

impl BudgetConfig {
    /// The tier's settings.
    pub fn tier(&self, c: Complexity) -> &TierConfig {
        match c {
            Complexity::Trivial => &self.trivial,
            Complexity::Standard => &self.standard,
            Complexity::Complex => &self.complex,
        }
    }

    /// The trigger's settings.
    pub fn trigger(&self, t: Trigger) -> &TriggerConfig {
        match t {
            Trigger::LowConfidence => &self.low_confidence,
            Trigger::PartialSuccess => &self.partial_success,
            Trigger::VerifierRejection => &self.verifier_rejection,
        }
    }

    /// The ceiling a budget of tier `c` gets: its tier ceiling, capped by the hard ceiling.
    pub fn ceiling(&self, c: Complexity) -> u64 {
        self.tier(c).max_total_tokens.min(self.hard_ceiling_tokens)
    }

    /// Checks every range; the first violation is returned with its field path.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first field out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            (1..=MAX_TOKENS).contains(&self.hard_ceiling_tokens),
            "hard_ceiling_tokens",
            format!("must be between 1 and {MAX_TOKENS}"),
        )?;
        for c in Complexity::ALL {
            let tier = self.tier(c);
            let name = c.as_str();
            check(
                tier.base_tokens >= 1,
                &format!("{name}.base_tokens"),
                "must be at least 1",
            )?;
            check(
                tier.base_tokens <= tier.max_total_tokens,
                &format!("{name}.base_tokens"),
                "must not exceed max_total_tokens",
            )?;
            check(
                tier.max_total_tokens <= self.hard_ceiling_tokens,
                &format!("{name}.max_total_tokens"),
                "must not exceed hard_ceiling_tokens",
            )?;
            let mut seen = tier.allowed_triggers.clone();
            seen.sort_by_key(|t| t.as_str());
            seen.dedup();
            check(
                seen.len() == tier.allowed_triggers.len(),
                &format!("{name}.allowed_triggers"),
                "lists a trigger twice",
            )?;
        }
        for (t, name) in [
            (Trigger::LowConfidence, "low_confidence"),
            (Trigger::PartialSuccess, "partial_success"),
            (Trigger::VerifierRejection, "verifier_rejection"),
        ] {
            let cfg = self.trigger(t);
            check(
                cfg.additional_tokens <= MAX_TOKENS,
                &format!("{name}.additional_tokens"),
                format!("must not exceed {MAX_TOKENS}"),
            )?;
            check(
                cfg.cooldown_seconds <= 86_400,
                &format!("{name}.cooldown_seconds"),
                "must not exceed 86400 (one day)",
            )?;
        }
        check(
            (0.0..=1.0).contains(&self.low_confidence_threshold),
            "low_confidence_threshold",
            "must be between 0 and 1",
        )?;
        check(
            self.max_escalations <= 100,
            "max_escalations",
            "must not exceed 100",
        )?;
        check(
            (1..=100).contains(&self.max_loops),
            "max_loops",
            "must be between 1 and 100",
        )?;
        let a = &self.adaptive;
        check(
            a.percent.is_finite() && (0.0..=100.0).contains(&a.percent),
            "adaptive.percent",
            "must be between 0 and 100",
        )?;
        check(
            a.quantile > 0.0 && a.quantile <= 1.0,
            "adaptive.quantile",
            "must be in (0, 1]",
        )?;
        check(
            (0.0..=10.0).contains(&a.headroom),
            "adaptive.headroom",
            "must be between 0 and 10",
        )?;
        check(
            (1..=10_000).contains(&a.window),
            "adaptive.window",
            "must be between 1 and 10000",
        )?;
        check(
            (1..=a.window).contains(&a.min_samples),
            "adaptive.min_samples",
            "must be between 1 and adaptive.window",
        )?;
        check(
            a.floor_tokens <= MAX_TOKENS,
            "adaptive.floor_tokens",
            format!("must not exceed {MAX_TOKENS}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_allocation_rolls_out_to_a_sticky_share_of_tasks() {
        let mut c = BudgetConfig::default();
        let tasks: Vec<String> = (0..2_000).map(|i| format!("task-{i}")).collect();
        let taken = |c: &BudgetConfig| -> Vec<bool> {
            tasks.iter().map(|t| c.adaptive_for("acme", t)).collect()
        };
        c.adaptive.percent = 30.0;
        assert!(taken(&c).iter().all(|t| !t), "off while the flag is off");
        c.adaptive.enabled = true;
        let at_30 = taken(&c);
        let share = at_30.iter().filter(|t| **t).count() as f64 / tasks.len() as f64;
        assert!((share - 0.3).abs() < 0.04, "{share}");
        c.adaptive.percent = 60.0;
        let at_60 = taken(&c);
        assert!(
            at_30
                .iter()
                .zip(&at_60)
                .all(|(before, after)| !before || *after),
            "a task in the rollout stays in as it grows"
        );
        c.adaptive.percent = 100.0;
        assert!(taken(&c).iter().all(|t| *t));
    }

    #[test]
    fn defaults_are_the_source_design_and_valid() {
        let c = BudgetConfig::default();
        c.validate().unwrap();
        assert_eq!(
            (c.trivial.base_tokens, c.trivial.max_total_tokens),
            (500, 1_000)
        );
        assert_eq!(
            (c.standard.base_tokens, c.standard.max_total_tokens),
            (2_000, 4_000)
        );
        assert_eq!(
            (c.complex.base_tokens, c.complex.max_total_tokens),
            (8_000, 16_000)
        );
        assert_eq!(c.trivial.allowed_triggers, vec![Trigger::LowConfidence]);
        assert_eq!(c.complex.allowed_triggers.len(), 3);
    }

    #[test]
    fn violations_name_their_field() {
        let mut c = BudgetConfig::default();
        c.standard.base_tokens = 5_000;
        assert_eq!(c.validate().unwrap_err().field, "standard.base_tokens");

        let mut c = BudgetConfig::default();
        c.complex.max_total_tokens = 20_000;
        assert_eq!(c.validate().unwrap_err().field, "complex.max_total_tokens");

        let c = BudgetConfig {
            low_confidence_threshold: f64::NAN,
            ..BudgetConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "low_confidence_threshold");

        let mut c = BudgetConfig::default();
        c.adaptive.min_samples = 0;
        assert_eq!(c.validate().unwrap_err().field, "adaptive.min_samples");
        let mut c = BudgetConfig::default();
        c.adaptive.percent = 100.5;
        assert_eq!(c.validate().unwrap_err().field, "adaptive.percent");
    }
}
