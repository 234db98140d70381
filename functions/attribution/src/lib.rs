//! The attribution service: Shapley credit across the agents of a task, reward shaping,
//! interactive sampling for teams whose coalition values are measured, and contribution
//! tracking with rankings. The maths is `agentrl_core::attribution`; this crate is wire
//! types, storage layout and handlers (see `docs/attribution.md`).
//!
//! Limits, all enforced with a 400 naming the field (the body itself is capped at the shared
//! 1 MiB, 413):
//! - agents per attribution or session: [`MAX_AGENTS`] (1000), ids 1 to
//!   [`MAX_AGENT_ID_CHARS`] characters, unique; task ids 1 to [`MAX_TASK_ID_CHARS`];
//! - a coalition table: at most 20 agents and [`MAX_COALITION_ENTRIES`] (2^20) entries, and
//!   complete (every non-empty coalition has a value; v(∅) defaults to 0);
//! - sampling: `max_permutations` ≤ [`MAX_PERMUTATIONS`] and ≤ [`MAX_SAMPLING_WORK`] divided by
//!   the cost of one permutation (n for tables and additive games, n² for pairwise ones), so
//!   no request needs a deadline beyond these caps;
//! - interactive sessions: `batch_size` ≤ [`MAX_BATCH_SIZE`], and the persisted session state
//!   ≤ [`MAX_SESSION_BYTES`] (it is stored in parts of at most [`SESSION_PART_BYTES`]);
//! - contributions: `impact_multiplier` ≤ [`MAX_IMPACT_MULTIPLIER`], so every score is finite;
//! - contribution history: [`DEFAULT_CONTRIBUTION_CAP`] entries per tenant, oldest dropped.
//!
//! `service()` returns the routes and their OpenAPI document; `main.rs` runs them in Lambda
//! and `agentrl serve` can run them locally.

mod attributions;
mod compute;
mod model;
mod repo;
mod routes;
mod sessions;
mod wire;

use std::sync::Arc;

use agentrl_core::attribution::RankBy;
use agentrl_http::Service;
use agentrl_store::ports::Table;
use axum::{
    Router,
    routing::{get, post},
};
use utoipa::OpenApi;

pub use repo::AttributionRepo;

/// Most agents in one attribution or session.
pub const MAX_AGENTS: usize = 1_000;
/// Longest agent id, in characters.
pub const MAX_AGENT_ID_CHARS: usize = 128;
/// Longest task id, in characters.
pub const MAX_TASK_ID_CHARS: usize = 256;
/// Most entries of a coalition table (2^20: every coalition of 20 agents).
pub const MAX_COALITION_ENTRIES: usize = 1 << 20;
/// Hard cap on `max_permutations`.
pub const MAX_PERMUTATIONS: u64 = 1_000_000;
/// Default `max_permutations`.
pub const DEFAULT_MAX_PERMUTATIONS: u64 = 10_000;
/// Permutations before the stopping rule is consulted (or `max_permutations` if smaller).
pub const MIN_PERMUTATIONS: u64 = 100;
/// Largest `max_permutations` × (cost of one permutation) accepted for sampling.
pub const MAX_SAMPLING_WORK: u64 = 2_000_000_000;
/// Seed used when a request gives none, so the same request gives the same estimates.
pub const DEFAULT_SEED: u64 = 0;
/// Default relative target error of the stopping rule.
pub const DEFAULT_TARGET_ERROR: f64 = 0.01;
/// Default coalitions per interactive batch.
pub const DEFAULT_BATCH_SIZE: usize = 32;
/// Most coalitions per interactive batch.
pub const MAX_BATCH_SIZE: usize = 1_000;
/// Largest persisted interactive session state, in bytes of JSON.
pub const MAX_SESSION_BYTES: usize = 3_000_000;
/// Largest part of a session state stored in one item (DynamoDB items are ≤ 400 KB).
pub const SESSION_PART_BYTES: usize = 300_000;
/// Largest `impact_multiplier`: with the effort floor of 10⁻⁶ a score stays within ±10¹², so
/// no score, and no ranking's sum of them, overflows.
pub const MAX_IMPACT_MULTIPLIER: f64 = 1e6;
/// Contributions kept per tenant by default; older ones are deleted first.
pub const DEFAULT_CONTRIBUTION_CAP: u64 = 100_000;

/// What the handlers need.
#[derive(Clone)]
pub struct AttributionState {
    repo: AttributionRepo,
}

impl AttributionState {
    /// State over `table` with the default contribution history cap.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self::with_contribution_cap(table, DEFAULT_CONTRIBUTION_CAP)
    }

    /// State over `table` keeping at most `cap` (≥ 1) contributions per tenant.
    pub fn with_contribution_cap(table: Arc<dyn Table>, cap: u64) -> Self {
        Self {
            repo: AttributionRepo::new(table, cap.max(1)),
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(
        routes::create::create,
        routes::read::read,
        routes::export::export,
        routes::stats::stats,
        routes::session::create_session,
        routes::session::read_session,
        routes::session_values::post_values,
        routes::contribute::contribute,
        routes::ranking::ranking,
    ),
    // Named by the ranking's `by` query parameter, which utoipa does not collect.
    components(schemas(RankBy)),
    tags((name = "attribution", description = "Shapley credit, reward shaping and contribution tracking"))
)]
struct AttributionApi;

/// The document, with links from the created attribution and session to their routes.
fn document() -> utoipa::openapi::OpenApi {
    let mut doc = AttributionApi::openapi();
    agentrl_http::link_ids(
        &mut doc,
        ("post", "/v1/attributions"),
        "201",
        "task_id",
        &[("get", "/v1/attributions/{task_id}", "task_id")],
    );
    agentrl_http::link_ids(
        &mut doc,
        ("post", "/v1/attributions/sessions"),
        "201",
        "session_id",
        &[
            ("get", "/v1/attributions/sessions/{id}", "id"),
            ("post", "/v1/attributions/sessions/{id}/values", "id"),
        ],
    );
    doc
}

/// The attribution routes and their OpenAPI document.
pub fn service(state: AttributionState) -> Service {
    let router = Router::new()
        .route(
            "/v1/attributions",
            post(routes::create::create).get(routes::export::export),
        )
        .route("/v1/attributions/stats", get(routes::stats::stats))
        .route(
            "/v1/attributions/sessions",
            post(routes::session::create_session),
        )
        .route(
            "/v1/attributions/sessions/{id}",
            get(routes::session::read_session),
        )
        .route(
            "/v1/attributions/sessions/{id}/values",
            post(routes::session_values::post_values),
        )
        .route("/v1/attributions/{task_id}", get(routes::read::read))
        .route("/v1/contributions", post(routes::contribute::contribute))
        .route("/v1/agents/ranking", get(routes::ranking::ranking))
        .with_state(state)
        // These routes keep the default limit, whatever envelope the composed app allows.
        .layer(axum::extract::DefaultBodyLimit::max(
            agentrl_http::DEFAULT_BODY_LIMIT,
        ));
    Service {
        router,
        openapi: document(),
    }
}
