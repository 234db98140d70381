//! `GET`/`PUT /v1/config/federation` (a tenant's opt-in to federated rounds) and
//! `GET /v1/federation/rounds` (its own part of every round it was a member of).

use agentrl_core::federation::FederationOptIn;
use agentrl_http::{
    ApiError, Problem, Tenant, ValidJson,
    query::{DEFAULT_LIMIT, MAX_LIMIT, limit},
};
use axum::{
    Json,
    extract::{Query, State},
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{TrainingState, federation::TenantRound};

/// Read the tenant's federation settings: whether its agents take part in federated rounds,
/// which (by base model and task type), and the (ε, δ) its participation may spend in total.
#[utoipa::path(get, path = "/v1/config/federation", tag = "training", operation_id = "get_federation",
    responses((status = 200, description = "The settings in force", body = FederationOptIn)))]
pub(crate) async fn read(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
) -> Result<Json<FederationOptIn>, ApiError> {
    Ok(Json(state.federation.opt_in(&tenant).await?))
}

/// Replace the tenant's federation settings. Its agents take part when `enabled`, by the
/// (base model, task type) pairs named, while the budget (ε, at δ in (0, 0.1]) can pay for one
/// more round; settings that cannot (ε = 0, δ = 0) take part in nothing, and each round says
/// so in the tenant's part. Lowering the budget below what was spent stops the tenant's
/// participation; nothing spent is given back.
#[utoipa::path(put, path = "/v1/config/federation", tag = "training", operation_id = "put_federation",
    request_body = FederationOptIn,
    responses(
        (status = 200, description = "The settings now in force", body = FederationOptIn),
        (status = 400, description = "A setting out of range, named", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn replace(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<FederationOptIn>,
) -> Result<Json<FederationOptIn>, ApiError> {
    body.validate()?;
    state.federation.set_opt_in(&tenant, &body).await?;
    Ok(Json(body))
}

/// `?cursor=&limit=`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    cursor: Option<String>,
    limit: Option<String>,
}

/// A page of the tenant's rounds.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RoundPage {
    rounds: Vec<TenantRound>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// The tenant's own part of every federated round it was a member of, by federation and
/// newest round first: whether it took part (or why not), its agent, its weight, the number
/// of participants, the noise, and the ε the round cost it and its total. Never another
/// tenant's part.
#[utoipa::path(get, path = "/v1/federation/rounds", tag = "training", operation_id = "list_federation_rounds",
    params(
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Rounds per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = RoundPage),
        (status = 400, description = "A bad number or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn rounds(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ListParams>,
) -> Result<Json<RoundPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (rounds, next_cursor) = state
        .federation
        .parts(&tenant, limit, params.cursor)
        .await
        .map_err(ApiError::from_page_query)?;
    Ok(Json(RoundPage {
        rounds,
        next_cursor,
    }))
}
