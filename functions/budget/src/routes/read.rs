//! `GET /v1/budgets/{id}`.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{
    BudgetState,
    budgets::{self, ReadError},
    wire::BudgetView,
};

impl From<ReadError> for ApiError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NotFound => ApiError::not_found("budget"),
            ReadError::Store(e) => e.into(),
        }
    }
}

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
    let budget = budgets::read(&state.repo, &tenant, &id).await?;
    Ok(Json(BudgetView::from(&budget)))
}
