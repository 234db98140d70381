//! Reward verification for RLVR: each method turns one piece of evidence about an execution
//! into an [`Outcome`]; [`composite`] combines a task's outcomes into its reward and
//! [`classify`] turns that reward into an example type.
//!
//! Errors and abstentions are never a score of 0: a verifier that cannot judge says so
//! ([`Status::Abstain`], [`Status::Error`], with a reason) and is left out of the reward.
//! Malformed requests are not outcomes either but an [`InvalidInput`] naming the field.
//! Every `value` and `confidence` is finite and in [0, 1]; NaN and infinite inputs are
//! rejected.
//!
//! | method | value | raw_value | confidence | abstains when |
//! |---|---|---|---|---|
//! | `user_feedback` | thumbs up 1 / down 0; rating r ↦ (r − 1)/4; both: their mean | the rating | thumbs 0.6, rating 0.7, both 0.8 when they agree within 0.5, else 0.4 | neither thumbs nor rating |
//! | `test_execution` (counts) | passed / total | – | n/(n + 1), n = total | total = 0 |
//! | `test_execution` (`junit_xml`) | passed / (total − skipped), recounted from testcases ([`junit`]) | – | m/(m + 1), m = executed − errored; halved when the suite itself reports `<error>`s | no test executed, or every executed test errored (infrastructure) |
//! | `code_analysis` (scores) | weighted mean of lint (1), complexity (1), security (2) | – | 0.8 (pre-digested by the caller) | – |
//! | `code_analysis` (`sarif`) | 1 / (1 + p), p = errors + 0.25·warnings + 0.05·notes | p | 0.9 | no runs; [`Status::Error`] when a run's invocation failed |
//! | `business_metrics` | config-weighted mean of clamp((x − min)/(max − min)) | – | 0.7 (business metrics are noisy and confounded) | – |
//! | `automated_check` | passed / total | – | n/(n + 1), n = checks | no checks |
//! | `answer_match` | 1 on a match, else 0 | – | 1 | – |
//! | `judge` | (score − min)/(max − min) | the score | the judge's own | confidence below `judge_min_confidence` |
//!
//! Every request may set `safety_violation: true`, and an `automated_check` failing one of the
//! tenant's `safety_checks` sets it too; [`composite`] then overrides the reward to 0.
//! Each method's evidence is documented on its request type.

mod answer;
mod business;
mod checks;
mod code;
mod composite;
mod config;
mod feedback;
mod judge;
pub mod junit;
mod tests_run;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use answer::{AnswerMatch, MatchMode};
pub use business::BusinessMetrics;
pub use checks::AutomatedCheck;
pub use code::CodeAnalysis;
pub use composite::{Composite, ExampleType, classify, composite};
pub use config::{ExampleThresholds, MetricRange, VerifyConfig};
pub use feedback::UserFeedback;
pub use judge::Judge;
pub use tests_run::TestExecution;

/// The result of one verifier, whatever the method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The score in [0, 1]; `None` unless `status` is [`Status::Ok`].
    pub value: Option<f64>,
    /// The verifier's own unnormalised figure, when it has one (a rating of 4, a judge's 7).
    pub raw_value: Option<f64>,
    /// How much the score is worth, in [0, 1]: its weight in [`composite`].
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
    fn ok(value: f64, confidence: f64, evidence: Value, version: &str) -> Self {
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

    fn abstain(reason: impl Into<String>, evidence: Value, version: &str) -> Self {
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

    fn error(reason: impl Into<String>, evidence: Value, version: &str) -> Self {
        Self {
            status: Status::Error,
            ..Self::abstain(reason, evidence, version)
        }
    }

    fn with_raw(self, raw_value: f64) -> Self {
        Self {
            raw_value: Some(raw_value),
            ..self
        }
    }

    fn is_well_formed(&self) -> bool {
        let unit = |x: f64| (0.0..=1.0).contains(&x);
        let value_ok = match self.status {
            Status::Ok => self.value.is_some_and(unit),
            Status::Abstain | Status::Error => self.value.is_none(),
        };
        value_ok && unit(self.confidence) && self.raw_value.is_none_or(f64::is_finite)
    }
}

/// One verification request, tagged by `method`. Every variant also accepts
/// `safety_violation: bool` (default false), which marks the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Request {
    /// Thumbs and/or a 1–5 rating from the user.
    UserFeedback(UserFeedback),
    /// Test results: counts or a JUnit XML report.
    TestExecution(TestExecution),
    /// Static-analysis scores or a SARIF log.
    CodeAnalysis(CodeAnalysis),
    /// Business metrics, normalised by the tenant's ranges.
    BusinessMetrics(BusinessMetrics),
    /// Named pass/fail checks.
    AutomatedCheck(AutomatedCheck),
    /// The answer against an expected value, pattern or schema.
    AnswerMatch(AnswerMatch),
    /// An LLM judge's score.
    Judge(Judge),
}

