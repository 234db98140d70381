//! What a verifier concludes: a score with its confidence, an abstention or an error, and
//! the input checks every verifier shares.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The result of one verifier, whatever the method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The score in [0, 1]; `None` unless `status` is [`Status::Ok`].
    pub value: Option<f64>,
    /// The verifier's own unnormalised figure, when it has one (a rating of 4, a judge's 7).
    pub raw_value: Option<f64>,
    /// How much the score is worth, in [0, 1]: its weight in [`super::composite`].
    pub confidence: f64,
    /// Whether the verifier produced a score.
    pub status: Status,
    /// Why the verifier abstained or failed.
    pub reason: Option<String>,
    /// A JSON object, method-specific (see the request types).
    pub evidence: Value,
    /// Method, variant and revision, e.g. `test_execution/junit@1`.
    pub verifier_version: String,
    /// The execution did something unsafe: the reward is overridden to the minimum.
    pub safety_violation: bool,
}

/// Whether a verifier produced a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// `value` holds the score.
    Ok,
    /// The evidence does not allow a judgement (no tests ran, an unsure judge, …).
    Abstain,
    /// The verification itself failed (e.g. the analyser crashed).
    Error,
}

impl Outcome {
    pub(crate) fn ok(value: f64, confidence: f64, evidence: Value, version: &str) -> Self {
        Self {
            value: Some(value),
            raw_value: None,
            confidence,
            status: Status::Ok,
            reason: None,
            evidence,
            verifier_version: version.to_owned(),
            safety_violation: false,
        }
    }

    pub(crate) fn abstain(reason: impl Into<String>, evidence: Value, version: &str) -> Self {
        Self {
            value: None,
            raw_value: None,
            confidence: 0.0,
            status: Status::Abstain,
            reason: Some(reason.into()),
            evidence,
            verifier_version: version.to_owned(),
            safety_violation: false,
        }
    }

    /// A verification that failed, with the reason: for callers that assemble verdicts from
    /// the verifiers (an evaluation's parts) and meet input a verifier refuses.
    #[must_use]
    pub fn error(reason: impl Into<String>, evidence: Value, version: &str) -> Self {
        Self {
            status: Status::Error,
            ..Self::abstain(reason, evidence, version)
        }
    }

    pub(super) fn with_raw(self, raw_value: f64) -> Self {
        Self {
            raw_value: Some(raw_value),
            ..self
        }
    }

    pub(super) fn is_well_formed(&self) -> bool {
        let unit = |x: f64| (0.0..=1.0).contains(&x);
        let value_ok = match self.status {
            Status::Ok => self.value.is_some_and(unit),
            Status::Abstain | Status::Error => self.value.is_none(),
        };
        value_ok && unit(self.confidence) && self.raw_value.is_none_or(f64::is_finite)
    }
}

/// A malformed request: the caller's mistake, reported against a field (e.g. `rating`,
/// `metrics.revenue`, `junit_xml`), never turned into an [`Outcome`].
pub type InvalidInput = crate::FieldError;

/// Rejects NaN and infinities.
pub(super) fn finite(field: &str, x: f64) -> Result<f64, InvalidInput> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(InvalidInput::new(field, "must be a finite number"))
    }
}

/// Rejects anything outside [0, 1] (NaN included).
pub(super) fn unit(field: &str, x: f64) -> Result<f64, InvalidInput> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(InvalidInput::new(field, "must be in [0, 1]"))
    }
}
