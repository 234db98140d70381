//! `GET` and `PUT /v1/config/rewards`: business-metric ranges, the judge threshold, safety
//! checks and the training-example thresholds.

use agentrl_core::verify::VerifyConfig;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State};

use crate::RewardState;

/// Read the tenant's verifier settings (defaults until some are put).
#[utoipa::path(get, path = "/v1/config/rewards", tag = "rewards",
    responses((status = 200, description = "The settings in force", body = Object)))]
pub(crate) async fn get_config(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
) -> Result<Json<VerifyConfig>, ApiError> {
    Ok(Json(state.repo.config(&tenant).await?))
}

/// Replace the tenant's verifier settings: `business_metrics` (a `min`/`max`/`weight` per
/// metric), `judge_min_confidence`, `safety_checks` and `examples` (`positive`/`negative`
/// reward thresholds).
#[utoipa::path(put, path = "/v1/config/rewards", tag = "rewards",
    request_body(content = Object, description = "VerifyConfig (docs/rewards.md)"),
    responses(
        (status = 200, description = "The settings now in force", body = Object),
        (status = 400, description = "A value out of range (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn put_config(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    ValidJson(config): ValidJson<VerifyConfig>,
) -> Result<Json<VerifyConfig>, ApiError> {
    config.validate()?;
    state.repo.put_config(&tenant, &config).await?;
    Ok(Json(config))
}
