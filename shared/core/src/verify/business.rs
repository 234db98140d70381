//! `business_metrics`: downstream metrics (conversion, retention, revenue, …) mapped onto [0, 1]
//! by the tenant's configured ranges and combined by the configured weights.
//!
//! Only configured metrics are accepted: a scale cannot be guessed (is revenue 1 000 good?), and
//! silently ignoring an unknown name would hide a typo.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, json};

use super::{InvalidInput, Outcome, VerifyConfig, finite};

const VERSION: &str = "business_metrics@1";
/// Business metrics move for many reasons besides the agent's work.
const CONFIDENCE: f64 = 0.7;

/// Raw metric values by name. Evidence: `{metrics: {name: {raw, normalized, weight}}}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusinessMetrics {
    /// Raw values, normalised by the tenant's `business_metrics` ranges: at least one, and
    /// only metrics the tenant has a range for (by default `conversion` and `retention`).
    #[cfg_attr(feature = "openapi", schema(schema_with = metrics_schema))]
    pub metrics: BTreeMap<String, f64>,
    /// Marks the outcome as a safety violation.
    #[serde(default)]
    pub safety_violation: bool,
}

/// `metrics`: numbers by name, at least one (which names the tenant has ranges for is its
/// configuration's, not the document's).
#[cfg(feature = "openapi")]
fn metrics_schema() -> utoipa::openapi::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "Raw values, normalised by the tenant's `business_metrics` ranges: at least one, \
             and only metrics the tenant has a range for (by default `conversion` and \
             `retention`).",
        ))
        .additional_properties(Some(ObjectBuilder::new().schema_type(Type::Number)))
        .min_properties(Some(1))
        .into()
}

pub(super) fn verify(r: &BusinessMetrics, config: &VerifyConfig) -> Result<Outcome, InvalidInput> {
    if r.metrics.is_empty() {
        return Err(InvalidInput::new("metrics", "give at least one metric"));
    }
    let (mut sum, mut weights) = (0.0, 0.0);
    let mut evidence = Map::new();
    for (name, &raw) in &r.metrics {
        let field = format!("metrics.{name}");
        let raw = finite(&field, raw)?;
        let range = config
            .business_metrics
            .get(name)
            .ok_or_else(|| InvalidInput::new(&field, "no range configured for this tenant"))?;
        let normalized = range.normalize(raw);
        sum += range.weight * normalized;
        weights += range.weight;
        evidence.insert(
            name.clone(),
            json!({ "raw": raw, "normalized": normalized, "weight": range.weight }),
        );
    }
    let evidence = json!({ "metrics": evidence });
    // Only an unvalidated configuration (NaN bounds, zero weights) gets here.
    if !(weights > 0.0 && sum.is_finite()) {
        return Ok(Outcome::error(
            "the tenant's business_metrics configuration is invalid",
            evidence,
            VERSION,
        ));
    }
    Ok(Outcome::ok(
        (sum / weights).clamp(0.0, 1.0),
        CONFIDENCE,
        evidence,
        VERSION,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{MetricRange, Status};
    use super::*;

    fn config() -> VerifyConfig {
        let mut config = VerifyConfig::default();
        config.business_metrics.insert(
            "revenue".to_owned(),
            MetricRange {
                min: 0.0,
                max: 1000.0,
                weight: 2.0,
            },
        );
        config
    }

    fn metrics(pairs: &[(&str, f64)]) -> BusinessMetrics {
        BusinessMetrics {
            metrics: pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            safety_violation: false,
        }
    }

    #[test]
    fn table() {
        let table: &[(&[(&str, f64)], f64)] = &[
            (&[("conversion", 0.25)], 0.25),
            (&[("retention", 1.7)], 1.0),
            (&[("retention", -3.0)], 0.0),
            (&[("revenue", 500.0)], 0.5),
            // (1·0.2 + 2·0.8) / 3
            (&[("conversion", 0.2), ("revenue", 800.0)], 0.6),
        ];
        for (pairs, value) in table {
            let o = verify(&metrics(pairs), &config()).expect("valid");
            assert_eq!(o.status, Status::Ok);
            let got = o.value.expect("value");
            assert!((got - value).abs() < 1e-12, "{pairs:?}: {got}");
            assert_eq!(o.confidence, CONFIDENCE);
        }
    }

    #[test]
    fn evidence_has_raw_and_normalized() {
        let o = verify(&metrics(&[("revenue", 1500.0)]), &config()).expect("valid");
        assert_eq!(
            o.evidence,
            json!({"metrics": {"revenue": {"raw": 1500.0, "normalized": 1.0, "weight": 2.0}}})
        );
    }

    #[test]
    fn invalid_inputs_name_the_metric() {
        let err =
            verify(&metrics(&[("revenue", 1.0)]), &VerifyConfig::default()).expect_err("no range");
        assert_eq!(err.field, "metrics.revenue");
        assert_eq!(err.reason, "no range configured for this tenant");
        let err = verify(&metrics(&[("conversion", f64::INFINITY)]), &config()).expect_err("inf");
        assert_eq!(err.field, "metrics.conversion");
        assert_eq!(
            verify(&metrics(&[]), &config()).expect_err("empty").field,
            "metrics"
        );
    }
}
