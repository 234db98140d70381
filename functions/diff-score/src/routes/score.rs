//! `POST /v1/diffs/score`: score a change.

use agentrl_diff::Report;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State};

use crate::{
    DiffState,
    scoring::{self, ScoreError},
    wire::ScoreRequest,
};

/// Score the change from `before` to `after`.
///
/// Files are matched by path; those with a TypeScript/TSX, JavaScript, Python, Rust, Go or
/// Java extension are compared as syntax trees, every file by lines. The multiplier is the
/// floor unless `tests_passed` is true and no hard reward-hacking flag fired.
#[utoipa::path(post, path = "/v1/diffs/score", tag = "diffs",
    request_body = ScoreRequest,
    responses(
        (status = 200, description = "The score", body = Report),
        (status = 400, description = "Bad input: more files than allowed, an unusable path, an unknown language (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body exceeds the size limit", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn score(
    State(state): State<DiffState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<ScoreRequest>,
) -> Result<Json<Report>, ApiError> {
    let report = scoring::score(&state, &tenant, body.into())
        .await
        .map_err(|e| match e {
            ScoreError::Invalid(e) => ApiError::invalid("files", e.to_string()),
            ScoreError::Scorer(e) => ApiError::internal(&e),
            ScoreError::Store(e) => e.into(),
        })?;
    Ok(Json(report))
}
