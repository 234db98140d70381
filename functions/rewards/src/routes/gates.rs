//! `POST /v1/gates/{stage}/check`.

use agentrl_core::judge::Stage;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{
    RewardState,
    gates::{self, GateCheck, GateCheckBody, MAX_ARTIFACT_CHARS},
};

/// Check a pipeline stage's artifact at its critic gate.
///
/// The tenant's critic model scores the artifact on the stage's rubric (docs/judges.md):
/// at or above the stage's pass mark it is `pass`; below it `refine` with the critic's
/// reasons, until `refinements` reaches the tenant's `max_refinements` (the budget's loop
/// limit by default), then `escalate_to_human`. A critic that cannot answer, or answers with
/// less confidence than the tenant's `judge_min_confidence`, escalates.
#[utoipa::path(post, path = "/v1/gates/{stage}/check", tag = "judges",
    params(("stage" = Stage, Path, description = "triage, research or response")),
    request_body = GateCheckBody,
    responses(
        (status = 200, description = "The gate's decision", body = GateCheck),
        (status = 400, description = "Unknown stage or malformed body (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(stage = %stage))]
pub(crate) async fn check(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Path(stage): Path<String>,
    ValidJson(body): ValidJson<GateCheckBody>,
) -> Result<Json<GateCheck>, ApiError> {
    let stage: Stage = serde_json::from_value(serde_json::Value::String(stage))
        .map_err(|_| ApiError::invalid("stage", "must be triage, research or response"))?;
    for (field, text) in [
        ("artifact", Some(&body.artifact)),
        ("task", body.task.as_ref()),
    ] {
        if text.is_some_and(|t| t.chars().count() > MAX_ARTIFACT_CHARS) {
            return Err(ApiError::invalid(
                field,
                format!("must be at most {MAX_ARTIFACT_CHARS} characters"),
            ));
        }
    }
    if gates::is_blank(&body.artifact) {
        return Err(ApiError::invalid("artifact", "must not be blank"));
    }
    let min_confidence = state.repo.config(&tenant).await?.judge_min_confidence;
    Ok(Json(
        gates::check(&state.judges, &tenant, stage, &body, min_confidence).await?,
    ))
}
