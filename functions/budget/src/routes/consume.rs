//! `POST /v1/budgets/{id}/consumption`: apply a report exactly once ([`budgets::report`]).

use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};

use crate::{
    BudgetState,
    budgets::{self, ReportError},
    wire::{ConsumptionBody, DecisionView},
};

impl From<ReportError> for ApiError {
    fn from(e: ReportError) -> Self {
        match e {
            ReportError::NotFound => ApiError::not_found("budget"),
            ReportError::Closed(_) => ApiError::conflict(e.to_string()),
            ReportError::ReportReused => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
                    .with_field("report_id")
            }
            ReportError::Contended => ApiError::conflict(format!("{e}; retry")),
            ReportError::Store(e) => e.into(),
        }
    }
}

/// Report token consumption.
///
/// Tokens past the ceiling are not accepted (`EXHAUSTED`). The same `report_id` twice
/// counts once and returns the same answer; with a different body it is refused (422).
#[utoipa::path(post, path = "/v1/budgets/{id}/consumption", tag = "budgets",
    params(("id" = String, Path, description = "The budget id")),
    request_body = ConsumptionBody,
    responses(
        (status = 200, description = "What the agent should do next", body = DecisionView),
        (status = 400, description = "Invalid body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such budget for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The budget is completed or handed to a human", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "report_id reused with a different body", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(budget_id = %id, report_id = %body.report_id))]
pub(crate) async fn consume(
    State(state): State<BudgetState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    ValidJson(body): ValidJson<ConsumptionBody>,
) -> Result<Json<DecisionView>, ApiError> {
    let report = body.try_into()?;
    let decision = budgets::report(&state.repo, &tenant, &id, &report).await?;
    Ok(Json(DecisionView::from(&decision)))
}
