//! `GET /v1/budgets/{id}` and `GET /v1/budgets`.

use agentrl_http::{
    ApiError, Problem, Tenant,
    query::{DEFAULT_LIMIT, MAX_LIMIT, limit},
};
use axum::{
    Json,
    extract::{Path, Query, State},
};
use serde::Deserialize;

use crate::{
    BudgetState,
    budgets::{self, ReadError},
    wire::{BudgetPage, BudgetView},
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

/// `?cursor=&limit=`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    cursor: Option<String>,
    limit: Option<String>,
}

/// List the tenant's budgets, newest first.
#[utoipa::path(get, path = "/v1/budgets", tag = "budgets",
    params(
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Budgets per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = BudgetPage),
        (status = 400, description = "A bad number or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list(
    State(state): State<BudgetState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ListParams>,
) -> Result<Json<BudgetPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (budgets, next_cursor) = state
        .repo
        .list(&tenant, limit, params.cursor)
        .await
        .map_err(ApiError::from_page_query)?;
    Ok(Json(BudgetPage {
        budgets: budgets.iter().map(BudgetView::from).collect(),
        next_cursor,
    }))
}
