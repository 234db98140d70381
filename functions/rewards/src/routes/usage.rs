//! `GET /v1/judges/usage`.

use std::collections::BTreeMap;

use agentrl_http::{ApiError, Problem, Tenant, query::window};
use axum::{
    Json,
    extract::{Query, State},
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use agentrl_judges::ModelUsage;

use crate::RewardState;

/// Query string.
#[derive(Debug, Deserialize)]
pub(crate) struct UsageParams {
    from: Option<String>,
    to: Option<String>,
}

/// Judge usage and cost over a window.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UsageReport {
    /// Epoch ms, inclusive.
    pub from: u64,
    /// Epoch ms, exclusive; `null` when the window is open-ended.
    pub to: Option<u64>,
    /// By model.
    pub models: BTreeMap<String, ModelUsage>,
    /// By purpose: `evaluations` (the judges of `POST /v1/evaluations`), `gates` (critic
    /// gates), `turn_rewards` (turn rewards judged at ingest, `judge_turn_rewards` in
    /// `PUT /v1/config/trajectories`); only purposes with judgments in the window appear.
    pub purposes: BTreeMap<String, ModelUsage>,
    /// All models together.
    pub total: ModelUsage,
}

/// Tokens, provider calls and cost of the tenant's judges, by model and by purpose.
///
/// Costs are computed when each judgment is made, at the tenant's `prices` of that time
/// (`PUT /v1/config/judges`); judgments of unpriced models are counted apart.
#[utoipa::path(get, path = "/v1/judges/usage", tag = "judges",
    params(
        ("from" = Option<u64>, Query, description = "Epoch ms, inclusive (default 0)"),
        ("to" = Option<u64>, Query, description = "Epoch ms, exclusive (default: now and later)"),
    ),
    responses(
        (status = 200, description = "Usage by model", body = UsageReport),
        (status = 400, description = "A malformed bound (a reversed window is empty)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn usage(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Query(params): Query<UsageParams>,
) -> Result<Json<UsageReport>, ApiError> {
    let (from, to) = window(params.from.as_deref(), params.to.as_deref(), 0)?;
    let usage = state.judges.usage(&tenant, from, to).await?;
    let mut total = ModelUsage::default();
    for m in usage.models.values() {
        total.add(m);
    }
    Ok(Json(UsageReport {
        from,
        to: agentrl_http::query::shown_end(to),
        models: usage.models,
        purposes: usage.purposes,
        total,
    }))
}
