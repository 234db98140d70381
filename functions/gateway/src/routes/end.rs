//! `POST /gateway/{agent_id}/sessions/{session_id}/end`: the session's calls become
//! trajectories on the ingest path.

use agentrl_core::envelope::Envelope;
use agentrl_core::gateway::{SessionEnd, trajectories};
use agentrl_http::{ApiError, Problem, Tenant};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::now_ms;
use crate::GatewayState;
use crate::sessions;

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
        (status = 413, description = "The session is larger than one queue message", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A recorded call breaks a trajectory limit (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn end(
    State(state): State<GatewayState>,
    Tenant(tenant): Tenant,
    Path((agent_id, session)): Path<(String, String)>,
    body: Bytes,
) -> Result<(StatusCode, Json<EndedView>), ApiError> {
    let outcome: SessionEnd = if body.iter().all(u8::is_ascii_whitespace) {
        SessionEnd::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::invalid("body", e.to_string()))?
    };
    outcome
        .validate()
        .map_err(|e| ApiError::invalid(e.field, e.reason))?;
    let table = state.table.as_ref();
    let (pinned, at) = sessions::read(table, &tenant, &agent_id, &session)
        .await
        .map_err(|e| ApiError::internal(&e))?
        .ok_or_else(|| ApiError::not_found("session"))?;
    let view = |trajectory_ids| {
        (
            StatusCode::ACCEPTED,
            Json(EndedView {
                session_id: session.clone(),
                trajectory_ids,
                status: "queued",
            }),
        )
    };
    if let Some(ids) = pinned.ended.clone() {
        return Ok(view(ids));
    }
    state.recorder.flush().await;
    let prefix = sessions::calls_prefix(&tenant, &agent_id, &session);
    let calls = sessions::calls(state.objects.as_ref(), &prefix)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    if calls.is_empty() {
        return Err(ApiError::conflict(
            "the session has no answered call to record: nothing to end",
        ));
    }
    let made = trajectories(&agent_id, &session, &calls, &outcome);
    for t in &made {
        t.validate().map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("trajectory {}: {}", t.trajectory_id, e.reason),
            )
            .with_field(e.field)
        })?;
    }
    let received_at_ms = now_ms();
    let stamp = i64::try_from(received_at_ms).unwrap_or(i64::MAX);
    for t in &made {
        let envelope = Envelope::new(tenant.as_str(), stamp, t.clone());
        let body = serde_json::to_string(&envelope).map_err(|e| ApiError::internal(&e))?;
        state
            .queue
            .send(&body)
            .await
            .map_err(ApiError::from_enqueue)?;
        state
            .kpis
            .record(&tenant, received_at_ms, &envelope.counts())
            .await;
    }
    let ids: Vec<String> = made.into_iter().map(|t| t.trajectory_id).collect();
    sessions::end(table, &tenant, &agent_id, &session, pinned, at, ids.clone())
        .await
        .map_err(|e| ApiError::internal(&e))?;
    Ok(view(ids))
}
