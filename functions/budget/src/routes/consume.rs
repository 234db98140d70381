//! `POST /v1/budgets/{id}/consumption`: apply a report exactly once.
//!
//! Read budget → apply in the domain → write budget (at the version read) and the report
//! (if absent) in one transaction. A lost race for the budget retries from a fresh read; a
//! report id that is already recorded (the transaction's second condition) returns its
//! stored answer. Retries are rare, so the common path reads only the budget and config. So `consumed_tokens` is the sum of the
//! accepted tokens of distinct reports under any number of concurrent reporters.

use agentrl_core::{
    TenantId,
    budget::{Report, ReportError},
};
use agentrl_http::{ApiError, Problem, Tenant, ValidJson, fingerprint};
use agentrl_store::StoreError;
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};

use super::{MAX_ATTEMPTS, back_off, now_ms};
use crate::{
    BudgetState,
    repo::{BudgetRepo, StoredReport},
    wire::{ConsumptionBody, DecisionView},
};

/// The stored answer to `report_id`, if it was applied: the same answer for the same body,
/// 422 for another body.
async fn replay(
    repo: &BudgetRepo,
    tenant: &TenantId,
    id: &str,
    report_id: &str,
    request: &str,
) -> Result<Option<Json<DecisionView>>, ApiError> {
    let Some(stored) = repo.report(tenant, id, report_id).await? else {
        return Ok(None);
    };
    if stored.request != request {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "report_id was already used with a different body",
        )
        .with_field("report_id"));
    }
    Ok(Some(Json(DecisionView::from(&stored.decision))))
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
    body.validate()?;
    let request = fingerprint(&body);
    let repo = &state.repo;
    let report = Report {
        tokens: body.tokens,
        confidence: body.confidence,
        trigger: body.trigger.map(Into::into),
        loop_completed: body.loop_completed,
    };
    for attempt in 0..MAX_ATTEMPTS {
        let (mut budget, version) = repo
            .budget(&tenant, &id)
            .await?
            .ok_or_else(|| ApiError::not_found("budget"))?;
        let config = repo.config(&tenant).await?;
        let decision = match budget.apply(report, &config, now_ms()) {
            Ok(decision) => decision,
            // A retry of a report applied before the budget closed still gets its answer.
            Err(ReportError::Closed(status)) => {
                return replay(repo, &tenant, &id, &body.report_id, &request)
                    .await?
                    .ok_or_else(|| {
                        ApiError::conflict(format!(
                            "the budget is {status:?} and takes no more reports"
                        ))
                    });
            }
        };
        let stored = StoredReport {
            request: request.clone(),
            decision,
        };
        match repo
            .apply_report(&tenant, &budget, version, &body.report_id, &stored)
            .await
        {
            Ok(()) => return Ok(Json(DecisionView::from(&stored.decision))),
            // The report id is already recorded: this is a retry.
            Err(StoreError::ConditionFailed { index: Some(1) }) => {
                if let Some(answer) = replay(repo, &tenant, &id, &body.report_id, &request).await? {
                    return Ok(answer);
                }
            }
            // Another report won the race for the budget's version: re-read and retry.
            Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
                back_off(attempt).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::conflict(
        "too many concurrent reports on this budget; retry",
    ))
}
