//! Training as a service: the agents registry, training runs (created once per agent,
//! dataset, base and config, executed on AWS Batch or as a child process of `agentrl serve`),
//! the model versions they register, promotion through an evaluation gate, and canary
//! rollout with live outcomes per version; a tenant's opt-in to federated rounds and its part
//! of them ([`federation`]).
//!
//! `service()` returns the routes and their OpenAPI document; `main.rs` runs them in Lambda,
//! the `training-events` binary consumes the training queue (`training.dataset.ready`) and
//! Batch's job-state changes, and `agentrl serve` runs both locally with [`LocalRunner`].

mod agents;
mod datasets;
mod events;
pub mod federation;
pub mod launch;
mod repo;
mod routes;
mod runs;
pub mod serving;
mod versions;
mod wire;

use std::sync::Arc;

use agentrl_core::{kpi_alarm::KpiAlarms, privacy::Pseudonymizer, training::GateConfig};
use agentrl_http::{Metrics, Service, config::ConfigApi};
use agentrl_store::{
    ports::{Objects, Table},
    tenant_config::TenantConfig,
};
use axum::{
    Router,
    routing::{get, post},
};
use utoipa::OpenApi;

pub use events::TrainingConsumer;
pub use launch::{JobSpec, Launcher, LocalLauncher, LocalRunner, LogTail};
pub use repo::TrainingRepo;
pub use runs::{JobState, JobStateError, job_state};

/// Where shared base models live in the object store: `models/NAME/` holds a model in the
/// Hugging Face layout (`config.json`, `model.safetensors`, `tokenizer.json`).
pub const MODELS_PREFIX: &str = "models/";

/// What the handlers and the job-state consumers need.
#[derive(Clone)]
pub struct TrainingState {
    repo: TrainingRepo,
    objects: Arc<dyn Objects>,
    launcher: Arc<dyn Launcher>,
    pseudonyms: Arc<Pseudonymizer>,
    metrics: Metrics,
    kpis: agentrl_http::kpis::KpiLedger,
    kpi_alarms: TenantConfig<KpiAlarms>,
    server: Option<serving::SharedModelServer>,
    federation: federation::FederationRepo,
}

impl TrainingState {
    /// State over `table` and `objects` (datasets, models, run outputs), starting jobs with
    /// `launcher`; `pseudonyms` names the tenant partitions as the ingest worker does.
    pub fn new(
        table: Arc<dyn Table>,
        objects: Arc<dyn Objects>,
        launcher: Arc<dyn Launcher>,
        pseudonyms: Arc<Pseudonymizer>,
    ) -> Self {
        Self {
            kpis: agentrl_http::kpis::KpiLedger::new(table.clone()),
            kpi_alarms: TenantConfig::new(table.clone(), "kpi-alarms"),
            federation: federation::FederationRepo::new(table.clone()),
            repo: TrainingRepo::new(table),
            objects,
            launcher,
            pseudonyms,
            metrics: Metrics::Off,
            server: None,
        }
    }

    /// The same state, having `server` serve each version before it is routed.
    #[must_use]
    pub fn with_model_server(mut self, server: serving::SharedModelServer) -> Self {
        self.server = Some(server);
        self
    }

    /// The tenant's pseudonymous partition (`tenant=<keyed hash>`), as the ingest worker and
    /// the dataset job name it in object paths.
    pub(crate) fn partition(&self, t: &agentrl_core::TenantId) -> String {
        self.pseudonyms
            .pseudonym(agentrl_core::privacy::TENANT, t.as_str())
    }

    /// The same state, counting finished runs (`training_runs_succeeded`,
    /// `training_runs_failed`) in `metrics` (the template alarms on failures).
    #[must_use]
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::agents::create,
        routes::agents::read,
        routes::agents::list,
        routes::agents::patch,
        routes::agents::versions,
        routes::agents::gate_decisions,
        routes::agents::route,
        routes::agents::outcomes,
        routes::runs::create,
        routes::runs::read,
        routes::runs::metrics,
        routes::runs::logs,
        routes::runs::list,
        routes::runs::cancel,
        routes::runs::promote,
        routes::datasets::list,
        routes::datasets::read,
        routes::kpis::read,
        routes::kpis::alarms,
        routes::federation::read,
        routes::federation::replace,
        routes::federation::rounds,
    ),
    tags((name = "training", description = "Agents registry, training runs, model versions, promotion and canary rollout"))
)]
struct TrainingApi;

