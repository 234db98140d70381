//! `GET /v1/executions/{id}/reward`: the composite reward and every verification behind it.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{
    RewardState, executions,
    wire::{RewardView, VerificationView},
};

/// The composite reward of an execution.
///
/// The confidence-weighted average of its `ok` verifications; abstentions and errors are
/// listed but never scored; any safety violation sets the reward to 0, the minimum.
#[utoipa::path(get, path = "/v1/executions/{id}/reward", tag = "rewards",
    params(("id" = String, Path, description = "The execution id")),
    responses(
        (status = 200, description = "The reward and its verifications", body = RewardView),
        (status = 404, description = "No such execution for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn reward(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<RewardView>, ApiError> {
    let (execution, c, verifications) = executions::reward(&state.repo, &tenant, &id).await?;
    Ok(Json(RewardView {
        execution_id: execution.execution_id,
        agent_id: execution.agent_id,
        reward: c.reward,
        confidence: c.confidence,
        safety_override: c.safety_override,
        ok: c.ok,
        abstained: c.abstained,
        errored: c.errored,
        example_type: execution.example_type,
        verifications: verifications.iter().map(VerificationView::from).collect(),
    }))
}
