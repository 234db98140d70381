//! Reward verification (RLVR): record an agent's execution, verify it with any of the
//! verifiers of `agentrl_core::verify` (feedback, tests, static analysis, business metrics,
//! checks, answer matching, judges), combine the results into one confidence-weighted reward,
//! and keep every rewarded execution as a training example (positive, negative or neutral).
//!
//! `service()` returns the routes and their OpenAPI document; `main.rs` runs them in Lambda
//! and `agentrl serve` runs them locally.

mod executions;
mod repo;
mod routes;
mod wire;

use std::sync::Arc;

use agentrl_core::verify::VerifyConfig;
use agentrl_http::{Service, config::ConfigApi};
use agentrl_store::ports::Table;
use axum::{
    Router,
    extract::DefaultBodyLimit,
    routing::{get, post},
};
use utoipa::OpenApi;

pub use repo::RewardRepo;

/// Largest verification request: JUnit reports of tens of MB are accepted inline. API Gateway
/// and Lambda cap a request at 6 MB on AWS; the local stack takes the full size.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// What the handlers need.
#[derive(Clone)]
pub struct RewardState {
    repo: RewardRepo,
}

impl RewardState {
    /// State over `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            repo: RewardRepo::new(table),
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
    ),
    tags((name = "rewards", description = "Reward verification and training examples"))
)]
struct RewardApi;

/// The reward routes and their OpenAPI document.
pub fn service(state: RewardState) -> Service {
    let verifications = Router::new()
        .route(
            "/v1/executions/{id}/verifications",
            post(routes::verify::verify),
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
        // Everything but a verification keeps the default limit.
        .layer(DefaultBodyLimit::max(agentrl_http::DEFAULT_BODY_LIMIT))
        .merge(verifications);
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
    Service {
        router: router.with_state(state),
        openapi: RewardApi::openapi(),
    }
    .merge(configs)
}
