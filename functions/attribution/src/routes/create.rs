//! `POST /v1/attributions`: Shapley credit of a game, shaped into rewards, stored per task.

use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::State,
    http::{StatusCode, header},
};

use super::encode_component;
use crate::{
    AttributionState, attributions,
    compute::Job,
    wire::{AttributionView, CreateAttributionBody},
};

/// 201 with a `Location` header and the attribution.
type Created = (
    StatusCode,
    [(header::HeaderName, String); 1],
    Json<AttributionView>,
);

/// Attribute a task's outcome to its agents.
///
/// The game is exactly one of `coalitions` (a complete table, n ≤ 20), `contributions` (an
/// additive game) or `pairwise` (stand-alone values plus pairwise synergies). `auto` computes
/// exactly (enumeration of the table, or the closed form); `monte_carlo` samples permutations
/// with error bars. The Shapley values are shaped into `rewards` that sum to `total_reward`.
/// Re-posting a task id replaces its attribution (and its place in the export).
#[utoipa::path(post, path = "/v1/attributions", tag = "attribution",
    request_body = CreateAttributionBody,
    responses(
        (status = 201, description = "Attribution computed and stored", body = AttributionView),
        (status = 400, description = "Invalid body (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over the limit", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(task_id = %body.task_id))]
pub(crate) async fn create(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<CreateAttributionBody>,
) -> Result<Created, ApiError> {
    let job = Job::from_body(body)?;
    let record = attributions::compute(&state.repo, &tenant, job).await?;
    let location = format!("/v1/attributions/{}", encode_component(&record.task_id));
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(record.view()),
    ))
}
