//! `POST /v1/attributions/sessions/{id}/values`: measured values in, next proposals out
//! ([`sessions::post_values`]).

use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::{Path, State},
};

use super::session::view;
use crate::{
    AttributionState, sessions,
    wire::{SessionValuesBody, SessionView},
};

/// Post measured values of proposed coalitions.
///
/// The answer's `proposals` are every coalition still to measure: the unanswered ones of the
/// last batch, or a new batch once all were answered (empty when done). Values may arrive in
/// any order and in several posts; a value already on record may be sent again, a different
/// one is refused. When the stopping rule or the cap is reached the session is done and its
/// estimates become the task's attribution (`GET /v1/attributions/{task_id}`). Posting to a
/// finished session returns it unchanged.
#[utoipa::path(post, path = "/v1/attributions/sessions/{id}/values", tag = "attribution",
    params(("id" = String, Path, description = "The session id")),
    request_body = SessionValuesBody,
    responses(
        (status = 200, description = "The next proposals and the progress", body = SessionView),
        (status = 400, description = "A value not finite, a coalition not proposed, or conflicting", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Too many concurrent posts; retry", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(session_id = %id))]
pub(crate) async fn post_values(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    ValidJson(body): ValidJson<SessionValuesBody>,
) -> Result<Json<SessionView>, ApiError> {
    let values: Vec<_> = body.into();
    let session = sessions::post_values(&state.repo, &tenant, &id, &values).await?;
    Ok(Json(view(&session)))
}
