//! `GET /v1/agents/ranking`: agents ranked by their contribution scores over a window.

use agentrl_core::attribution::RankBy;
use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Query, State},
};
use serde::Deserialize;

use super::{DEFAULT_LIMIT, MAX_LIMIT, limit, now_ms, window};
use crate::{AttributionState, attributions, wire::RankView};

/// Default window: the last 30 days.
const DEFAULT_WINDOW_MS: u64 = 30 * 24 * 3600 * 1000;

/// Query string of the ranking.
#[derive(Debug, Deserialize)]
pub(crate) struct RankingParams {
    from: Option<String>,
    to: Option<String>,
    by: Option<String>,
    limit: Option<String>,
}

/// Rank agents by contribution score.
///
/// Over contributions with `timestamp_ms` in `[from, to)` (default: the last 30 days, no upper
/// bound), by total score (`by=sum`, default) or mean score per contribution (`by=mean`);
/// ties are broken by agent id. At most `limit` agents (default 100, at most 1000).
#[utoipa::path(get, path = "/v1/agents/ranking", tag = "attribution",
    params(
        ("from" = Option<u64>, Query, description = "Earliest timestamp_ms (inclusive; default now − 30 days)"),
        ("to" = Option<u64>, Query, description = "Latest timestamp_ms (exclusive; default none)"),
        ("by" = Option<RankBy>, Query, description = "sum (default) or mean"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Agents returned (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "Best first", body = Vec<RankView>),
        (status = 400, description = "A bad number or `by`", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn ranking(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    Query(params): Query<RankingParams>,
) -> Result<Json<Vec<RankView>>, ApiError> {
    let (from, to) = window(
        params.from.as_deref(),
        params.to.as_deref(),
        now_ms().saturating_sub(DEFAULT_WINDOW_MS),
    )?;
    let by = match params.by.as_deref() {
        None | Some("sum") => RankBy::Sum,
        Some("mean") => RankBy::Mean,
        Some(_) => return Err(ApiError::invalid("by", "must be sum or mean")),
    };
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let ranked = attributions::ranking(&state.repo, &tenant, (from, to), by, limit)
        .await?
        .into_iter()
        .enumerate()
        .map(|(k, (agent_id, a))| RankView {
            rank: k + 1,
            agent_id,
            score: a.sum,
            count: a.count,
            mean: a.mean,
        })
        .collect();
    Ok(Json(ranked))
}
