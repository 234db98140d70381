//! Per-tenant learning configuration, with the source design's defaults and validation.
//!
//! Every field has a default, so a stored configuration names only what it changes. The
//! upper limits checked by [`LearningConfig::validate`] keep an agent's projection a bounded
//! JSON document (see [`AgentProjection`](super::AgentProjection)).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::event::{EventError, check_name};
use super::reward::{RewardWeights, in_range};
use super::signals::MAX_TRAITS;

/// Longest supported retention or window, in days (about ten years).
const MAX_DAYS: u32 = 3_650;

/// A tenant's learning configuration.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LearningConfig {
    /// How events become rewards.
    pub rewards: RewardWeights,
    /// Half-life of the decayed feedback statistics and relationship affinity; in
    /// [0.01, 3650]. Default 14.
    #[cfg_attr(feature = "openapi", schema(minimum = 0.01, maximum = 3_650))]
    pub half_life_days: f64,
    /// Feedback with at least this reward is a high-quality interaction; in [−1, 1].
    /// Default 0.8.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub high_quality_min_reward: f64,
    /// Most high-quality interactions kept (the most recent); 1..=200. Default 200.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 200))]
    pub high_quality_cap: usize,
    /// High-quality interactions older than this are dropped; 1..=3650. Default 90.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 3_650))]
    pub high_quality_days: u32,
    /// How many recent actions the behaviour history keeps; 1..=64. Default 50.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 64))]
    pub history_len: usize,
    /// Policy updates.
    pub policy: PolicyConfig,
    /// When to request a training dataset.
    pub dataset: DatasetTrigger,
}

/// The allowed range of one trait.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraitBounds {
    /// Lowest value; in [0, 1].
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub min: f64,
    /// Highest value; in [0, 1] and at least `min` (else the 400 names this field).
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub max: f64,
}

impl Default for TraitBounds {
    fn default() -> Self {
        Self { min: 0.0, max: 1.0 }
    }
}

/// Exploration rate: `max(min, initial / (1 + n × decay))` after `n` feedbacks — a function
/// of the count only, so it does not depend on the order feedback arrived in.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EpsilonConfig {
    /// Rate with no feedback; in [0, 1]. Default 0.2.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub initial: f64,
    /// Floor; in [0, 1] and at most `initial` (else the 400 names this field). Default 0.02.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub min: f64,
    /// Decay per feedback; ≥ 0. Default 0.01 (the floor is reached after 900 feedbacks).
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub decay: f64,
}

impl Default for EpsilonConfig {
    fn default() -> Self {
        Self {
            initial: 0.2,
            min: 0.02,
            decay: 0.01,
        }
    }
}

impl EpsilonConfig {
    /// The exploration rate after `feedbacks` feedback events.
    pub fn at(&self, feedbacks: u64) -> f64 {
        (self.initial / (1.0 + feedbacks as f64 * self.decay)).max(self.min)
    }
}

/// How policy updates move traits and when they stop.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Step size: `delta = learning_rate × signal / weight`; in (0, 1]. Default 0.1.
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0, maximum = 1))]
    pub learning_rate: f64,
    /// Bounds of named traits (at most 64). Default: `autonomy` in [0, 1].
    #[cfg_attr(feature = "openapi", schema(schema_with = trait_bounds_schema))]
    pub trait_bounds: BTreeMap<String, TraitBounds>,
    /// Bounds of traits not named in `trait_bounds`. Default [0, 1].
    pub default_bounds: TraitBounds,
    /// A day whose mean feedback reward is below this counts towards a freeze; in [−1, 1].
    /// Default −0.5.
    #[cfg_attr(feature = "openapi", schema(minimum = -1, maximum = 1))]
    pub freeze_sentiment: f64,
    /// Consecutive such days (each with feedback) that freeze the agent; 1..=60. Default 7.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 60))]
    pub freeze_days: u32,
    /// New feedbacks since the last update that trigger the next one; ≥ 1. Default 20.
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 1, maximum = 18_446_744_073_709_551_615_u64)
    )]
    pub update_threshold: u64,
    /// Traits with less accumulated evidence (Σ |reward|) are left alone; ≥ 0. Default 1.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub min_signal_weight: f64,
    /// Softmax temperature of the action policy; > 0. Default 0.5.
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0))]
    pub temperature: f64,
    /// Exploration rate.
    pub epsilon: EpsilonConfig,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            learning_rate: 0.1,
            trait_bounds: [("autonomy".to_string(), TraitBounds::default())].into(),
            default_bounds: TraitBounds::default(),
            freeze_sentiment: -0.5,
            freeze_days: 7,
            update_threshold: 20,
            min_signal_weight: 1.0,
            temperature: 0.5,
            epsilon: EpsilonConfig::default(),
        }
    }
}

