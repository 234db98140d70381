//! Reward verification (RLVR): record an agent's execution, verify it with any of the
//! verifiers of `agentrl_core::verify` (feedback, tests, static analysis, business metrics,
//! checks, answer matching, judges), combine the results into one confidence-weighted reward,
//! and keep every rewarded execution as a training example (positive, negative or neutral).
//!
//! It also runs model judges itself (an OpenAI-compatible provider per tenant): critic gates
//! for agent pipelines, and evaluations that combine rule checks, diff scoring and judges into
//! one verdict recorded on the execution ([`Evaluator`] is the queue worker; docs/judges.md).
//!
//! `service()` returns the routes and their OpenAPI document; `main.rs` runs them in Lambda
//! and `agentrl serve` runs them locally.

mod evaluations;
mod executions;
mod gates;
mod repo;
mod routes;
mod wire;

use std::sync::Arc;

use agentrl_core::{
    judge::JudgeConfig,
    verify::{ExampleType, VerifyConfig},
};
use agentrl_diff::{Limits, Scorer};
use agentrl_http::{Service, config::ConfigApi};
use agentrl_store::ports::{Objects, Queue, Table};
use axum::{
    Router,
    extract::DefaultBodyLimit,
    routing::{get, post},
};
use utoipa::OpenApi;

pub use agentrl_judges::Provider;
pub use evaluations::{Evaluator, VISIBILITY_TIMEOUT};
pub use repo::RewardRepo;

/// Largest verification request: JUnit reports of tens of MB are accepted inline. API Gateway
/// and Lambda cap a request at 6 MB on AWS; the local stack takes the full size.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// What the handlers need.
#[derive(Clone)]
pub struct RewardState {
    repo: RewardRepo,
    judges: agentrl_judges::Judges,
    evaluations: evaluations::EvaluationStore,
    queue: Arc<dyn Queue>,
    scorer: Arc<Scorer>,
}

impl RewardState {
    /// State over `table` and `objects` (evaluation requests), queueing evaluations on
    /// `queue` and calling `provider` for judgments.
    pub fn new(
        table: Arc<dyn Table>,
        objects: Arc<dyn Objects>,
        queue: Arc<dyn Queue>,
        provider: Arc<Provider>,
    ) -> Self {
        Self {
            repo: RewardRepo::new(table.clone()),
            judges: agentrl_judges::Judges::new(table.clone(), provider),
            evaluations: evaluations::EvaluationStore::new(table, objects),
            queue,
            scorer: Arc::new(Scorer::new(Limits::default())),
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::create::create,
        routes::read::read,
        routes::verify::verify,
        routes::reward::reward,
        routes::examples::list,
        routes::examples::export,
        routes::evaluations::create,
        routes::evaluations::read,
        routes::evaluations::list,
        routes::evaluations::change,
        routes::gates::check,
        routes::usage::usage,
    ),
    // Named by the training examples' `type` query parameter, which utoipa does not collect.
    components(schemas(ExampleType)),
    tags(
        (name = "rewards", description = "Reward verification and training examples"),
        (name = "judges", description = "Model judges, critic gates and evaluations"),
    )
)]
struct RewardApi;

/// The document, with links from the created execution and evaluation to their routes.
fn document() -> utoipa::openapi::OpenApi {
    let mut doc = RewardApi::openapi();
    agentrl_http::link_ids(
        &mut doc,
        ("post", "/v1/executions"),
        "201",
        "execution_id",
        &[
            ("get", "/v1/executions/{id}", "id"),
            ("get", "/v1/executions/{id}/reward", "id"),
            ("post", "/v1/executions/{id}/verifications", "id"),
        ],
    );
    agentrl_http::link_body_field(
        &mut doc,
        ("post", "/v1/executions"),
        "201",
        "execution_id",
        ("post", "/v1/evaluations"),
        "execution_id",
    );
    agentrl_http::link_ids(
        &mut doc,
        ("post", "/v1/evaluations"),
        "202",
        "evaluation_id",
        &[("get", "/v1/evaluations/{id}", "id")],
    );
    doc
}

