//! `POST /v1/budgets`: assess the task and open a budget.

use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::State,
    http::{StatusCode, header},
};

use crate::{
    BudgetState, budgets,
    wire::{BudgetView, CreateBudgetBody},
};

/// 201 with a `Location` header and the new budget.
type Created = (
    StatusCode,
    [(header::HeaderName, String); 1],
    Json<BudgetView>,
);

/// Open a budget for a task.
///
/// The tier comes from the task's features (listed in `assessment`) unless `complexity`
/// overrides it; the allocation is the tier's base, or the learned one when adaptive
/// allocation is on for the tenant.
#[utoipa::path(post, path = "/v1/budgets", tag = "budgets",
    request_body = CreateBudgetBody,
    responses(
        (status = 201, description = "Budget opened", body = BudgetView),
        (status = 400, description = "Invalid body", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid credentials", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over the limit", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(task_id = %body.task_id))]
pub(crate) async fn create(
    State(state): State<BudgetState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<CreateBudgetBody>,
) -> Result<Created, ApiError> {
    let budget = budgets::open(&state.repo, &tenant, body.try_into()?).await?;
    let location = format!("/v1/budgets/{}", budget.budget_id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(BudgetView::from(&budget)),
    ))
}