/// `trait_bounds` as [`PolicyConfig::validate`] takes it.
#[cfg(feature = "openapi")]
fn trait_bounds_schema() -> utoipa::openapi::Object {
    super::event::name_map_schema(
        &format!("Trait name → its bounds; at most {MAX_TRAITS}. Default: `autonomy` in [0, 1]."),
        MAX_TRAITS,
        <TraitBounds as utoipa::PartialSchema>::schema(),
    )
}

impl PolicyConfig {
    /// The bounds of `name`.
    pub fn bounds(&self, name: &str) -> TraitBounds {
        self.trait_bounds
            .get(name)
            .copied()
            .unwrap_or(self.default_bounds)
    }
}

/// When an agent has earned a training dataset.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatasetTrigger {
    /// Positive feedbacks needed within `positive_days`; ≥ 1. Default 100.
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 1, maximum = 18_446_744_073_709_551_615_u64)
    )]
    pub min_positive: u64,
    /// The window for `min_positive`; 1..=90. Default 30.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 90))]
    pub positive_days: u32,
    /// Live high-quality interactions needed. Default 50.
    #[cfg_attr(feature = "openapi", schema(maximum = 18_446_744_073_709_551_615_u64))]
    pub min_high_quality: usize,
    /// No new request within this many days of the last; 0..=3650. Default 7.
    #[cfg_attr(feature = "openapi", schema(maximum = 3_650))]
    pub cooldown_days: u32,
}

impl Default for DatasetTrigger {
    fn default() -> Self {
        Self {
            min_positive: 100,
            positive_days: 30,
            min_high_quality: 50,
            cooldown_days: 7,
        }
    }
}

impl Default for LearningConfig {
    fn default() -> Self {
        Self {
            rewards: RewardWeights::default(),
            half_life_days: 14.0,
            high_quality_min_reward: 0.8,
            high_quality_cap: 200,
            high_quality_days: 90,
            history_len: 50,
            policy: PolicyConfig::default(),
            dataset: DatasetTrigger::default(),
        }
    }
}

impl LearningConfig {
    /// Days of daily buckets kept before the newest one: enough for the dataset window and
    /// the freeze rule.
    pub fn daily_days(&self) -> u32 {
        self.dataset.positive_days.max(self.policy.freeze_days)
    }

    /// Checks every field against the range documented on it.
    ///
    /// # Errors
    /// The first field out of range, as a dotted path (`policy.learning_rate`).
    pub fn validate(&self) -> Result<(), EventError> {
        self.rewards.validate().map_err(|e| e.within("rewards"))?;
        in_range(
            "half_life_days",
            self.half_life_days,
            0.01,
            f64::from(MAX_DAYS),
        )?;
        in_range(
            "high_quality_min_reward",
            self.high_quality_min_reward,
            -1.0,
            1.0,
        )?;
        count("high_quality_cap", self.high_quality_cap as u64, 1, 200)?;
        count(
            "high_quality_days",
            self.high_quality_days.into(),
            1,
            MAX_DAYS.into(),
        )?;
        count("history_len", self.history_len as u64, 1, 64)?;
        self.policy.validate().map_err(|e| e.within("policy"))?;
        self.dataset.validate().map_err(|e| e.within("dataset"))
    }
}

