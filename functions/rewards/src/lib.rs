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
mod judges;
mod repo;
mod routes;
mod wire;

use std::sync::Arc;

use agentrl_core::{judge::JudgeConfig, verify::VerifyConfig};
use agentrl_diff::{Limits, Scorer};
use agentrl_http::{Service, config::ConfigApi};
use agentrl_store::ports::{Objects, Queue, Table};
use axum::{
    Router,
    extract::DefaultBodyLimit,
    routing::{get, post},
};
use utoipa::OpenApi;

pub use evaluations::{Evaluator, VISIBILITY_TIMEOUT};
pub use judges::Provider;
pub use repo::RewardRepo;

/// Largest verification request: JUnit reports of tens of MB are accepted inline. API Gateway
/// and Lambda cap a request at 6 MB on AWS; the local stack takes the full size.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// What the handlers need.
#[derive(Clone)]
pub struct RewardState {
    repo: RewardRepo,
    judges: judges::Judges,
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
            judges: judges::Judges::new(table.clone(), provider),
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
        routes::gates::check,
        routes::usage::usage,
    ),
    tags(
        (name = "rewards", description = "Reward verification and training examples"),
        (name = "judges", description = "Model judges, critic gates and evaluations"),
    )
)]
struct RewardApi;

/// The reward routes and their OpenAPI document.
pub fn service(state: RewardState) -> Service {
    let large = Router::new()
        .route(
            "/v1/executions/{id}/verifications",
            post(routes::verify::verify),
        )
        .route("/v1/evaluations", post(routes::evaluations::create))
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
        openapi: RewardApi::openapi(),
    }
    .merge(configs)
    .merge(judge_configs)
}
