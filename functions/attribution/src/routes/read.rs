//! `GET /v1/attributions/{task_id}`.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{AttributionState, attributions, wire::AttributionView};

/// Read a task's attribution (the latest one posted, or a finished session's).
#[utoipa::path(get, path = "/v1/attributions/{task_id}", tag = "attribution",
    params(("task_id" = String, Path, description = "The task id")),
    responses(
        (status = 200, description = "The attribution", body = AttributionView),
        (status = 404, description = "No attribution of this task for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    Path(task_id): Path<String>,
) -> Result<Json<AttributionView>, ApiError> {
    let record = attributions::read(&state.repo, &tenant, &task_id).await?;
    Ok(Json(record.view()))
}
