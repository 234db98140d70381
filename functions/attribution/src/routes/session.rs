//! `POST /v1/attributions/sessions` and `GET /v1/attributions/sessions/{id}`: interactive
//! Shapley sampling for teams whose coalition values are measured by the caller.

use agentrl_core::attribution::{Coalition, SessionStatus};
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{
    Json,
    extract::{Path, State},
    http::{StatusCode, header},
};

use crate::{
    AttributionState,
    sessions::{self, Session, SessionError},
    wire::{CreateSessionBody, ProgressView, ProposalView, SessionView},
};

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::NotFound => ApiError::not_found("session"),
            SessionError::Invalid(e) => e.into(),
            SessionError::Contended => ApiError::conflict(format!("{e}; retry")),
            SessionError::Store(e) => e.into(),
        }
    }
}

/// 201 with a `Location` header and the session.
type Created = (
    StatusCode,
    [(header::HeaderName, String); 1],
    Json<SessionView>,
);

/// The ids of a coalition's members, in the order of `agents`.
pub(crate) fn ids(agents: &[String], c: &Coalition) -> Vec<String> {
    c.members().map(|i| agents[i].clone()).collect()
}

/// The view of a session and its proposals.
pub(crate) fn view(session: &Session) -> SessionView {
    let Session {
        head,
        state,
        proposals,
    } = session;
    let p = state.progress();
    let map = |v: &[f64]| head.agents.iter().cloned().zip(v.iter().copied()).collect();
    SessionView {
        session_id: head.session_id.clone(),
        task_id: head.task_id.clone(),
        proposals: proposals
            .iter()
            .map(|c| ProposalView {
                coalition: ids(&head.agents, c),
            })
            .collect(),
        progress: ProgressView {
            permutations: p.permutations_completed,
            permutations_proposed: p.permutations_proposed,
            awaiting: p.awaiting,
            target_reached: p.status == SessionStatus::TargetReached,
            done: p.status != SessionStatus::Running,
            estimates: map(&p.estimates),
            std_errors: p.std_errors.as_deref().map(map),
        },
    }
}

/// Start an interactive attribution session.
///
/// The answer proposes coalitions to evaluate: post their measured values to
/// `/v1/attributions/sessions/{id}/values` until `progress.done`. The final estimates are
/// then stored as the task's attribution (method `monte_carlo`).
#[utoipa::path(post, path = "/v1/attributions/sessions", tag = "attribution",
    request_body = CreateSessionBody,
    responses(
        (status = 201, description = "Session started; the first proposals", body = SessionView),
        (status = 400, description = "Invalid body (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(task_id = %body.task_id))]
pub(crate) async fn create_session(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<CreateSessionBody>,
) -> Result<Created, ApiError> {
    let session = sessions::start(&state.repo, &tenant, body.try_into()?).await?;
    let location = format!("/v1/attributions/sessions/{}", session.head.session_id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view(&session)),
    ))
}

/// Read a session: its estimates and every coalition still to measure.
#[utoipa::path(get, path = "/v1/attributions/sessions/{id}", tag = "attribution",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The session", body = SessionView),
        (status = 404, description = "No such session for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read_session(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<SessionView>, ApiError> {
    let session = sessions::read(&state.repo, &tenant, &id).await?;
    Ok(Json(view(&session)))
}