/// The document, with links from a created agent and run to the routes that take their ids
/// (the agent's learning routes too, when the learning function is in the same document).
fn document() -> utoipa::openapi::OpenApi {
    let mut doc = TrainingApi::openapi();
    agentrl_http::link_ids(
        &mut doc,
        ("post", "/v1/agents"),
        "201",
        "agent_id",
        &[
            ("get", "/v1/agents/{id}", "id"),
            ("patch", "/v1/agents/{id}", "id"),
            ("get", "/v1/agents/{id}/versions", "id"),
            ("get", "/v1/agents/{id}/route", "id"),
            ("post", "/v1/agents/{id}/outcomes", "id"),
            ("get", "/v1/agents/{id}/learning", "id"),
            ("put", "/v1/agents/{id}/learning/settings", "id"),
            ("post", "/v1/agents/{id}/learning/update", "id"),
            ("post", "/v1/agents/{id}/learning/unfreeze", "id"),
        ],
    );
    agentrl_http::link_body_field(
        &mut doc,
        ("post", "/v1/agents"),
        "201",
        "agent_id",
        ("post", "/v1/training-runs"),
        "agent_id",
    );
    let run = [
        ("get", "/v1/training-runs/{id}", "id"),
        ("post", "/v1/training-runs/{id}/cancel", "id"),
        ("post", "/v1/training-runs/{id}/promote", "id"),
    ];
    // 201 for a new run, 200 for the run the same inputs already made.
    for status in ["201", "200"] {
        agentrl_http::link_ids(
            &mut doc,
            ("post", "/v1/training-runs"),
            status,
            "run_id",
            &run,
        );
    }
    doc
}

/// The training routes and their OpenAPI document.
pub fn service(state: TrainingState) -> Service {
    let router = Router::new()
        .route(
            "/v1/agents",
            post(routes::agents::create).get(routes::agents::list),
        )
        .route(
            "/v1/agents/{id}",
            get(routes::agents::read).patch(routes::agents::patch),
        )
        .route("/v1/agents/{id}/versions", get(routes::agents::versions))
        .route(
            "/v1/agents/{id}/gate-decisions",
            get(routes::agents::gate_decisions),
        )
        .route("/v1/agents/{id}/route", get(routes::agents::route))
        .route("/v1/agents/{id}/outcomes", post(routes::agents::outcomes))
        .route(
            "/v1/training-runs",
            post(routes::runs::create).get(routes::runs::list),
        )
        .route("/v1/training-runs/{id}", get(routes::runs::read))
        .route("/v1/training-runs/{id}/metrics", get(routes::runs::metrics))
        .route("/v1/training-runs/{id}/logs", get(routes::runs::logs))
        .route("/v1/training-runs/{id}/cancel", post(routes::runs::cancel))
        .route(
            "/v1/training-runs/{id}/promote",
            post(routes::runs::promote),
        )
        .route("/v1/datasets", get(routes::datasets::list))
        .route("/v1/datasets/{id}", get(routes::datasets::read))
        .route("/v1/kpis", get(routes::kpis::read))
        .route("/v1/kpis/alarms", get(routes::kpis::alarms))
        .route(
            "/v1/config/federation",
            get(routes::federation::read).put(routes::federation::replace),
        )
        .route("/v1/federation/rounds", get(routes::federation::rounds))
        .layer(axum::extract::DefaultBodyLimit::max(
            agentrl_http::DEFAULT_BODY_LIMIT,
        ));
    let configs = ConfigApi {
        path: "/v1/config/promotion-gate",
        tag: "training",
        what: "the evaluation gate of promotions: required validation reward gain, allowed \
               rises of safety and reward-hacking rates, live outcomes per canary arm",
        parse: |config: GateConfig| {
            config.validate()?;
            Ok(config)
        },
        show: GateConfig::clone,
    }
    .service(state.repo.gates());
    let alarms = ConfigApi {
        path: "/v1/config/kpi-alarms",
        tag: "training",
        what: "KPI alarms: a name, a KPI of GET /v1/kpis, above or below a threshold, \
               evaluated per UTC day by GET /v1/kpis/alarms",
        parse: |alarms: KpiAlarms| {
            alarms.validate()?;
            Ok(alarms)
        },
        show: KpiAlarms::clone,
    }
    .service(state.kpi_alarms.clone());
    Service {
        router: router.with_state(state),
        openapi: document(),
    }
    .merge(configs)
    .merge(alarms)
}
