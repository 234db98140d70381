//! `POST /v1/executions/{id}/verifications`: run one verifier on an execution and fold its
//! verdict into the execution's reward and training example.

use agentrl_core::verify::Request;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};

use crate::{
    RewardState,
    executions::{self, VerifyError},
    wire::VerificationView,
};

impl From<VerifyError> for ApiError {
    fn from(e: VerifyError) -> Self {
        match e {
            VerifyError::NotFound => ApiError::not_found("execution"),
            VerifyError::Invalid(e) => e.into(),
            VerifyError::Full => ApiError::conflict(e.to_string()),
            VerifyError::Contended => ApiError::conflict(format!("{e}; retry")),
            VerifyError::Verifier(e) => ApiError::internal(&e),
            VerifyError::Store(e) => e.into(),
        }
    }
}

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
    request_body = Request,
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
    let verification = executions::verify(&state.repo, &tenant, &id, request).await?;
    Ok((
        StatusCode::CREATED,
        Json(VerificationView::from(&verification)),
    ))
}
