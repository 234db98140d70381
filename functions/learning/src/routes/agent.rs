//! `GET /v1/agents/{id}/learning`: everything the events taught about an agent.

use agentrl_core::learning::{AgentProjection, AgentSettings, Relationship};
use agentrl_http::{ApiError, Problem, Tenant};
use agentrl_store::retry::now_ms;
use axum::{
    Json,
    extract::{Path, State},
};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{LearningState, repo::ShadowEntry};

/// Relationships listed with an agent (the strongest).
const RELATIONSHIPS_SHOWN: usize = 20;

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
        (status = 200, description = "The agent's learning state", body = LearningView),
        (status = 404, description = "No events for this agent in this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    Path(agent): Path<String>,
) -> Result<Json<LearningView>, ApiError> {
    let (doc, Some(_)) = state.repo.agent(&tenant, &agent).await? else {
        return Err(ApiError::not_found("agent"));
    };
    let config = state.repo.config(&tenant).await?;
    let mut projection = doc.projection;
    // Expired high-quality interactions and old days are dropped as of now, not as of the
    // last event.
    projection.prune(i64::try_from(now_ms()).unwrap_or(i64::MAX), &config);
    let relationships = state
        .repo
        .relationships(&tenant, &agent, RELATIONSHIPS_SHOWN)
        .await?
        .into_iter()
        .map(|(user_id, relationship)| RelationshipView {
            user_id,
            relationship,
        })
        .collect();
    Ok(Json(LearningView {
        agent_id: agent,
        projection,
        settings: doc.settings,
        relationships,
        shadow_log: doc.shadow_log,
        pending: doc.pending,
    }))
}