/// The reward routes and their OpenAPI document.
pub fn service(state: RewardState) -> Service {
    let large = Router::new()
        .route(
            "/v1/executions/{id}/verifications",
            post(routes::verify::verify),
        )
        .route(
            "/v1/evaluations",
            post(routes::evaluations::create).get(routes::evaluations::list),
        )
        .route(
            "/v1/evaluations/{id}/change",
            get(routes::evaluations::change),
        )
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    let router = Router::new()
        .route("/v1/executions", post(routes::create::create))
        .route("/v1/executions/{id}", get(routes::read::read))
        .route("/v1/executions/{id}/reward", get(routes::reward::reward))
        .route("/v1/training-examples", get(routes::examples::list))
        .route(
            "/v1/training-examples/export",
            get(routes::examples::export),
        )
        .route("/v1/evaluations/{id}", get(routes::evaluations::read))
        .route("/v1/gates/{stage}/check", post(routes::gates::check))
        .route("/v1/judges/usage", get(routes::usage::usage))
        // Everything but a verification or an evaluation keeps the default limit.
        .layer(DefaultBodyLimit::max(agentrl_http::DEFAULT_BODY_LIMIT))
        .merge(large);
    let configs = ConfigApi {
        path: "/v1/config/rewards",
        tag: "rewards",
        what: "verifier settings: business-metric ranges, judge threshold, safety checks, \
               training-example thresholds",
        parse: |config: VerifyConfig| {
            config.validate()?;
            Ok(config)
        },
        show: VerifyConfig::clone,
    }
    .service(state.repo.configs());
    let judge_configs = ConfigApi {
        path: "/v1/config/judges",
        tag: "judges",
        what: "judge provider and models, gate pass marks, refinement cap, cache TTL, \
               timeouts and retries, fallback, prices (never the API key)",
        parse: |config: JudgeConfig| {
            config.validate()?;
            Ok(config)
        },
        show: JudgeConfig::clone,
    }
    .service(state.judges.configs());
    Service {
        router: router.with_state(state),
        openapi: document(),
    }
    .merge(configs)
    .merge(judge_configs)
}

#[cfg(test)]
mod tests {
    //! The request schemas against the checks they describe: where a literal in a schema
    //! attribute repeats a constant, or a bound repeats a check, the two must agree.

    use agentrl_core::judge::{
        BASE_URL_PATTERN, GateThresholds, MAX_BASE_URL_CHARS, MAX_MODEL_CHARS, Price,
    };
    use agentrl_core::verify::{Context, ExampleThresholds, MetricRange, Request, run};
    use regex::Regex;
    use serde_json::{Value, json};
    use utoipa::PartialSchema;

    use super::*;
    use agentrl_testkit::schema::bounds_hold;

    fn schema<T: PartialSchema>() -> Value {
        serde_json::to_value(T::schema()).expect("serializes")
    }

    fn document() -> Value {
        serde_json::to_value(RewardApi::openapi()).expect("serializes")
    }

    fn pattern(property: &Value) -> Regex {
        Regex::new(property["pattern"].as_str().expect("a pattern")).expect("compiles")
    }

    /// Counts are bounded where the document says: an unbounded `u64` would pass values past
    /// the `int64` the document's integers are.
    #[test]
    fn execution_counts_are_bounded_as_documented() {
        let doc = document();
        let body = &doc["components"]["schemas"]["CreateExecutionBody"];
        for field in ["tokens_used", "latency_ms"] {
            assert_eq!(
                body["properties"][field]["maximum"],
                wire::MAX_COUNT,
                "{field}"
            );
            bounds_hold(body, field, |v| {
                let mut execution = json!({"agent_id": "a", "input": "", "output": ""});
                execution[field] = v;
                serde_json::from_value::<wire::CreateExecutionBody>(execution)
                    .is_ok_and(|b| executions::NewExecution::try_from(b).is_ok())
            });
        }
        let tests = schema::<agentrl_core::verify::TestExecution>();
        for field in ["tests_passed", "tests_total"] {
            assert_eq!(tests["properties"][field]["maximum"], i64::MAX, "{field}");
        }
        bounds_hold(&schema::<gates::GateCheckBody>(), "refinements", |v| {
            serde_json::from_value::<gates::GateCheckBody>(
                json!({"artifact": "a", "refinements": v}),
            )
            .is_ok()
        });
    }

