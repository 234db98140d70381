//! The diff-score service: score an agent's code change for minimality and reward hacking.
//!
//! `service()` returns the routes and their OpenAPI document; `main.rs` runs them in Lambda
//! and `agentrl serve` runs them locally.

mod routes;
mod scoring;
mod wire;

use std::sync::Arc;

use agentrl_core::FieldError;
use agentrl_diff::{Limits, Scorer, Weights};
use agentrl_http::{Service, config::ConfigApi};
use agentrl_store::{ports::Table, tenant_config::TenantConfig};
use axum::{Router, routing::post};
use utoipa::OpenApi;

/// Largest request body: Lambda's synchronous payload limit, so both snapshots of a change
/// (each file up to the per-file limit) fit in one call.
pub const MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

/// What the handlers need: the scorer (with its parse cache, shared by every request of the
/// process) and the tenants' weights.
#[derive(Clone)]
pub struct DiffState {
    scorer: Arc<Scorer>,
    weights: TenantConfig<Weights>,
    kpis: agentrl_http::kpis::KpiLedger,
}

impl DiffState {
    /// State over `table`, with the default limits.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            scorer: Arc::new(Scorer::new(Limits::default())),
            kpis: agentrl_http::kpis::KpiLedger::new(table.clone()),
            weights: TenantConfig::new(table, agentrl_diff::WEIGHTS_CONFIG),
        }
    }

    /// The same state, emitting its KPI counts (scored changes, reward hacking) in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: agentrl_http::Metrics) -> Self {
        self.kpis = self.kpis.with_metrics(metrics);
        self
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(routes::score::score),
    tags((name = "diffs", description = "Minimal-diff scoring and reward-hacking detection"))
)]
struct DiffApi;

/// The diff-score routes and their OpenAPI document.
pub fn service(state: DiffState) -> Service {
    let router = Router::new()
        .route("/v1/diffs/score", post(routes::score::score))
        // These routes keep its own limit, whatever the composed app allows.
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES));
    let configs = ConfigApi {
        path: "/v1/config/diffs",
        tag: "diffs",
        what: "reward-multiplier weights",
        parse: |weights: Weights| {
            weights
                .validate()
                .map_err(|e| FieldError::new(e.field, e.reason))?;
            Ok(weights)
        },
        show: Weights::clone,
    }
    .service(state.weights.clone());
    Service {
        router: router.with_state(state),
        openapi: DiffApi::openapi(),
    }
    .merge(configs)
}
