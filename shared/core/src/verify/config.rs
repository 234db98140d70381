//! Per-tenant verifier configuration: business-metric ranges, the judge confidence threshold,
//! which automated checks guard safety, and the reward thresholds of example types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::InvalidInput;

/// How one tenant's rewards are verified. Missing fields take their defaults; a tenant that
/// sets `business_metrics` replaces the default ranges rather than adding to them.
///
/// Call [`VerifyConfig::validate`] when the configuration is loaded: the verifiers assume a
/// valid one.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerifyConfig {
    /// Range and weight per business metric name. Default: `conversion` and `retention` on
    /// [0, 1]; `revenue` has no default because its scale is the tenant's own.
    pub business_metrics: BTreeMap<String, MetricRange>,
    /// A judge reporting less confidence than this abstains, leaving the reward to the
    /// rule-based verifiers. In [0, 1]; default 0.5.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub judge_min_confidence: f64,
    /// Names (not empty) of automated checks whose failure is a safety violation. Default
    /// `["safety"]`.
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub safety_checks: Vec<String>,
    /// Reward thresholds of positive and negative examples.
    pub examples: ExampleThresholds,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        let unit = MetricRange {
            min: 0.0,
            max: 1.0,
            weight: 1.0,
        };
        Self {
            business_metrics: BTreeMap::from([
                ("conversion".to_owned(), unit),
                ("retention".to_owned(), unit),
            ]),
            judge_min_confidence: 0.5,
            safety_checks: vec!["safety".to_owned()],
            examples: ExampleThresholds::default(),
        }
    }
}

impl VerifyConfig {
    /// Checks every range, weight and threshold.
    ///
    /// # Errors
    /// An [`InvalidInput`] naming the offending field, e.g. `business_metrics.revenue.max`.
    pub fn validate(&self) -> Result<(), InvalidInput> {
        for (name, range) in &self.business_metrics {
            range.validate(&format!("business_metrics.{name}"))?;
        }
        if !(0.0..=1.0).contains(&self.judge_min_confidence) {
            return Err(InvalidInput::new(
                "judge_min_confidence",
                "must be in [0, 1]",
            ));
        }
        if self.safety_checks.iter().any(String::is_empty) {
            return Err(InvalidInput::new(
                "safety_checks",
                "names must not be empty",
            ));
        }
        self.examples.validate()
    }
}

/// The raw range `[min, max]` mapped onto [0, 1], and the metric's weight in the mean.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricRange {
    /// The raw value scored 0 (and anything below it).
    pub min: f64,
    /// The raw value scored 1 (and anything above it): greater than `min`.
    pub max: f64,
    /// Relative weight among the metrics of one request, > 0. Default 1.
    #[serde(default = "one")]
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0))]
    pub weight: f64,
}

fn one() -> f64 {
    1.0
}

impl MetricRange {
    /// Maps `x` linearly onto [0, 1], clamping outside the range.
    #[must_use]
    pub fn normalize(&self, x: f64) -> f64 {
        ((x - self.min) / (self.max - self.min)).clamp(0.0, 1.0)
    }

    fn validate(&self, field: &str) -> Result<(), InvalidInput> {
        if !self.min.is_finite() {
            return Err(InvalidInput::new(format!("{field}.min"), "must be finite"));
        }
        if !self.max.is_finite() || self.max <= self.min {
            return Err(InvalidInput::new(
                format!("{field}.max"),
                "must be finite and greater than min",
            ));
        }
        if !self.weight.is_finite() || self.weight <= 0.0 {
            return Err(InvalidInput::new(
                format!("{field}.weight"),
                "must be finite and positive",
            ));
        }
        Ok(())
    }
}

/// Reward thresholds of example types: `reward >= positive` is a positive example,
/// `reward <= negative` a negative one, anything between neutral.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExampleThresholds {
    /// In (0, 1] and above `negative`; default 0.7.
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0, maximum = 1))]
    pub positive: f64,
    /// In [0, 1) and below `positive`; default 0.3.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, exclusive_maximum = 1))]
    pub negative: f64,
}

impl Default for ExampleThresholds {
    fn default() -> Self {
        Self {
            positive: 0.7,
            negative: 0.3,
        }
    }
}

impl ExampleThresholds {
    fn validate(&self) -> Result<(), InvalidInput> {
        if !(0.0..=1.0).contains(&self.positive) {
            return Err(InvalidInput::new("examples.positive", "must be in [0, 1]"));
        }
        if !(0.0..=1.0).contains(&self.negative) || self.negative >= self.positive {
            return Err(InvalidInput::new(
                "examples.negative",
                "must be in [0, 1] and below examples.positive",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_fill_missing_fields() {
        VerifyConfig::default().validate().expect("valid");
        let config: VerifyConfig =
            serde_json::from_str(r#"{"judge_min_confidence": 0.8}"#).expect("parses");
        assert_eq!(config.judge_min_confidence, 0.8);
        assert_eq!(config.safety_checks, ["safety"]);
        assert!(config.business_metrics.contains_key("retention"));
        assert!(!config.business_metrics.contains_key("revenue"));
        assert_eq!(config.examples, ExampleThresholds::default());
    }

    #[test]
    fn tenant_metrics_replace_the_defaults_and_weight_defaults_to_one() {
        let config: VerifyConfig =
            serde_json::from_str(r#"{"business_metrics": {"revenue": {"min": 0, "max": 1000}}}"#)
                .expect("parses");
        assert_eq!(config.business_metrics.len(), 1);
        assert_eq!(config.business_metrics["revenue"].weight, 1.0);
        assert_eq!(config.business_metrics["revenue"].normalize(250.0), 0.25);
        assert_eq!(config.business_metrics["revenue"].normalize(5000.0), 1.0);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(serde_json::from_str::<VerifyConfig>(r#"{"judge_threshold": 0.5}"#).is_err());
        assert!(
            serde_json::from_str::<VerifyConfig>(
                r#"{"business_metrics": {"x": {"min": 0, "max": 1, "scale": 2}}}"#
            )
            .is_err()
        );
    }

    #[test]
    fn validate_names_the_field() {
        let table: &[(&str, &str)] = &[
            (
                r#"{"business_metrics": {"revenue": {"min": 5, "max": 5}}}"#,
                "business_metrics.revenue.max",
            ),
            (
                r#"{"business_metrics": {"revenue": {"min": 0, "max": 5, "weight": 0}}}"#,
                "business_metrics.revenue.weight",
            ),
            (r#"{"judge_min_confidence": 1.5}"#, "judge_min_confidence"),
            (r#"{"safety_checks": [""]}"#, "safety_checks"),
            (r#"{"examples": {"positive": 1.2}}"#, "examples.positive"),
            (
                r#"{"examples": {"positive": 0.5, "negative": 0.5}}"#,
                "examples.negative",
            ),
        ];
        for (json, field) in table {
            let config: VerifyConfig = serde_json::from_str(json).expect(json);
            assert_eq!(config.validate().expect_err(json).field, *field, "{json}");
        }
    }
}
