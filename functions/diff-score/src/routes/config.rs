//! `GET` and `PUT /v1/config/diffs`: the tenant's reward-multiplier weights.

use agentrl_diff::Weights;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State};

use crate::DiffState;

/// Read the tenant's weights (the source design's defaults until some are put).
#[utoipa::path(get, path = "/v1/config/diffs", tag = "diffs",
    responses((status = 200, description = "The weights in force", body = Weights)))]
pub(crate) async fn get_config(
    State(state): State<DiffState>,
    Tenant(tenant): Tenant,
) -> Result<Json<Weights>, ApiError> {
    Ok(Json(state.weights.get(&tenant).await?))
}

/// Replace the tenant's weights; omitted fields take the defaults.
#[utoipa::path(put, path = "/v1/config/diffs", tag = "diffs",
    request_body = Weights,
    responses(
        (status = 200, description = "The weights now in force", body = Weights),
        (status = 400, description = "A weight out of range (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn put_config(
    State(state): State<DiffState>,
    Tenant(tenant): Tenant,
    ValidJson(weights): ValidJson<Weights>,
) -> Result<Json<Weights>, ApiError> {
    weights
        .validate()
        .map_err(|e| ApiError::invalid(e.field, e.reason))?;
    state.weights.put(&tenant, &weights).await?;
    Ok(Json(weights))
}
