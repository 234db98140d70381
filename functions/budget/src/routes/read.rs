//! `GET /v1/budgets/{id}`.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{BudgetState, wire::BudgetView};

/// Read a budget.
#[utoipa::path(get, path = "/v1/budgets/{id}", tag = "budgets",
    params(("id" = String, Path, description = "The budget id")),
    responses(
        (status = 200, description = "The budget", body = BudgetView),
        (status = 404, description = "No such budget for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<BudgetState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<BudgetView>, ApiError> {
    let (budget, _) = state
        .repo
        .budget(&tenant, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("budget"))?;
    Ok(Json(BudgetView::from(&budget)))
}
