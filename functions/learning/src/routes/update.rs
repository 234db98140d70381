//! `POST /v1/agents/{id}/learning/update`: run the policy update for one agent now.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{LearningState, UpdateReport};

/// Run the agent's policy update now, as the schedule and the feedback threshold do: apply
/// the plan (or, in shadow mode, only record it), freeze on sustained negative sentiment,
/// queue dataset generation when due.
#[utoipa::path(post, path = "/v1/agents/{id}/learning/update", tag = "learning",
    params(("id" = String, Path, description = "The agent id")),
    responses(
        (status = 200, description = "What the update did", body = UpdateReport),
        (status = 404, description = "No events for this agent in this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn update(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    Path(agent): Path<String>,
) -> Result<Json<UpdateReport>, ApiError> {
    state
        .policy
        .update(&tenant, &agent)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("agent"))
}