    #[test]
    fn text_limits_are_the_constants() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        for field in ["input", "output"] {
            let p = &schemas["CreateExecutionBody"]["properties"][field];
            assert_eq!(p["maxLength"], wire::MAX_TEXT_BYTES, "{field}");
        }
        for field in ["artifact", "task"] {
            let p = &schemas["GateCheckBody"]["properties"][field];
            assert_eq!(p["maxLength"], gates::MAX_ARTIFACT_CHARS, "{field}");
        }
        let judges = schema::<JudgeConfig>();
        let base_url = &judges["properties"]["base_url"];
        assert_eq!(base_url["pattern"], BASE_URL_PATTERN);
        assert_eq!(base_url["maxLength"], MAX_BASE_URL_CHARS);
        for field in ["judge_model", "critic_model"] {
            assert_eq!(
                judges["properties"][field]["maxLength"], MAX_MODEL_CHARS,
                "{field}"
            );
        }
    }

    /// Blank is the same to the patterns as to the checks, character by character.
    #[test]
    fn blank_patterns_are_the_checks() {
        let doc = document();
        let artifact =
            pattern(&doc["components"]["schemas"]["GateCheckBody"]["properties"]["artifact"]);
        let model = pattern(&schema::<JudgeConfig>()["properties"]["judge_model"]);
        let with_model = |name: &str| {
            let config = JudgeConfig {
                judge_model: name.to_owned(),
                ..JudgeConfig::default()
            };
            config.validate().is_ok()
        };
        // Every white space character is below U+3100, but the BOM.
        let chars = (0..=0x3100).chain([0xfeff, 0xfffd, 0x1_0000, 0x10_ffff]);
        for c in chars.filter_map(char::from_u32) {
            let text = format!("{c}{c}");
            assert_eq!(artifact.is_match(&text), !gates::is_blank(&text), "{c:?}");
            assert_eq!(model.is_match(&text), with_model(&text), "{c:?}");
        }
        assert!(artifact.is_match(" \u{feff}x ") && model.is_match("\u{3000}gpt "));
    }

    #[test]
    fn the_language_pattern_is_the_diff_scorers_names() {
        let doc = document();
        let language =
            pattern(&doc["components"]["schemas"]["ChangeBody"]["properties"]["language"]);
        for name in [
            "typescript",
            "TS",
            "tsx",
            "JavaScript",
            "js",
            "jsX",
            "python",
            "py",
            "Rust",
            "rs",
            "go",
            "GoLang",
            "java",
            "c",
            "ruby",
            "",
            " go",
            "golang2",
            "jav",
        ] {
            assert_eq!(
                language.is_match(name),
                agentrl_diff::Lang::from_name(name).is_some(),
                "{name:?}"
            );
        }
    }

    #[test]
    fn config_bounds_are_where_validation_draws_the_line() {
        let judges = |body: Value| {
            serde_json::from_value::<JudgeConfig>(body).is_ok_and(|c| c.validate().is_ok())
        };
        let config = schema::<JudgeConfig>();
        for field in [
            "max_refinements",
            "cache_ttl_seconds",
            "timeout_ms",
            "max_retries",
            "max_concurrency",
        ] {
            bounds_hold(&config, field, |v| judges(json!({ field: v })));
        }
        for field in ["triage", "research", "response"] {
            bounds_hold(&schema::<GateThresholds>(), field, |v| {
                judges(json!({"gates": { field: v }}))
            });
        }
        for field in ["input_per_million", "output_per_million"] {
            bounds_hold(&schema::<Price>(), field, |v| {
                let mut price = json!({"input_per_million": 1, "output_per_million": 1});
                price[field] = v;
                judges(json!({"prices": {"m": price}}))
            });
        }
        let prices = &config["properties"]["prices"]["maxProperties"];
        let many = |n: u64| {
            let price = json!({"input_per_million": 1, "output_per_million": 1});
            judges(
                json!({"prices": (0..n).map(|i| (i.to_string(), price.clone())).collect::<serde_json::Map<_, _>>()}),
            )
        };
        let max = prices.as_u64().expect("prices are bounded");
        assert!(many(max) && !many(max + 1));

        let rewards = |body: Value| {
            serde_json::from_value::<VerifyConfig>(body).is_ok_and(|c| c.validate().is_ok())
        };
        bounds_hold(&schema::<VerifyConfig>(), "judge_min_confidence", |v| {
            rewards(json!({ "judge_min_confidence": v }))
        });
        bounds_hold(&schema::<MetricRange>(), "weight", |v| {
            rewards(json!({"business_metrics": {"m": {"min": 0, "max": 1, "weight": v}}}))
        });
        let examples = schema::<ExampleThresholds>();
        bounds_hold(&examples, "positive", |v| {
            rewards(json!({"examples": {"positive": v, "negative": 0}}))
        });
        bounds_hold(&examples, "negative", |v| {
            rewards(json!({"examples": {"positive": 1, "negative": v}}))
        });
        let checks = &schema::<VerifyConfig>()["properties"]["safety_checks"]["items"];
        assert_eq!(checks["minLength"], 1);
        assert!(
            !rewards(json!({"safety_checks": [""]})) && rewards(json!({"safety_checks": ["x"]}))
        );
    }

    #[test]
    fn verification_bounds_are_where_the_verifiers_draw_the_line() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let config = VerifyConfig::default();
        let accepts = |body: Value| {
            serde_json::from_value::<Request>(body).is_ok_and(|r| {
                run(
                    &r,
                    &Context {
                        output: "1",
                        config: &config,
                    },
                )
                .is_ok()
            })
        };
        let cases: [(&str, &str, Value); 7] = [
            (
                "UserFeedbackVerification",
                "rating",
                json!({"method": "user_feedback"}),
            ),
            (
                "CodeAnalysisVerification",
                "lint",
                json!({"method": "code_analysis"}),
            ),
            (
                "CodeAnalysisVerification",
                "complexity",
                json!({"method": "code_analysis"}),
            ),
            (
                "CodeAnalysisVerification",
                "security",
                json!({"method": "code_analysis"}),
            ),
            (
                "JudgeVerification",
                "confidence",
                json!({"method": "judge", "score": 0.5}),
            ),
            (
                "AnswerMatchVerification",
                "tolerance",
                json!({"method": "answer_match", "mode": "numeric", "expected": "1"}),
            ),
            (
                "AnswerMatchVerification",
                "relative_tolerance",
                json!({"method": "answer_match", "mode": "numeric", "expected": "1"}),
            ),
        ];
        for (name, field, body) in cases {
            bounds_hold(&schemas[name], field, |v| {
                let mut body = body.clone();
                body[field] = v;
                accepts(body)
            });
        }
    }

    /// The verification body is one of the methods' schemas, each requiring its `method`
    /// and refusing unknown fields, as serde reads the tagged request.
    #[test]
    fn the_verification_body_is_one_schema_per_method() {
        let doc = document();
        let body = &doc["paths"]["/v1/executions/{id}/verifications"]["post"]["requestBody"];
        assert_eq!(
            body["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/VerificationRequest"
        );
        let schemas = &doc["components"]["schemas"];
        let request = &schemas["VerificationRequest"];
        let mapping = request["discriminator"]["mapping"]
            .as_object()
            .expect("mapped");
        assert_eq!(request["discriminator"]["propertyName"], "method");
        assert_eq!(mapping.len(), 7);
        for (method, reference) in mapping {
            let name = reference
                .as_str()
                .and_then(|r| r.strip_prefix("#/components/schemas/"));
            let variant = &schemas[name.expect("a local reference")];
            assert_eq!(variant["properties"]["method"]["enum"], json!([method]));
            assert_eq!(variant["required"][0], "method");
            assert_eq!(variant["additionalProperties"], false, "{method}");
            assert!(
                request["oneOf"]
                    .as_array()
                    .expect("one of")
                    .contains(&json!({"$ref": reference})),
                "{method}"
            );
        }
    }
}
