//! The agent-learning service: learning events (`feedback.created`, `ai.message.reply`,
//! `session.ended`, `ai.action`) become bounded rewards and per-agent projections — summary,
//! feedback aggregation, relationships, behaviour — from which a policy update loop moves
//! each agent's traits, and which queue agents for dataset generation.
//!
//! Events arrive on the work queue (from `POST /v1/events` or straight from producers) and are
//! applied by [`Learner`], which the ingest worker runs for every message that carries an
//! `event`. The routes read and steer the projections; [`Policy`] is the update loop (the
//! `learning-policy` binary runs it on a schedule).

mod agents;
mod apply;
mod envelope;
mod policy;
mod repo;
mod routes;
mod worker;

use std::sync::Arc;

use agentrl_core::learning::LearningConfig;
use agentrl_http::{Service, config::ConfigApi};
use agentrl_store::ports::{Queue, Table};
use axum::{
    Router,
    routing::{get, post, put},
};
use utoipa::OpenApi;

pub use envelope::{EventEnvelope, is_event_message};
pub use policy::{PendingRun, Policy, UpdateReport};
pub use repo::LearningRepo;
pub use worker::Learner;

/// Where the learning service announces what it did: every emitted event on `events` (for
/// everyone), and `dataset.generation.requested` also on `datasets` (the dataset job's work).
#[derive(Clone)]
pub struct Outlets {
    /// The event queue.
    pub events: Arc<dyn Queue>,
    /// The dataset queue.
    pub datasets: Arc<dyn Queue>,
}

impl Outlets {
    /// The event and dataset queues of `stores`.
    pub fn of(stores: &agentrl_store::Stores) -> Self {
        Self {
            events: stores.events.clone(),
            datasets: stores.datasets.clone(),
        }
    }
}

/// What the handlers need.
#[derive(Clone)]
pub struct LearningState {
    repo: LearningRepo,
    policy: Policy,
    queue: Arc<dyn Queue>,
}

impl LearningState {
    /// State over `table`, sending events to `queue` (the work queue) and emitting updates on
    /// `outlets`.
    pub fn new(table: Arc<dyn Table>, queue: Arc<dyn Queue>, outlets: Outlets) -> Self {
        let repo = LearningRepo::new(table);
        Self {
            policy: Policy::new(repo.clone(), outlets),
            repo,
            queue,
        }
    }
}

/// The update loop over `table`, emitting on `outlets`: what the scheduled binary and
/// `agentrl serve` run.
pub fn policy(table: Arc<dyn Table>, outlets: Outlets) -> Policy {
    Policy::new(LearningRepo::new(table), outlets)
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::events::post,
        routes::agent::read,
        routes::settings::put_settings,
        routes::settings::unfreeze,
        routes::update::update,
        routes::reply::read,
    ),
    tags((name = "learning", description = "Learning events, agent projections and policy updates"))
)]
struct LearningApi;

/// The learning routes and their OpenAPI document.
pub fn service(state: LearningState) -> Service {
    let router = Router::new()
        .route("/v1/events", post(routes::events::post))
        .route("/v1/agents/{id}/learning", get(routes::agent::read))
        .route(
            "/v1/agents/{id}/learning/settings",
            put(routes::settings::put_settings),
        )
        .route(
            "/v1/agents/{id}/learning/unfreeze",
            post(routes::settings::unfreeze),
        )
        .route(
            "/v1/agents/{id}/learning/update",
            post(routes::update::update),
        )
        .route(
            "/v1/agents/{id}/replies/{message_id}",
            get(routes::reply::read),
        )
        .layer(axum::extract::DefaultBodyLimit::max(
            agentrl_http::DEFAULT_BODY_LIMIT,
        ));
    let configs = ConfigApi {
        path: "/v1/config/learning",
        tag: "learning",
        what: "learning settings: event reward weights, decay, high-quality rules, policy \
               bounds, dataset trigger",
        parse: |config: LearningConfig| {
            config.validate()?;
            Ok(config)
        },
        show: LearningConfig::clone,
    }
    .service(state.repo.configs());
    Service {
        router: router.with_state(state),
        openapi: LearningApi::openapi(),
    }
    .merge(configs)
}
