//! `GET /v1/agents/ranking`: agents ranked by their contribution scores over a window.

use std::collections::{BTreeMap, BTreeSet};

use agentrl_core::attribution::{Contribution, ContributionTracker, RankBy, Window};
use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Query, State},
};
use serde::Deserialize;

use super::{DEFAULT_LIMIT, MAX_LIMIT, limit, now_ms, window};
use crate::{AttributionState, wire::RankView};

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
        ("by" = Option<String>, Query, description = "sum (default) or mean"),
        ("limit" = Option<usize>, Query, description = "Agents returned (default 100, at most 1000)"),
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
    let entries = state.repo.contributions(&tenant, (from, to)).await?;
    // Agents are numbered in id order, so the domain's tie-break by index is by id.
    let ids: BTreeSet<&str> = entries.iter().map(|e| e.agent_id.as_str()).collect();
    let names: Vec<&str> = ids.into_iter().collect();
    let index: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut tracker =
        ContributionTracker::new(entries.len().max(1)).map_err(|e| ApiError::internal(&e))?;
    for e in &entries {
        tracker
            .record(Contribution {
                agent: index[e.agent_id.as_str()],
                timestamp_ms: e.timestamp_ms,
                quality_before: e.quality_before,
                quality_after: e.quality_after,
                impact_multiplier: e.impact_multiplier,
                effort_ratio: e.effort_ratio,
            })
            .map_err(|e| ApiError::internal(&e))?;
    }
    let window = Window::new(from, to).map_err(|e| ApiError::invalid("from", e.to_string()))?;
    let ranked = tracker
        .ranking(window, by)
        .into_iter()
        .take(limit)
        .enumerate()
        .map(|(k, a)| RankView {
            rank: k + 1,
            agent_id: names[a.agent].to_owned(),
            score: a.sum,
            count: a.count,
            mean: a.mean,
        })
        .collect();
    Ok(Json(ranked))
}
