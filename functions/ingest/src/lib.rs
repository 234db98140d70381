//! Trajectory ingest. `POST /v1/trajectories` validates a trajectory and enqueues it (202);
//! the queue worker turns batches of them into turn rows — rewarded per turn, anonymised,
//! optionally with differentially private episode rewards — and writes one Parquet object per
//! (tenant, date) of the batch under `trajectories/tenant=…/date=…/`.
//!
//! The same worker runs as the SQS-triggered Lambda (`bin/ingest.rs`) and in-process under
//! `agentrl serve` over the embedded queue.

mod config;
mod envelope;
mod ledger;
mod paths;
mod routes;
mod rows;
mod trajectories;
mod worker;

use std::sync::Arc;

use agentrl_http::{Service, config::ConfigApi};
use agentrl_store::{
    ports::{Queue, Table},
    tenant_config::TenantConfig,
};
use axum::{
    Router,
    routing::{get, post},
};
use utoipa::OpenApi;

pub use config::IngestConfig;
pub use envelope::Envelope;
pub use paths::object_path;
pub use worker::Ingest;

/// What the HTTP handlers need.
#[derive(Clone)]
pub struct TrajectoryState {
    queue: Arc<dyn Queue>,
    table: Arc<dyn Table>,
    configs: TenantConfig<IngestConfig>,
    kpis: agentrl_http::kpis::KpiLedger,
}

impl TrajectoryState {
    /// State over the queue trajectories are sent to and the table of tenant settings.
    pub fn new(queue: Arc<dyn Queue>, table: Arc<dyn Table>) -> Self {
        Self {
            queue,
            configs: TenantConfig::new(table.clone(), config::CONFIG_NAME),
            kpis: agentrl_http::kpis::KpiLedger::new(table.clone()),
            table,
        }
    }

    /// The same state, emitting its KPI counts (accepted trajectories) in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: agentrl_http::Metrics) -> Self {
        self.kpis = self.kpis.with_metrics(metrics);
        self
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::post::post,
        routes::privacy::budget,
    ),
    tags((name = "trajectories", description = "Trajectory collection for training"))
)]
struct TrajectoryApi;

/// The trajectory routes and their OpenAPI document.
pub fn service(state: TrajectoryState) -> Service {
    let router = Router::new()
        .route("/v1/trajectories", post(routes::post::post))
        .route("/v1/privacy/budget", get(routes::privacy::budget))
        // These routes keep the default limit (a trajectory must also fit a queue message).
        .layer(axum::extract::DefaultBodyLimit::max(
            agentrl_http::DEFAULT_BODY_LIMIT,
        ));
    let configs = ConfigApi {
        path: "/v1/config/trajectories",
        tag: "trajectories",
        what: "ingest settings: turn-reward weights and differential privacy",
        parse: |config: IngestConfig| {
            config.validate()?;
            Ok(config)
        },
        show: IngestConfig::clone,
    }
    .service(state.configs.clone());
    Service {
        router: router.with_state(state),
        openapi: TrajectoryApi::openapi(),
    }
    .merge(configs)
}
