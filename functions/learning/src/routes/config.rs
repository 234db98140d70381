//! `GET` and `PUT /v1/config/learning`: reward weights, decay, thresholds and policy bounds.

use agentrl_core::learning::LearningConfig;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State};

use crate::LearningState;

/// Read the tenant's learning settings (defaults until some are put).
#[utoipa::path(get, path = "/v1/config/learning", tag = "learning",
    responses((status = 200, description = "The settings in force", body = Object)))]
pub(crate) async fn get_config(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
) -> Result<Json<LearningConfig>, ApiError> {
    Ok(Json(state.repo.config(&tenant).await?))
}

/// Replace the tenant's learning settings: `rewards` (event reward weights),
/// `half_life_days`, the high-quality rules, `policy` (learning rate, trait bounds, freeze
/// rule, update threshold, exploration) and `dataset` (the trigger's thresholds).
#[utoipa::path(put, path = "/v1/config/learning", tag = "learning",
    request_body(content = Object, description = "LearningConfig (docs/learning.md)"),
    responses(
        (status = 200, description = "The settings now in force", body = Object),
        (status = 400, description = "A value out of range (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn put_config(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    ValidJson(config): ValidJson<LearningConfig>,
) -> Result<Json<LearningConfig>, ApiError> {
    config.validate()?;
    state.repo.put_config(&tenant, &config).await?;
    Ok(Json(config))
}
