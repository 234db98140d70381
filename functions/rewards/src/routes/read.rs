//! `GET /v1/executions/{id}`.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{
    RewardState,
    executions::{self, ReadError},
    wire::ExecutionView,
};

impl From<ReadError> for ApiError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NotFound => ApiError::not_found("execution"),
            ReadError::Store(e) => e.into(),
        }
    }
}

/// Read an execution, with its verification count and current reward.
#[utoipa::path(get, path = "/v1/executions/{id}", tag = "rewards",
    params(("id" = String, Path, description = "The execution id")),
    responses(
        (status = 200, description = "The execution", body = ExecutionView),
        (status = 404, description = "No such execution for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<ExecutionView>, ApiError> {
    let execution = executions::read(&state.repo, &tenant, &id).await?;
    Ok(Json(execution.into()))
}
