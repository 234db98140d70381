//! `GET /gateway/{agent_id}/v1/models`: the name the agent is served under.

use agentrl_core::gateway::served_name;
use agentrl_http::Tenant;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::SESSION_HEADER;
use crate::GatewayState;
use crate::sessions;
use crate::upstream::OpenAiError;

/// The model the agent is served under: the session's pinned version when the call names a
/// session that exists, else what a new session would get now.
#[utoipa::path(get, path = "/gateway/{agent_id}/v1/models", tag = "gateway",
    params(("agent_id" = String, Path, description = "The agent")),
    responses(
        (status = 200, description = "An OpenAI model list of one"),
        (status = 404, description = "No such agent for this tenant", content_type = "application/problem+json"),
    ))]
pub(crate) async fn models(
    State(state): State<GatewayState>,
    Tenant(tenant): Tenant,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    list(&state, &tenant, &agent_id, session).await
}

/// [`models`] of the session in the path.
#[utoipa::path(get, path = "/gateway/{agent_id}/sessions/{session_id}/v1/models", tag = "gateway",
    params(
        ("agent_id" = String, Path, description = "The agent"),
        ("session_id" = String, Path, description = "The session"),
    ),
    responses(
        (status = 200, description = "An OpenAI model list of one"),
        (status = 404, description = "No such agent for this tenant", content_type = "application/problem+json"),
    ))]
pub(crate) async fn models_in_session(
    State(state): State<GatewayState>,
    Tenant(tenant): Tenant,
    Path((agent_id, session)): Path<(String, String)>,
) -> Response {
    list(&state, &tenant, &agent_id, Some(session)).await
}

async fn list(
    state: &GatewayState,
    tenant: &agentrl_core::TenantId,
    agent_id: &str,
    session: Option<String>,
) -> Response {
    let table = state.table.as_ref();
    let agent = match sessions::agent(table, tenant, agent_id).await {
        Ok(Some(a)) => a,
        Ok(None) => {
            return OpenAiError::new(StatusCode::NOT_FOUND, "no such agent", "not_found")
                .into_response();
        }
        Err(e) => return OpenAiError::from(e).into_response(),
    };
    let pinned = match &session {
        Some(s) => match sessions::read(table, tenant, agent_id, s).await {
            Ok(found) => found.map(|(s, _)| s.served_model),
            Err(e) => return OpenAiError::from(e).into_response(),
        },
        None => None,
    };
    let name = pinned.unwrap_or_else(|| {
        let version = agent.route(tenant, session.as_deref().unwrap_or_default());
        served_name(agent_id, version.as_deref(), &agent.model.name)
    });
    axum::Json(json!({
        "object": "list",
        "data": [{"id": name, "object": "model", "created": 0, "owned_by": "agentrl"}],
    }))
    .into_response()
}
