//! `POST /v1/diffs/score`: score a change.

use agentrl_diff::{InputError, Lang, Report, Request};
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State};

use crate::{DiffState, wire::ScoreRequest};

/// Score the change from `before` to `after`.
///
/// Files are matched by path; those with a TypeScript/TSX, JavaScript, Python, Rust, Go or
/// Java extension are compared as syntax trees, every file by lines. The multiplier is the
/// floor unless `tests_passed` is true and no hard reward-hacking flag fired.
#[utoipa::path(post, path = "/v1/diffs/score", tag = "diffs",
    request_body = ScoreRequest,
    responses(
        (status = 200, description = "The score", body = Report),
        (status = 400, description = "Bad input: more files than allowed, an unusable path or language (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "The body exceeds the size limit", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn score(
    State(state): State<DiffState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<ScoreRequest>,
) -> Result<Json<Report>, ApiError> {
    let lang = body
        .language
        .as_deref()
        .map(|name| {
            Lang::from_name(name).ok_or_else(|| {
                ApiError::invalid(
                    "language",
                    "must be one of typescript, tsx, javascript, python, rust, go, java",
                )
            })
        })
        .transpose()?;
    let request = Request {
        lang,
        tests_passed: body.tests_passed.unwrap_or(false),
        weights: state.weights.get(&tenant).await?,
    };
    // Parsing and tree distances are CPU-bound: keep them off the async workers.
    let scorer = state.scorer.clone();
    let scored = tokio::task::spawn_blocking(move || {
        scorer.score(&body.before.files, &body.after.files, &request)
    })
    .await
    .map_err(|e| ApiError::internal(&e))?;
    scored
        .map(Json)
        .map_err(|e: InputError| ApiError::invalid("files", e.to_string()))
}