impl PolicyConfig {
    fn validate(&self) -> Result<(), EventError> {
        if !(self.learning_rate.is_finite()
            && self.learning_rate > 0.0
            && self.learning_rate <= 1.0)
        {
            return Err(EventError::new("learning_rate", "must be in (0, 1]"));
        }
        if self.trait_bounds.len() > MAX_TRAITS {
            return Err(EventError::new(
                "trait_bounds",
                format!("at most {MAX_TRAITS} traits"),
            ));
        }
        for (name, bounds) in &self.trait_bounds {
            check_name("trait_bounds", name)?;
            bounds
                .validate()
                .map_err(|e| e.within(&format!("trait_bounds.{name}")))?;
        }
        self.default_bounds
            .validate()
            .map_err(|e| e.within("default_bounds"))?;
        in_range("freeze_sentiment", self.freeze_sentiment, -1.0, 1.0)?;
        count("freeze_days", self.freeze_days.into(), 1, 60)?;
        count("update_threshold", self.update_threshold, 1, u64::MAX)?;
        in_range("min_signal_weight", self.min_signal_weight, 0.0, f64::MAX)?;
        if !(self.temperature.is_finite() && self.temperature > 0.0) {
            return Err(EventError::new(
                "temperature",
                "must be a finite number > 0",
            ));
        }
        let e = &self.epsilon;
        in_range("epsilon.initial", e.initial, 0.0, 1.0)?;
        in_range("epsilon.min", e.min, 0.0, e.initial)?;
        in_range("epsilon.decay", e.decay, 0.0, f64::MAX)
    }
}

impl TraitBounds {
    fn validate(&self) -> Result<(), EventError> {
        in_range("min", self.min, 0.0, 1.0)?;
        in_range("max", self.max, self.min, 1.0)
    }
}

impl DatasetTrigger {
    fn validate(&self) -> Result<(), EventError> {
        count("min_positive", self.min_positive, 1, u64::MAX)?;
        count("positive_days", self.positive_days.into(), 1, 90)?;
        count(
            "cooldown_days",
            self.cooldown_days.into(),
            0,
            MAX_DAYS.into(),
        )
    }
}

fn count(field: &str, value: u64, min: u64, max: u64) -> Result<(), EventError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else if max == u64::MAX {
        Err(EventError::new(field, format!("must be >= {min}")))
    } else {
        Err(EventError::new(field, format!("must be in {min}..={max}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_fill_missing_fields() {
        let d = LearningConfig::default();
        assert!(d.validate().is_ok());
        let c: LearningConfig =
            serde_json::from_str(r#"{"policy": {"learning_rate": 0.2}, "dataset": {}}"#).unwrap();
        assert_eq!(c.policy.learning_rate, 0.2);
        assert_eq!(c.policy.freeze_days, 7);
        assert_eq!(c.dataset, DatasetTrigger::default());
        assert_eq!(c.policy.bounds("autonomy"), TraitBounds::default());
        assert_eq!(d.daily_days(), 30);
        assert!(serde_json::from_str::<LearningConfig>(r#"{"half_life": 3}"#).is_err());
    }

    #[test]
    fn errors_carry_dotted_paths() {
        let mut c = LearningConfig::default();
        c.policy.learning_rate = 0.0;
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "policy.learning_rate: must be in (0, 1]"
        );
        let mut c = LearningConfig::default();
        c.rewards.owner_multiplier = -1.0;
        assert_eq!(c.validate().unwrap_err().field, "rewards.owner_multiplier");
        let mut c = LearningConfig::default();
        c.policy
            .trait_bounds
            .insert("warmth".into(), TraitBounds { min: 0.8, max: 0.2 });
        assert_eq!(
            c.validate().unwrap_err().field,
            "policy.trait_bounds.warmth.max"
        );
        let mut c = LearningConfig::default();
        c.policy.epsilon.min = 0.5;
        assert_eq!(c.validate().unwrap_err().field, "policy.epsilon.min");
        let mut c = LearningConfig::default();
        c.dataset.positive_days = 0;
        assert_eq!(c.validate().unwrap_err().field, "dataset.positive_days");
        let c = LearningConfig {
            high_quality_cap: 201,
            ..LearningConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "high_quality_cap");
    }

    #[test]
    fn epsilon_decays_to_its_floor() {
        let e = EpsilonConfig::default();
        assert_eq!(e.at(0), 0.2);
        assert!((e.at(100) - 0.1).abs() < 1e-12);
        assert_eq!(e.at(10_000), 0.02);
    }
}
