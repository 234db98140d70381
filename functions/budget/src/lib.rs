//! The thinking-budget service: allocate a token budget per task, take consumption
//! reports from the running agent, escalate on triggers, hand over to a human past the
//! loop limit, and learn allocations from completed budgets.
//!
//! `service()` returns the routes and their OpenAPI document; `main.rs` runs them in
//! Lambda and `agentrl serve` runs them locally.

mod budgets;
mod ledger;
mod repo;
mod routes;
mod wire;

use wire::BudgetConfigBody;

use std::sync::Arc;

use agentrl_http::{Service, config::ConfigApi, kpis::KpiLedger};
use agentrl_store::ports::Table;
use axum::{
    Router,
    routing::{get, post},
};
use utoipa::OpenApi;

pub use budgets::ReportError;
pub use ledger::Ledger;
pub use repo::BudgetRepo;

/// What the handlers need.
#[derive(Clone)]
pub struct BudgetState {
    repo: BudgetRepo,
    kpis: KpiLedger,
}

impl BudgetState {
    /// State over `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            kpis: KpiLedger::new(table.clone()),
            repo: BudgetRepo::new(table),
        }
    }

    /// The same state, emitting its KPI counts (closed budgets) in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: agentrl_http::Metrics) -> Self {
        self.kpis = self.kpis.with_metrics(metrics);
        self
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::create::create,
        routes::read::read,
        routes::read::list,
        routes::consume::consume,
        routes::complete::complete,
    ),
    tags((name = "budgets", description = "Thinking budgets"))
)]
struct BudgetApi;

/// The document, with links from a created budget to the routes that take its id.
fn document() -> utoipa::openapi::OpenApi {
    let mut doc = BudgetApi::openapi();
    agentrl_http::link_ids(
        &mut doc,
        ("post", "/v1/budgets"),
        "201",
        "budget_id",
        &[
            ("get", "/v1/budgets/{id}", "id"),
            ("post", "/v1/budgets/{id}/consumption", "id"),
            ("post", "/v1/budgets/{id}/complete", "id"),
        ],
    );
    doc
}

/// The budget routes and their OpenAPI document.
pub fn service(state: BudgetState) -> Service {
    let router = Router::new()
        .route(
            "/v1/budgets",
            post(routes::create::create).get(routes::read::list),
        )
        .route("/v1/budgets/{id}", get(routes::read::read))
        .route(
            "/v1/budgets/{id}/consumption",
            post(routes::consume::consume),
        )
        .route(
            "/v1/budgets/{id}/complete",
            post(routes::complete::complete),
        )
        // These routes keep the default limit, whatever envelope the composed app allows.
        .layer(axum::extract::DefaultBodyLimit::max(
            agentrl_http::DEFAULT_BODY_LIMIT,
        ));
    let configs = ConfigApi {
        path: "/v1/config/budgets",
        tag: "budgets",
        what: "budget configuration: tiers, triggers, ceilings, loop limit, adaptive allocation",
        parse: BudgetConfigBody::into_domain,
        show: BudgetConfigBody::from_domain,
    }
    .service(state.repo.configs());
    Service {
        router: router.with_state(state),
        openapi: document(),
    }
    .merge(configs)
}
