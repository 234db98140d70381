//! `POST /v1/evaluations`, `GET /v1/evaluations/{id}` and `GET /v1/evaluations`.

use agentrl_http::{
    ApiError, Problem, Tenant, ValidJson,
    query::{DEFAULT_LIMIT, MAX_LIMIT, limit},
};
use agentrl_store::StoreError;
use axum::{
    Json,
    extract::{Path, Query, State},
    http::{StatusCode, header},
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{
    RewardState,
    evaluations::{self, ChangeBody, ChangeError, Evaluation, EvaluationRequest, SubmitError},
};

/// 202 with a `Location` header and the queued evaluation.
type Accepted = (
    StatusCode,
    [(header::HeaderName, String); 1],
    Json<Evaluation>,
);

impl From<SubmitError> for ApiError {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::ExecutionNotFound => {
                ApiError::not_found("execution").with_field("execution_id")
            }
            SubmitError::Invalid(e) => e.into(),
            SubmitError::Store(e) => e.into(),
            SubmitError::Enqueue(StoreError::Invalid(reason)) => {
                ApiError::from_enqueue(StoreError::Invalid(reason))
            }
            SubmitError::Enqueue(e) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("the evaluation queue is unavailable ({e}); retry"),
            ),
        }
    }
}

/// Evaluate an execution's work: rule checks, diff scoring and model judges.
///
/// Answers 202 at once with the evaluation id; the evaluation worker runs the parts (the task
/// type's three judges, the change's diff score, the tests and checks), combines them with
/// confidence weighting and records the verdict as an `evaluation` verification on the
/// execution. `GET /v1/evaluations/{id}` shows the progress and then the report.
#[utoipa::path(post, path = "/v1/evaluations", tag = "judges",
    request_body = EvaluationRequest,
    responses(
        (status = 202, description = "Accepted and queued", body = Evaluation,
            headers(("Location" = String, description = "The evaluation's URL"))),
        (status = 400, description = "Malformed request (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such execution for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over the limit", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The queue is unavailable (the evaluation is marked failed); retry", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(execution_id = %request.execution_id))]
pub(crate) async fn create(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    ValidJson(request): ValidJson<EvaluationRequest>,
) -> Result<Accepted, ApiError> {
    let evaluation = evaluations::submit(
        &state.repo,
        &state.evaluations,
        state.queue.as_ref(),
        &state.scorer,
        &tenant,
        request,
    )
    .await?;
    let location = format!("/v1/evaluations/{}", evaluation.evaluation_id);
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(evaluation),
    ))
}

/// Read an evaluation: its status, progress and, once completed, its report.
#[utoipa::path(get, path = "/v1/evaluations/{id}", tag = "judges",
    params(("id" = String, Path, description = "The evaluation id")),
    responses(
        (status = 200, description = "The evaluation", body = Evaluation),
        (status = 404, description = "No such evaluation for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<Evaluation>, ApiError> {
    evaluations::read(&state.evaluations, &tenant, &id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("evaluation"))
}

impl From<ChangeError> for ApiError {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::NotFound => ApiError::not_found("evaluation"),
            ChangeError::NoChange => ApiError::new(
                StatusCode::NOT_FOUND,
                "the evaluation was asked without a change",
            ),
            ChangeError::Unreadable(reason) => {
                tracing::error!(%reason, "an evaluation's stored request cannot be read");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the evaluation's request cannot be read",
                )
            }
            ChangeError::Store(e) => e.into(),
        }
    }
}

/// The change an evaluation judged, as it was sent: both snapshots of the touched files (the
/// report's `diff` holds what was found in it, by file and line).
#[utoipa::path(get, path = "/v1/evaluations/{id}/change", tag = "judges",
    params(("id" = String, Path, description = "The evaluation id")),
    responses(
        (status = 200, description = "The change", body = ChangeBody),
        (status = 404, description = "No such evaluation for this tenant, or it was asked without a change", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn change(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<ChangeBody>, ApiError> {
    Ok(Json(
        evaluations::change(&state.evaluations, &tenant, &id).await?,
    ))
}

/// `?cursor=&limit=`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    cursor: Option<String>,
    limit: Option<String>,
}

/// A page of evaluations, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EvaluationPage {
    evaluations: Vec<Evaluation>,
    /// Present while more may follow: pass it as `cursor`.
    next_cursor: Option<String>,
}

/// List the tenant's evaluations, newest first, each as `GET /v1/evaluations/{id}` shows it.
#[utoipa::path(get, path = "/v1/evaluations", tag = "judges",
    params(
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Evaluations per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = EvaluationPage),
        (status = 400, description = "A bad number or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ListParams>,
) -> Result<Json<EvaluationPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (evaluations, next_cursor) = state
        .evaluations
        .list(&tenant, limit, params.cursor)
        .await
        .map_err(ApiError::from_page_query)?;
    Ok(Json(EvaluationPage {
        evaluations,
        next_cursor,
    }))
}
