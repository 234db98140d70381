//! `POST /v1/contributions`: score one contribution and add it to the tenant's history.

use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State, http::StatusCode};

use crate::{
    AttributionState, attributions,
    wire::{ContributionBody, ContributionView},
};

/// Record a contribution.
///
/// `score = (quality_after − quality_before) × impact_multiplier / max(effort_ratio, 1e-6)`:
/// improvements count positively, regressions negatively, impact scales the change and a
/// cheaper contribution scores higher. The tenant's history keeps the newest 100 000 entries
/// by `timestamp_ms`; when a new entry takes it over the cap the oldest are deleted
/// (`evicted` says how many).
#[utoipa::path(post, path = "/v1/contributions", tag = "attribution",
    request_body = ContributionBody,
    responses(
        (status = 201, description = "Recorded; its score", body = ContributionView),
        (status = 400, description = "Invalid body (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(agent_id = %body.agent_id, task_id = %body.task_id))]
pub(crate) async fn contribute(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<ContributionBody>,
) -> Result<(StatusCode, Json<ContributionView>), ApiError> {
    let (entry, evicted) = attributions::contribute(&state.repo, &tenant, body.try_into()?).await?;
    Ok((
        StatusCode::CREATED,
        Json(ContributionView {
            score: entry.score,
            entry: entry.into(),
            evicted,
        }),
    ))
}
