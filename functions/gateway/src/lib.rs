//! The gateway: one OpenAI-compatible URL per agent. Each session is routed to its model
//! version (the canary rule, keyed by the session, pinned at its first call), the call goes
//! to the tenant's upstream unchanged but for `model` (and a request for token ids and
//! logprobs, and a completion limit when a thinking budget governs it), the answer comes
//! back unchanged, and the call is recorded behind it. Ending a session turns its calls into
//! trajectories on the ingest path. See `docs/gateway.md`.

mod budget;
mod ending;
mod routes;
mod serving;
mod sessions;
mod upstream;

use std::sync::Arc;

use agentrl_core::gateway::GatewayConfig;
use agentrl_http::{Service, config::ConfigApi, kpis::KpiLedger};
use agentrl_store::ports::{Objects, Queue, Table};
use agentrl_store::tenant_config::TenantConfig;
use axum::Router;
use axum::routing::{get, post};
use utoipa::OpenApi;

pub use ending::IdleSweep;
pub use serving::copy_files;
pub use sessions::Recorder;
pub use upstream::{OpenAiError, Upstream};

/// The largest chat request the gateway takes (long agent contexts).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// What the gateway's handlers need.
#[derive(Clone)]
pub struct GatewayState {
    table: Arc<dyn Table>,
    objects: Arc<dyn Objects>,
    queue: Arc<dyn Queue>,
    configs: TenantConfig<GatewayConfig>,
    upstream: Upstream,
    recorder: Recorder,
    kpis: KpiLedger,
    ledger: agentrl_budget::Ledger,
    /// Where adapters are copied before they are loaded (see [`GatewayState::with_adapter_sync`]).
    adapter_sync: Option<std::path::PathBuf>,
    /// An answer is complete only once its record is written and its usage charged (see
    /// [`GatewayState::records_before_done`]).
    records_before_done: bool,
}

impl GatewayState {
    /// State over the stores (agents and sessions in `table`, call records in `objects`,
    /// ended sessions to `queue`), calling `upstream` when a tenant names none. Starts the
    /// call recorder on the current Tokio runtime.
    #[must_use]
    pub fn new(
        table: Arc<dyn Table>,
        objects: Arc<dyn Objects>,
        queue: Arc<dyn Queue>,
        upstream: Upstream,
    ) -> Self {
        Self {
            configs: TenantConfig::new(table.clone(), "gateway"),
            kpis: KpiLedger::new(table.clone()),
            ledger: agentrl_budget::Ledger::new(table.clone()),
            adapter_sync: None,
            records_before_done: false,
            recorder: Recorder::start(objects.clone()),
            table,
            objects,
            queue,
            upstream,
        }
    }
}

impl GatewayState {
    /// The same state, finishing each answer only once its call record is written and its
    /// usage charged: for Lambda, which may freeze the process as soon as the answer is out,
    /// so nothing can be left to a background writer. (`agentrl serve` answers first.)
    #[must_use]
    pub fn records_before_done(mut self) -> Self {
        self.records_before_done = true;
        self
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::chat::chat,
        routes::chat::chat_in_session,
        routes::models::models,
        routes::models::models_in_session,
        routes::end::end,
    ),
    components(schemas(agentrl_core::gateway::SessionEnd, agentrl_core::gateway::ChoiceOutcome)),
    tags((name = "gateway", description = "The OpenAI-compatible gateway: base URL /gateway/{agent_id}/v1"))
)]
struct GatewayApi;

/// The gateway routes and their OpenAPI document.
pub fn service(state: GatewayState) -> Service {
    let router = Router::new()
        .route(
            "/gateway/{agent_id}/v1/chat/completions",
            post(routes::chat::chat),
        )
        .route(
            "/gateway/{agent_id}/sessions/{session_id}/v1/chat/completions",
            post(routes::chat::chat_in_session),
        )
        .route("/gateway/{agent_id}/v1/models", get(routes::models::models))
        .route(
            "/gateway/{agent_id}/sessions/{session_id}/v1/models",
            get(routes::models::models_in_session),
        )
        .route(
            "/gateway/{agent_id}/sessions/{session_id}/end",
            post(routes::end::end),
        )
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES));
    let configs = ConfigApi {
        path: "/v1/config/gateway",
        tag: "gateway",
        what: "gateway settings: the upstream, its timeout, session idle timeout, token ids",
        parse: |config: GatewayConfig| {
            config.validate()?;
            Ok(config)
        },
        show: GatewayConfig::clone,
    }
    .service(state.configs.clone());
    Service {
        router: router.with_state(state),
        openapi: GatewayApi::openapi(),
    }
    .merge(configs)
}
