//! `PUT /v1/agents/{id}/learning/settings` (trusted, shadow) and
//! `POST /v1/agents/{id}/learning/unfreeze` (after a review).

use agentrl_core::learning::AgentSettings;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{LearningState, agents};

/// Set an agent's operator settings: `trusted` (its autonomy may grow) and `shadow` (updates
/// are planned and recorded but not applied). Allowed before the agent's first event.
#[utoipa::path(put, path = "/v1/agents/{id}/learning/settings", tag = "learning",
    params(("id" = String, Path, description = "The agent id")),
    request_body = AgentSettings,
    responses(
        (status = 200, description = "The settings now in force", body = AgentSettings),
        (status = 400, description = "Invalid body", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn put_settings(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    Path(agent): Path<String>,
    ValidJson(settings): ValidJson<AgentSettings>,
) -> Result<Json<AgentSettings>, ApiError> {
    let settings = agents::put_settings(&state.repo, &tenant, &agent, settings).await?;
    Ok(Json(settings))
}

/// Lift a freeze after review: updates apply again from the next run.
#[utoipa::path(post, path = "/v1/agents/{id}/learning/unfreeze", tag = "learning",
    params(("id" = String, Path, description = "The agent id")),
    responses(
        (status = 200, description = "The agent's settings; it is no longer frozen", body = AgentSettings),
        (status = 404, description = "No such agent in this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn unfreeze(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    Path(agent): Path<String>,
) -> Result<Json<AgentSettings>, ApiError> {
    let settings = agents::unfreeze(&state.repo, &tenant, &agent).await?;
    Ok(Json(settings))
}
