//! `GET /v1/trajectories`: the tenant's trajectories from the index, newest first.

use agentrl_http::{
    ApiError, Problem, Tenant,
    query::{DEFAULT_LIMIT, MAX_LIMIT, limit, window},
};
use axum::{
    Json,
    extract::{Query, State},
};
use serde::Deserialize;

use crate::{
    TrajectoryState,
    repo::{Filter, Outcome},
    trajectories,
    wire::TrajectoryPage,
};

/// `?agent_id=&session_id=&version=&from=&to=&outcome=&cursor=&limit=`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    agent_id: Option<String>,
    session_id: Option<String>,
    version: Option<String>,
    from: Option<String>,
    to: Option<String>,
    outcome: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

/// List trajectories, newest first (by the time they were accepted).
///
/// `agent_id` and `session_id` are served by the index directly; `version` and `outcome` are
/// applied to the items read, so with them a page may hold fewer than `limit` (even none)
/// while `next_cursor` follows: keep following it. Trajectories appear once the ingest
/// worker has written them.
#[utoipa::path(get, path = "/v1/trajectories", tag = "trajectories",
    params(
        ("agent_id" = Option<String>, Query, description = "Only this agent's"),
        ("session_id" = Option<String>, Query, description = "Only this conversation's (`conversation_id`: the gateway's session id, a trace's conversation)"),
        ("version" = Option<String>, Query, description = "Only those served by this model version (`policy_version`)"),
        ("from" = Option<u64>, Query, description = "Accepted at or after (epoch ms)"),
        ("to" = Option<u64>, Query, description = "Accepted before (epoch ms)"),
        ("outcome" = Option<Outcome>, Query, description = "`success`, `failure`, or `unknown` (no final outcome posted)"),
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Trajectories per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = TrajectoryPage),
        (status = 400, description = "A bad filter, number or cursor (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list(
    State(state): State<TrajectoryState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ListParams>,
) -> Result<Json<TrajectoryPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (from, to) = window(params.from.as_deref(), params.to.as_deref(), 0)?;
    let outcome = params
        .outcome
        .as_deref()
        .map(|o| {
            Outcome::parse(o)
                .ok_or_else(|| ApiError::invalid("outcome", "must be success, failure or unknown"))
        })
        .transpose()?;
    let filter = Filter {
        agent_id: params.agent_id.as_deref(),
        conversation_id: params.session_id.as_deref(),
        policy_version: params.version.as_deref(),
        outcome,
        from,
        to,
    };
    let (summaries, next_cursor) =
        trajectories::list(state.table.as_ref(), &tenant, &filter, limit, params.cursor)
            .await
            .map_err(ApiError::from_page_query)?;
    Ok(Json(TrajectoryPage {
        trajectories: summaries.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}
