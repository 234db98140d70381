//! `GET /v1/agents/{id}/learning`: everything the events taught about an agent.

use agentrl_core::learning::{AgentProjection, AgentSettings, Relationship};
use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{LearningState, agents, repo::ShadowEntry};

/// One user's relationship with the agent.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RelationshipView {
    user_id: String,
    #[serde(flatten)]
    #[schema(value_type = Object)]
    relationship: Relationship,
}

/// The agent's learning state.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LearningView {
    agent_id: String,
    /// Summary (traits, action policy, ε), `feedback` (with `positive_count`,
    /// `negative_count`, `avg_score`, the Wilson lower bound, decayed figures and the
    /// high-quality interactions), `behaviour`, the learning version and the freeze state.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    projection: AgentProjection,
    #[schema(value_type = Object)]
    settings: AgentSettings,
    /// The strongest relationships, strongest first.
    relationships: Vec<RelationshipView>,
    /// What shadow-mode updates would have done, oldest first.
    #[schema(value_type = Vec<Object>)]
    shadow_log: Vec<ShadowEntry>,
    /// Whether changes await the policy loop.
    pending: bool,
}

/// Read an agent's projections: summary, feedback aggregation, relationships, behaviour.
#[utoipa::path(get, path = "/v1/agents/{id}/learning", tag = "learning",
    params(("id" = String, Path, description = "The agent id")),
    responses(
        (status = 200, description = "The agent's learning state (empty for a registered agent with no events yet)", body = LearningView),
        (status = 404, description = "No events for this agent in this tenant, and no such agent registered", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    Path(agent): Path<String>,
) -> Result<Json<LearningView>, ApiError> {
    let learned = agents::read(&state.repo, &tenant, &agent).await?;
    Ok(Json(LearningView {
        agent_id: agent,
        projection: learned.projection,
        settings: learned.settings,
        relationships: learned
            .relationships
            .into_iter()
            .map(|(user_id, relationship)| RelationshipView {
                user_id,
                relationship,
            })
            .collect(),
        shadow_log: learned.shadow_log,
        pending: learned.pending,
    }))
}