impl Request {
    /// The method this request uses.
    #[must_use]
    pub fn method(&self) -> Method {
        match self {
            Self::UserFeedback(_) => Method::UserFeedback,
            Self::TestExecution(_) => Method::TestExecution,
            Self::CodeAnalysis(_) => Method::CodeAnalysis,
            Self::BusinessMetrics(_) => Method::BusinessMetrics,
            Self::AutomatedCheck(_) => Method::AutomatedCheck,
            Self::AnswerMatch(_) => Method::AnswerMatch,
            Self::Judge(_) => Method::Judge,
        }
    }

    fn safety_violation(&self) -> bool {
        match self {
            Self::UserFeedback(r) => r.safety_violation,
            Self::TestExecution(r) => r.safety_violation,
            Self::CodeAnalysis(r) => r.safety_violation,
            Self::BusinessMetrics(r) => r.safety_violation,
            Self::AutomatedCheck(r) => r.safety_violation,
            Self::AnswerMatch(r) => r.safety_violation,
            Self::Judge(r) => r.safety_violation,
        }
    }
}

/// A verification method, as named on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// `user_feedback`
    UserFeedback,
    /// `test_execution`
    TestExecution,
    /// `code_analysis`
    CodeAnalysis,
    /// `business_metrics`
    BusinessMetrics,
    /// `automated_check`
    AutomatedCheck,
    /// `answer_match`
    AnswerMatch,
    /// `judge`
    Judge,
}

impl Method {
    /// The wire name, e.g. `user_feedback`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserFeedback => "user_feedback",
            Self::TestExecution => "test_execution",
            Self::CodeAnalysis => "code_analysis",
            Self::BusinessMetrics => "business_metrics",
            Self::AutomatedCheck => "automated_check",
            Self::AnswerMatch => "answer_match",
            Self::Judge => "judge",
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a verifier may look at besides its request.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The execution's final output (what `answer_match` checks unless given an answer).
    pub output: &'a str,
    /// The tenant's configuration, already validated.
    pub config: &'a VerifyConfig,
}

/// A malformed request: the caller's mistake, reported against a field (e.g. `rating`,
/// `metrics.revenue`, `junit_xml`), never turned into an [`Outcome`].
pub type InvalidInput = crate::FieldError;

/// Rejects NaN and infinities.
fn finite(field: &str, x: f64) -> Result<f64, InvalidInput> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(InvalidInput::new(field, "must be a finite number"))
    }
}

/// Rejects anything outside [0, 1] (NaN included).
fn unit(field: &str, x: f64) -> Result<f64, InvalidInput> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(InvalidInput::new(field, "must be in [0, 1]"))
    }
}

