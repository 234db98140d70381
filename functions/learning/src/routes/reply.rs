//! `GET /v1/agents/{id}/replies/{message_id}`: a reply's reward, placeholder or from feedback.

use agentrl_core::learning::ReplyLedger;
use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{LearningState, agents};

/// Read what is known about one reply: its traits, the feedback it got, and its reward (the
/// placeholder until feedback arrives, then the mean of its feedback rewards).
#[utoipa::path(get, path = "/v1/agents/{id}/replies/{message_id}", tag = "learning",
    params(
        ("id" = String, Path, description = "The agent id"),
        ("message_id" = String, Path, description = "The reply's message id (feedback's source_id)"),
    ),
    responses(
        (status = 200, description = "The reply's record", body = Object),
        (status = 404, description = "Nothing known about this reply in this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    Path((agent, message)): Path<(String, String)>,
) -> Result<Json<ReplyLedger>, ApiError> {
    let ledger = agents::reply(&state.repo, &tenant, &agent, &message).await?;
    Ok(Json(ledger))
}
