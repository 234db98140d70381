//! `GET` and `PUT /v1/config/budgets`: the tenant's budget configuration.

use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State};

use crate::{BudgetState, wire::BudgetConfigBody};

/// Read the tenant's budget configuration (the defaults until one is put).
#[utoipa::path(get, path = "/v1/config/budgets", tag = "budgets",
    responses((status = 200, description = "The configuration in force", body = BudgetConfigBody)))]
pub(crate) async fn get_config(
    State(state): State<BudgetState>,
    Tenant(tenant): Tenant,
) -> Result<Json<BudgetConfigBody>, ApiError> {
    let config = state.repo.config(&tenant).await?;
    Ok(Json(BudgetConfigBody::from_domain(&config)))
}

/// Replace the tenant's budget configuration; omitted fields take the defaults.
///
/// Validated as a whole: each tier's base ≤ its ceiling ≤ the hard ceiling, thresholds in
/// range, adaptive settings consistent. The answer is the configuration now in force.
#[utoipa::path(put, path = "/v1/config/budgets", tag = "budgets",
    request_body = BudgetConfigBody,
    responses(
        (status = 200, description = "The configuration now in force", body = BudgetConfigBody),
        (status = 400, description = "A value out of range (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn put_config(
    State(state): State<BudgetState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<BudgetConfigBody>,
) -> Result<Json<BudgetConfigBody>, ApiError> {
    let config = body.into_domain()?;
    state.repo.put_config(&tenant, &config).await?;
    Ok(Json(BudgetConfigBody::from_domain(&config)))
}