/// Runs the verifier `request` names.
///
/// # Errors
/// An [`InvalidInput`] when the request is malformed; what the verifier cannot judge is an
/// [`Outcome`] with [`Status::Abstain`] or [`Status::Error`].
pub fn run(request: &Request, ctx: &Context<'_>) -> Result<Outcome, InvalidInput> {
    let mut outcome = match request {
        Request::UserFeedback(r) => feedback::verify(r)?,
        Request::TestExecution(r) => tests_run::verify(r)?,
        Request::CodeAnalysis(r) => code::verify(r)?,
        Request::BusinessMetrics(r) => business::verify(r, ctx.config)?,
        Request::AutomatedCheck(r) => checks::verify(r, ctx.config),
        Request::AnswerMatch(r) => answer::verify(r, ctx.output)?,
        Request::Judge(r) => judge::verify(r, ctx.config)?,
    };
    outcome.safety_violation |= request.safety_violation();
    // Every verifier guarantees this; the check keeps a future bug from leaking a bad score.
    debug_assert!(outcome.is_well_formed(), "{outcome:?}");
    if !outcome.is_well_formed() {
        let evidence = std::mem::take(&mut outcome.evidence);
        outcome = Outcome {
            safety_violation: outcome.safety_violation,
            ..Outcome::error(
                "verifier produced a value outside [0, 1]",
                evidence,
                &outcome.verifier_version,
            )
        };
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(json: Value) -> Result<Request, serde_json::Error> {
        serde_json::from_value(json)
    }

    #[test]
    fn requests_are_tagged_by_method() {
        let cases = [
            (
                json!({"method": "user_feedback", "thumbs_up": true}),
                "user_feedback",
            ),
            (
                json!({"method": "test_execution", "tests_passed": 1, "tests_total": 2}),
                "test_execution",
            ),
            (
                json!({"method": "code_analysis", "lint": 1.0}),
                "code_analysis",
            ),
            (
                json!({"method": "business_metrics", "metrics": {"conversion": 0.1}}),
                "business_metrics",
            ),
            (
                json!({"method": "automated_check", "checks": {"builds": true}}),
                "automated_check",
            ),
            (
                json!({"method": "answer_match", "mode": "exact", "expected": "4"}),
                "answer_match",
            ),
            (
                json!({"method": "judge", "score": 0.5, "confidence": 0.9}),
                "judge",
            ),
        ];
        for (body, name) in cases {
            let r = request(body.clone()).unwrap_or_else(|e| panic!("{body}: {e}"));
            assert_eq!(r.method().as_str(), name);
            assert_eq!(
                serde_json::to_value(r.method()).expect("serializes"),
                json!(name)
            );
            let back = serde_json::to_value(&r).expect("serializes");
            assert_eq!(request(back).expect("round trip"), r);
        }
    }

    #[test]
    fn unknown_fields_and_methods_are_rejected() {
        assert!(
            request(json!({"method": "judge", "score": 1, "confidence": 1, "extra": 1})).is_err()
        );
        assert!(request(json!({"method": "vibes"})).is_err());
        assert!(request(json!({"thumbs_up": true})).is_err());
    }

    #[test]
    fn safety_violation_marks_the_outcome_whatever_the_status() {
        let config = VerifyConfig::default();
        let ctx = Context {
            output: "",
            config: &config,
        };
        let abstaining =
            request(json!({"method": "user_feedback", "text": "meh", "safety_violation": true}))
                .expect("parses");
        let outcome = run(&abstaining, &ctx).expect("valid");
        assert_eq!(outcome.status, Status::Abstain);
        assert!(outcome.safety_violation);
        let clean = request(json!({"method": "user_feedback", "thumbs_up": true})).expect("parses");
        assert!(!run(&clean, &ctx).expect("valid").safety_violation);
    }

    #[test]
    fn outcomes_round_trip_with_snake_case_status() {
        let outcome = Outcome::abstain("no tests", json!({}), "test_execution/junit@1");
        let value = serde_json::to_value(&outcome).expect("serializes");
        assert_eq!(value["status"], "abstain");
        assert_eq!(value["value"], Value::Null);
        assert_eq!(
            serde_json::from_value::<Outcome>(value).expect("parses"),
            outcome
        );
    }
}
