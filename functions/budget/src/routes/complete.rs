//! `POST /v1/budgets/{id}/complete`: close a budget; a success teaches adaptive allocation.

use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{
    BudgetState,
    budgets::{self, CompleteError},
    wire::{BudgetView, CompleteBody},
};

impl From<CompleteError> for ApiError {
    fn from(e: CompleteError) -> Self {
        match e {
            CompleteError::NotFound => ApiError::not_found("budget"),
            CompleteError::OtherOutcome(_) => {
                ApiError::conflict(e.to_string()).with_field("outcome")
            }
            CompleteError::Contended => ApiError::conflict(format!("{e}; retry")),
            CompleteError::Store(e) => e.into(),
        }
    }
}

/// Complete a budget with the task's outcome.
///
/// Completing again with the same outcome returns the budget unchanged; with another
/// outcome it is a conflict. A successful budget's consumption is recorded, exactly once,
/// in the history adaptive allocation learns from.
#[utoipa::path(post, path = "/v1/budgets/{id}/complete", tag = "budgets",
    params(("id" = String, Path, description = "The budget id")),
    request_body = CompleteBody,
    responses(
        (status = 200, description = "The completed budget", body = BudgetView),
        (status = 404, description = "No such budget for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Already completed with another outcome", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(budget_id = %id))]
pub(crate) async fn complete(
    State(state): State<BudgetState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    ValidJson(body): ValidJson<CompleteBody>,
) -> Result<Json<BudgetView>, ApiError> {
    let budget = budgets::complete(&state.repo, &state.kpis, &tenant, &id, body.outcome).await?;
    Ok(Json(BudgetView::from(&budget)))
}
