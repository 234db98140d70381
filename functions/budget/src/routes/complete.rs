//! `POST /v1/budgets/{id}/complete`: close a budget; a success teaches adaptive allocation.

use agentrl_core::budget::{Outcome, Status};
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use agentrl_store::StoreError;
use axum::{
    Json,
    extract::{Path, State},
};

use super::{MAX_ATTEMPTS, back_off, now_ms};
use crate::{
    BudgetState,
    wire::{BudgetView, CompleteBody},
};

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
    let outcome: Outcome = body.outcome.into();
    let repo = &state.repo;
    for attempt in 0..MAX_ATTEMPTS {
        let (mut budget, version) = repo
            .budget(&tenant, &id)
            .await?
            .ok_or_else(|| ApiError::not_found("budget"))?;
        if budget.status == Status::Completed {
            return match budget.outcome {
                Some(o) if o == outcome => Ok(Json(BudgetView::from(&budget))),
                _ => Err(
                    ApiError::conflict("the budget was completed with another outcome")
                        .with_field("outcome"),
                ),
            };
        }
        budget.complete(outcome, now_ms());
        let usage = if outcome == Outcome::Success {
            let config = repo.config(&tenant).await?;
            let (mut history, v) = repo.usage(&tenant, budget.complexity()).await?;
            history.record(budget.consumed_tokens, config.adaptive.window);
            Some((history, v))
        } else {
            None
        };
        match repo.complete(&tenant, &budget, version, usage).await {
            Ok(()) => return Ok(Json(BudgetView::from(&budget))),
            Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
                back_off(attempt).await
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::conflict("too many concurrent updates; retry"))
}
