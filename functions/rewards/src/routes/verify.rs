//! `POST /v1/executions/{id}/verifications`: run one verifier on an execution and fold its
//! verdict into the execution's reward and training example.

use agentrl_core::verify::{self, Context, Request, classify, composite};
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use agentrl_store::{
    StoreError,
    retry::{MAX_ATTEMPTS, back_off, now_ms},
};
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};

use crate::{
    RewardState,
    repo::MAX_VERIFICATIONS,
    wire::{Example, VerificationView},
};

/// Verify an execution.
///
/// `method` picks the verifier: `user_feedback`, `test_execution` (counts or a JUnit XML
/// report, recounted from its test cases), `code_analysis` (scores or SARIF),
/// `business_metrics`, `automated_check`, `answer_match` or `judge` (docs/rewards.md lists
/// each one's parameters). Malformed input is a 400 naming the field and records nothing; a
/// verifier that cannot decide records an `abstain`, one whose input reports a failure of its
/// own an `error` — neither is scored.
#[utoipa::path(post, path = "/v1/executions/{id}/verifications", tag = "rewards",
    params(("id" = String, Path, description = "The execution id")),
    request_body(content = Object, description = "{\"method\": \"test_execution\", \"junit_xml\": \"…\"} and the like (docs/rewards.md)"),
    responses(
        (status = 201, description = "The verification", body = VerificationView),
        (status = 400, description = "Malformed parameters or report (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such execution for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The execution has its maximum of verifications, or is contended", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over the limit", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(execution_id = %id, method = request.method().as_str()))]
pub(crate) async fn verify(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    ValidJson(request): ValidJson<Request>,
) -> Result<(StatusCode, Json<VerificationView>), ApiError> {
    let repo = &state.repo;
    let read = || async {
        repo.execution(&tenant, &id)
            .await?
            .ok_or_else(|| ApiError::not_found("execution"))
    };
    let (mut execution, mut version) = read().await?;
    let config = repo.config(&tenant).await?;
    let method = request.method();
    // A JUnit report of tens of MB is milliseconds of CPU: keep it off the async workers.
    let outcome = tokio::task::spawn_blocking({
        let (output, config) = (execution.output.clone(), config.clone());
        move || {
            verify::run(
                &request,
                &Context {
                    output: &output,
                    config: &config,
                },
            )
        }
    })
    .await
    .map_err(|e| ApiError::internal(&e))?
    .map_err(|e| ApiError::invalid(e.field, e.reason))?;
    let now = now_ms();
    let view = VerificationView::new(
        uuid::Uuid::now_v7().to_string(),
        id.clone(),
        method,
        outcome,
        now,
    );
    for attempt in 0..MAX_ATTEMPTS {
        // The first attempt uses the read above; a lost race reads again.
        if attempt > 0 {
            (execution, version) = read().await?;
        }
        if execution.verifications >= MAX_VERIFICATIONS {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("an execution takes at most {MAX_VERIFICATIONS} verifications"),
            ));
        }
        let mut outcomes: Vec<_> = repo
            .verifications(&tenant, &id)
            .await?
            .iter()
            .map(VerificationView::outcome)
            .collect();
        outcomes.push(view.outcome());
        let c = composite(&outcomes);
        let previous = execution.example_type;
        execution.verifications += 1;
        execution.reward = c.reward;
        execution.example_type = c.reward.map(|r| classify(r, &config.examples));
        let example = c
            .reward
            .zip(execution.example_type)
            .map(|(reward, kind)| Example {
                execution_id: execution.execution_id.clone(),
                agent_id: execution.agent_id.clone(),
                agent_version: execution.agent_version.clone(),
                prompt: execution.input.clone(),
                completion: execution.output.clone(),
                reward,
                confidence: c.confidence,
                kind,
                updated_at_ms: now,
            });
        match repo
            .record(
                &tenant,
                (&execution, version),
                previous,
                &view,
                example.as_ref(),
            )
            .await
        {
            Ok(()) => return Ok((StatusCode::CREATED, Json(view))),
            Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
                back_off(attempt).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::new(
        StatusCode::CONFLICT,
        "the execution is being verified concurrently; retry",
    ))
}
