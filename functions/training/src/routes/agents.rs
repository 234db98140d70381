//! `/v1/agents…`: the registry, an agent's versions, which version serves a key, and the
//! outcomes reported per version.

use agentrl_http::{
    ApiError, Problem, Tenant, ValidJson,
    query::{DEFAULT_LIMIT, MAX_LIMIT, encode_component, limit},
};
use axum::{
    Json,
    extract::{Path, Query, State},
    http::{StatusCode, header},
};
use serde::Deserialize;

use super::listing;
use crate::{
    TrainingState, agents, versions,
    wire::{
        AgentPage, AgentView, ArmView, CreateAgentBody, GateDecisionPage, GateDecisionView,
        OutcomesBody, OutcomesView, PatchAgentBody, RouteView, VersionPage, VersionView,
    },
};

/// `?cursor=&limit=` of a listing.
#[derive(Debug, Deserialize)]
pub(crate) struct PageParams {
    cursor: Option<String>,
    limit: Option<String>,
}

/// Register an agent.
#[utoipa::path(post, path = "/v1/agents", tag = "training",
    request_body = CreateAgentBody,
    responses(
        (status = 201, description = "Registered", body = AgentView),
        (status = 400, description = "Invalid body (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An agent with this agent_id exists", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn create(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<CreateAgentBody>,
) -> Result<
    (
        StatusCode,
        [(header::HeaderName, String); 1],
        Json<AgentView>,
    ),
    ApiError,
> {
    let agent = agents::create(&state, &tenant, body.try_into()?).await?;
    let location = format!("/v1/agents/{}", encode_component(&agent.agent_id));
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(agent.into()),
    ))
}

/// Read an agent.
#[utoipa::path(get, path = "/v1/agents/{id}", tag = "training",
    params(("id" = String, Path, description = "The agent id")),
    responses(
        (status = 200, description = "The agent", body = AgentView),
        (status = 404, description = "No such agent for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<AgentView>, ApiError> {
    Ok(Json(agents::read(&state, &tenant, &id).await?.into()))
}

/// List the tenant's agents, in id order.
#[utoipa::path(get, path = "/v1/agents", tag = "training",
    params(
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Agents per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = AgentPage),
        (status = 400, description = "A bad number or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Query(params): Query<PageParams>,
) -> Result<Json<AgentPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (agents, next_cursor) = agents::list(&state, &tenant, limit, params.cursor)
        .await
        .map_err(listing)?;
    Ok(Json(AgentPage {
        agents: agents.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

/// Change an agent (JSON merge patch). Its deployed version changes only by promotion.
#[utoipa::path(patch, path = "/v1/agents/{id}", tag = "training",
    params(("id" = String, Path, description = "The agent id")),
    request_body = PatchAgentBody,
    responses(
        (status = 200, description = "The changed agent", body = AgentView),
        (status = 400, description = "Invalid body (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn patch(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    ValidJson(body): ValidJson<PatchAgentBody>,
) -> Result<Json<AgentView>, ApiError> {
    Ok(Json(
        agents::update(&state, &tenant, &id, body.try_into()?)
            .await?
            .into(),
    ))
}

/// List an agent's model versions, newest first.
#[utoipa::path(get, path = "/v1/agents/{id}/versions", tag = "training",
    params(
        ("id" = String, Path, description = "The agent id"),
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Versions per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = VersionPage),
        (status = 400, description = "A bad number or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn versions(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    Query(params): Query<PageParams>,
) -> Result<Json<VersionPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (versions, next_cursor) = versions::list(&state, &tenant, &id, limit, params.cursor)
        .await
        .map_err(listing)?;
    Ok(Json(VersionPage {
        versions: versions
            .into_iter()
            .map(|(v, live)| VersionView::new(v, live))
            .collect(),
        next_cursor,
    }))
}

/// An agent's gate decisions, newest first: every promotion the gate decided, refusals
/// included, with each check's numbers and bound.
#[utoipa::path(get, path = "/v1/agents/{id}/gate-decisions", tag = "training",
    params(
        ("id" = String, Path, description = "The agent id"),
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Decisions per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = GateDecisionPage),
        (status = 400, description = "A bad number or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn gate_decisions(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    Query(params): Query<PageParams>,
) -> Result<Json<GateDecisionPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (decisions, next_cursor) =
        versions::gate_decisions(&state, &tenant, &id, limit, params.cursor)
            .await
            .map_err(listing)?;
    Ok(Json(GateDecisionPage {
        decisions: decisions.into_iter().map(GateDecisionView::from).collect(),
        next_cursor,
    }))
}

/// `?key=` of the route lookup.
#[derive(Debug, Deserialize)]
pub(crate) struct RouteParams {
    key: Option<String>,
}

/// Which version serves a request key: the canary's for keys in its share (sticky as the
/// share grows: a hash of tenant, agent and key), the deployed version for the others.
#[utoipa::path(get, path = "/v1/agents/{id}/route", tag = "training",
    params(
        ("id" = String, Path, description = "The agent id"),
        ("key" = String, Query, min_length = 1, max_length = 512, description = "What identifies the request's user or session"),
    ),
    responses(
        (status = 200, description = "The serving version", body = RouteView),
        (status = 400, description = "No key", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn route(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    Query(params): Query<RouteParams>,
) -> Result<Json<RouteView>, ApiError> {
    let key = params
        .key
        .filter(|k| (1..=512).contains(&k.chars().count()))
        .ok_or_else(|| ApiError::invalid("key", "required: 1 to 512 characters"))?;
    let agent = agents::read(&state, &tenant, &id).await?;
    let route = versions::route(&tenant, &agent, &key);
    Ok(Json(RouteView {
        agent_id: agent.agent_id,
        key,
        version: route.version,
        arm: route.arm,
        bucket: route.bucket,
    }))
}

/// Report outcomes of requests served by the agent's versions (reward, safety violation,
/// reward hacking); the gate compares a canary's arms on them. Send an `Idempotency-Key`
/// when retrying: outcomes are counted, not deduplicated.
#[utoipa::path(post, path = "/v1/agents/{id}/outcomes", tag = "training",
    params(("id" = String, Path, description = "The agent id")),
    request_body = OutcomesBody,
    responses(
        (status = 200, description = "Each version's statistics after the report", body = OutcomesView),
        (status = 400, description = "Invalid body (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent or version for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn outcomes(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    ValidJson(body): ValidJson<OutcomesBody>,
) -> Result<Json<OutcomesView>, ApiError> {
    let outcomes: Vec<versions::Outcome> = body.try_into()?;
    let arms = versions::record_outcomes(&state, &tenant, &id, &outcomes).await?;
    Ok(Json(OutcomesView {
        arms: arms
            .into_iter()
            .map(|(version, stats)| ArmView {
                version,
                live: stats.into(),
            })
            .collect(),
    }))
}
