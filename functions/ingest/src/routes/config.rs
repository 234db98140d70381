//! `GET` and `PUT /v1/config/trajectories`: turn-reward weights and differential privacy.

use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State};
use serde_json::Value;

use crate::{IngestConfig, TrajectoryState};

/// Read the tenant's ingest settings (defaults until some are put).
#[utoipa::path(get, path = "/v1/config/trajectories", tag = "trajectories",
    responses((status = 200, description = "The settings in force", body = Object)))]
pub(crate) async fn get_config(
    State(state): State<TrajectoryState>,
    Tenant(tenant): Tenant,
) -> Result<Json<IngestConfig>, ApiError> {
    Ok(Json(state.configs.get(&tenant).await?))
}

/// Replace the tenant's ingest settings: `rewards` (weights of information gain, format and
/// progress, summing to 1) and `differential_privacy` (`epsilon`, `sensitivity`, `budget`).
#[utoipa::path(put, path = "/v1/config/trajectories", tag = "trajectories",
    request_body(content = Object, description = "{\"rewards\": {...}, \"differential_privacy\": {...} | null}"),
    responses(
        (status = 200, description = "The settings now in force", body = Object),
        (status = 400, description = "A value out of range (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn put_config(
    State(state): State<TrajectoryState>,
    Tenant(tenant): Tenant,
    ValidJson(config): ValidJson<IngestConfig>,
) -> Result<Json<Value>, ApiError> {
    config
        .validate()
        .map_err(|(field, reason)| ApiError::invalid(field, reason))?;
    state.configs.put(&tenant, &config).await?;
    Ok(Json(
        serde_json::to_value(&config).map_err(|e| ApiError::internal(&e))?,
    ))
}
