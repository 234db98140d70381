//! OTLP trace ingest: agents already instrumented with OpenTelemetry (the GenAI semantic
//! conventions, OpenLLMetry, OpenInference) export their traces to `POST /v1/traces`; the
//! spans are stored durably by conversation and, once it ends (explicitly, or quiet after its
//! root span ended), become trajectories on the ingest path. See `docs/integrations.md`.

mod buffer;
mod closing;
mod config;
mod otlp;
mod routes;

use std::sync::Arc;

use agentrl_http::{Service, config::ConfigApi, kpis::KpiLedger};
use agentrl_store::ports::{Objects, Queue, Table};
use agentrl_store::tenant_config::TenantConfig;
use axum::Router;
use axum::routing::post;
use utoipa::OpenApi;

pub use closing::TraceSweep;
pub use config::TracesConfig;

/// The largest export body as sent (Lambda's synchronous payload limit).
pub const MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

/// The largest export body once decompressed.
pub const MAX_DECODED_BYTES: usize = 64 * 1024 * 1024;

/// What the trace handlers and the sweep need.
#[derive(Clone)]
pub struct TracesState {
    table: Arc<dyn Table>,
    objects: Arc<dyn Objects>,
    queue: Arc<dyn Queue>,
    configs: TenantConfig<TracesConfig>,
    kpis: KpiLedger,
}

impl TracesState {
    /// State over the stores: buffered spans in `objects` and `table`, finished
    /// conversations to `queue` (the ingest queue).
    #[must_use]
    pub fn new(table: Arc<dyn Table>, objects: Arc<dyn Objects>, queue: Arc<dyn Queue>) -> Self {
        Self {
            configs: TenantConfig::new(table.clone(), config::CONFIG_NAME),
            kpis: KpiLedger::new(table.clone()),
            table,
            objects,
            queue,
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(routes::export, routes::end),
    components(schemas(agentrl_core::gateway::SessionEnd, agentrl_core::gateway::ChoiceOutcome)),
    tags((name = "traces", description = "OTLP trace ingest: OpenTelemetry GenAI spans into trajectories"))
)]
struct TracesApi;

/// The trace routes and their OpenAPI document.
pub fn service(state: TracesState) -> Service {
    let router = Router::new()
        .route("/v1/traces", post(routes::export))
        .route("/v1/traces/conversations/{id}/end", post(routes::end))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES));
    let configs = ConfigApi {
        path: "/v1/config/traces",
        tag: "traces",
        what: "trace ingest settings: how long a conversation stays quiet before it is ingested",
        parse: |config: TracesConfig| {
            config.validate()?;
            Ok(config)
        },
        show: TracesConfig::clone,
    }
    .service(state.configs.clone());
    Service {
        router: router.with_state(state),
        openapi: TracesApi::openapi(),
    }
    .merge(configs)
}
