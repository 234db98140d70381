//! `GET /v1/executions/{id}`.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{RewardState, wire::Execution};

/// Read an execution, with its verification count and current reward.
#[utoipa::path(get, path = "/v1/executions/{id}", tag = "rewards",
    params(("id" = String, Path, description = "The execution id")),
    responses(
        (status = 200, description = "The execution", body = Execution),
        (status = 404, description = "No such execution for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<Execution>, ApiError> {
    let (execution, _) = state
        .repo
        .execution(&tenant, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("execution"))?;
    Ok(Json(execution))
}
