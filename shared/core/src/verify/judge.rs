//! `judge`: an LLM judge's score on its own scale, mapped onto [0, 1]. The judge's stated
//! confidence is the outcome's confidence; below the tenant's `judge_min_confidence` the judge
//! abstains and the rule-based verifiers decide the reward on their own.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{InvalidInput, Outcome, VerifyConfig, finite, unit};

/// The verifier of every judge outcome.
pub const VERSION: &str = "judge@1";

/// A judge's verdict. Evidence: `{scale_min, scale_max, model, rationale}`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judge {
    /// The score, within `[scale_min, scale_max]` (by default [0, 1]).
    pub score: f64,
    /// Bottom of the scale; default 0. Below `scale_max`.
    pub scale_min: Option<f64>,
    /// Top of the scale; default 1. Above `scale_min`.
    pub scale_max: Option<f64>,
    /// The judge's confidence in [0, 1].
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1))]
    pub confidence: f64,
    /// Why the judge scored as it did.
    pub rationale: Option<String>,
    /// Which model judged.
    pub model: Option<String>,
    /// Marks the outcome as a safety violation.
    #[serde(default)]
    pub safety_violation: bool,
}

pub(super) fn verify(r: &Judge, config: &VerifyConfig) -> Result<Outcome, InvalidInput> {
    let min = finite("scale_min", r.scale_min.unwrap_or(0.0))?;
    let max = finite("scale_max", r.scale_max.unwrap_or(1.0))?;
    if max <= min {
        return Err(InvalidInput::new(
            "scale_max",
            "must be greater than scale_min",
        ));
    }
    let score = finite("score", r.score)?;
    if !(min..=max).contains(&score) {
        return Err(InvalidInput::new(
            "score",
            format!("must be within [{min}, {max}]"),
        ));
    }
    let confidence = unit("confidence", r.confidence)?;
    let evidence = json!({
        "scale_min": min,
        "scale_max": max,
        "model": r.model,
        "rationale": r.rationale,
    });
    if confidence < config.judge_min_confidence {
        let reason = format!(
            "judge confidence {confidence} is below the tenant's threshold {}; the rule-based verifiers decide",
            config.judge_min_confidence
        );
        return Ok(Outcome::abstain(reason, evidence, VERSION).with_raw(score));
    }
    let value = ((score - min) / (max - min)).clamp(0.0, 1.0);
    Ok(Outcome::ok(value, confidence, evidence, VERSION).with_raw(score))
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    fn judge(score: f64, scale: Option<(f64, f64)>, confidence: f64) -> Judge {
        Judge {
            score,
            scale_min: scale.map(|s| s.0),
            scale_max: scale.map(|s| s.1),
            confidence,
            ..Judge::default()
        }
    }

    #[test]
    fn table() {
        let config = VerifyConfig::default();
        let table = [
            (judge(0.8, None, 0.9), 0.8),
            (judge(7.0, Some((0.0, 10.0)), 0.6), 0.7),
            (judge(3.0, Some((1.0, 5.0)), 0.5), 0.5),
            (judge(-1.0, Some((-1.0, 1.0)), 1.0), 0.0),
        ];
        for (r, value) in table {
            let o = verify(&r, &config).expect("valid");
            assert_eq!(o.status, Status::Ok);
            assert_eq!(o.value, Some(value), "{r:?}");
            assert_eq!(o.raw_value, Some(r.score));
            assert_eq!(o.confidence, r.confidence);
        }
    }

    #[test]
    fn unsure_judges_abstain() {
        let o = verify(&judge(1.0, None, 0.49), &VerifyConfig::default()).expect("valid");
        assert_eq!(
            (o.status, o.value, o.confidence),
            (Status::Abstain, None, 0.0)
        );
        assert!(o.reason.expect("reason").contains("threshold"));
        let strict = VerifyConfig {
            judge_min_confidence: 0.95,
            ..VerifyConfig::default()
        };
        assert_eq!(
            verify(&judge(1.0, None, 0.9), &strict)
                .expect("valid")
                .status,
            Status::Abstain
        );
    }

    #[test]
    fn invalid_inputs_name_the_field() {
        let config = VerifyConfig::default();
        let table = [
            (judge(1.5, None, 0.9), "score"),
            (judge(f64::NAN, None, 0.9), "score"),
            (judge(5.0, Some((10.0, 1.0)), 0.9), "scale_max"),
            (judge(1.0, Some((1.0, 1.0)), 0.9), "scale_max"),
            (judge(0.5, Some((f64::NEG_INFINITY, 1.0)), 0.9), "scale_min"),
            (judge(0.5, None, 1.1), "confidence"),
            (judge(0.5, None, f64::NAN), "confidence"),
        ];
        for (r, field) in table {
            assert_eq!(
                verify(&r, &config).expect_err("invalid").field,
                field,
                "{r:?}"
            );
        }
    }
}
