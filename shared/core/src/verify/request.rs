//! The request of each verification method, and [`run`], which dispatches it.

use serde::{Deserialize, Serialize};

use super::{
    AnswerMatch, AutomatedCheck, BusinessMetrics, CodeAnalysis, InvalidInput, Judge, Outcome,
    TestExecution, UserFeedback, VerifyConfig, answer, business, checks, code, feedback, judge,
    tests_run,
};

/// One verification request, tagged by `method`. Every variant also accepts
/// `safety_violation: bool` (default false), which marks the outcome.
///
/// Its OpenAPI schema (the `openapi` module below) is written by hand: utoipa would combine
/// each variant's schema, which refuses unknown fields, with a separate `method`, and no object
/// satisfies both.
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
    /// `evaluation`: the verdict of an evaluation the service ran (`POST /v1/evaluations`):
    /// rule checks, diff scoring and model judges combined. Recorded by the evaluation worker,
    /// never sent as a verification request.
    Evaluation,
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
            Self::Evaluation => "evaluation",
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The document's `VerificationRequest`: one of the methods' schemas, each its request type's
/// with the `method` property added, as serde reads the tag.
#[cfg(feature = "openapi")]
mod openapi {
    use std::borrow::Cow;

    use utoipa::openapi::schema::{Discriminator, ObjectBuilder, OneOfBuilder, Schema, Type};
    use utoipa::openapi::{Ref, RefOr};
    use utoipa::{PartialSchema, ToSchema};

    use super::{
        AnswerMatch, AutomatedCheck, BusinessMetrics, CodeAnalysis, Judge, Method, Request,
        TestExecution, UserFeedback,
    };

    type Schemas = Vec<(String, RefOr<Schema>)>;
    /// Adds a method's schemas (see [`add`]).
    type AddSchemas = fn(Method, &mut Schemas);

    /// The component name of a method's schema, e.g. `UserFeedbackVerification`.
    fn name<T: ToSchema>() -> String {
        format!("{}Verification", T::name())
    }

    /// Every method: its wire name, its schema's name, and [`add`] for its request type.
    fn methods() -> [(Method, String, AddSchemas); 7] {
        [
            (
                Method::UserFeedback,
                name::<UserFeedback>(),
                add::<UserFeedback>,
            ),
            (
                Method::TestExecution,
                name::<TestExecution>(),
                add::<TestExecution>,
            ),
            (
                Method::CodeAnalysis,
                name::<CodeAnalysis>(),
                add::<CodeAnalysis>,
            ),
            (
                Method::BusinessMetrics,
                name::<BusinessMetrics>(),
                add::<BusinessMetrics>,
            ),
            (
                Method::AutomatedCheck,
                name::<AutomatedCheck>(),
                add::<AutomatedCheck>,
            ),
            (
                Method::AnswerMatch,
                name::<AnswerMatch>(),
                add::<AnswerMatch>,
            ),
            (Method::Judge, name::<Judge>(), add::<Judge>),
        ]
    }

    /// Adds `T`'s schema with a required `method` whose only value is `method`, and the
    /// schemas it refers to.
    fn add<T: ToSchema>(method: Method, schemas: &mut Schemas) {
        let RefOr::T(Schema::Object(mut object)) = T::schema() else {
            panic!("{}: a request type's schema is an object", T::name());
        };
        object.properties.insert(
            "method".to_owned(),
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some([method.as_str()]))
                .into(),
        );
        object.required.insert(0, "method".to_owned());
        schemas.push((name::<T>(), object.into()));
        T::schemas(schemas);
    }

    impl PartialSchema for Request {
        fn schema() -> RefOr<Schema> {
            let methods = methods();
            let mapping = methods.iter().map(|(method, name, _)| {
                (
                    method.as_str().to_owned(),
                    format!("#/components/schemas/{name}"),
                )
            });
            let mut one_of = OneOfBuilder::new()
                .description(Some(
                    "The verifier `method` names and its parameters (docs/rewards.md).",
                ))
                .discriminator(Some(Discriminator::with_mapping("method", mapping)));
            for (_, name, _) in methods {
                one_of = one_of.item(Ref::from_schema_name(name));
            }
            one_of.into()
        }
    }

    impl ToSchema for Request {
        fn name() -> Cow<'static, str> {
            Cow::Borrowed("VerificationRequest")
        }

        fn schemas(schemas: &mut Schemas) {
            for (method, _, add) in methods() {
                add(method, schemas);
            }
        }
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

/// Runs the verifier `request` names.
///
/// # Errors
/// An [`InvalidInput`] when the request is malformed; what the verifier cannot judge is an
/// [`Outcome`] with [`super::Status::Abstain`] or [`super::Status::Error`].
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
    use crate::verify::Status;
    use serde_json::Value;
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
