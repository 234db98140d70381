//! `POST /gateway/{agent_id}/sessions/{session_id}/end`: the session's calls become
//! trajectories on the ingest path.

use agentrl_core::gateway::SessionEnd;
use agentrl_http::{ApiError, Problem, Tenant};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use crate::GatewayState;
use crate::ending::{self, EndError};

/// An ended session.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EndedView {
    session_id: String,
    /// The trajectories it became (`n > 1` calls: a group), queued for ingest; rewards and
    /// feedback attach to them by id.
    trajectory_ids: Vec<String>,
    /// `queued`.
    status: &'static str,
}

/// Ends a session: its recorded calls become its trajectory (`trajectory_id` and
/// `conversation_id` = the session id) on the ingest path. Ending it again answers the same.
#[utoipa::path(post, path = "/gateway/{agent_id}/sessions/{session_id}/end", tag = "gateway",
    params(
        ("agent_id" = String, Path, description = "The agent"),
        ("session_id" = String, Path, description = "The session"),
    ),
    request_body(content = Option<SessionEnd>, description = "Optional: the outcome"),
    responses(
        (status = 202, description = "Queued for ingest", body = EndedView),
        (status = 400, description = "Invalid outcome (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The session has no answered call", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A recorded call breaks a trajectory limit, or `choices` does not give one outcome per choice (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn end(
    State(state): State<GatewayState>,
    Tenant(tenant): Tenant,
    Path((agent_id, session)): Path<(String, String)>,
    body: Bytes,
) -> Result<(StatusCode, Json<EndedView>), ApiError> {
    let outcome: SessionEnd = agentrl_http::optional_body(&body)?;
    outcome
        .validate()
        .map_err(|e| ApiError::invalid(e.field, e.reason))?;
    let ids = ending::end(&state, &tenant, &agent_id, &session, &outcome)
        .await
        .map_err(|e| match e {
            EndError::NotFound => ApiError::not_found("session"),
            EndError::NoCalls => ApiError::conflict(e.to_string()),
            EndError::Outcomes(e) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.reason).with_field(e.field)
            }
            EndError::Invalid { ref field, .. } => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
                    .with_field(field.clone())
            }
            EndError::Store(e) => ApiError::internal(&e),
        })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EndedView {
            session_id: session,
            trajectory_ids: ids,
            status: "queued",
        }),
    ))
}
