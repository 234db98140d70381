//! `POST /v1/contributions`: score one contribution and add it to the tenant's history.

use agentrl_core::attribution::{Contribution, ContributionTracker, RecordError};
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State, http::StatusCode};

use super::now_ms;
use crate::{
    AttributionState,
    wire::{ContributionBody, ContributionEntry, ContributionView},
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
    body.validate()?;
    let impact_multiplier = body.impact_multiplier.unwrap_or(1.0);
    let timestamp_ms = body.timestamp_ms.unwrap_or_else(now_ms);
    let contribution = Contribution {
        agent: 0,
        timestamp_ms,
        quality_before: body.quality_before,
        quality_after: body.quality_after,
        impact_multiplier,
        effort_ratio: body.effort_ratio,
    };
    // The domain validates and scores; the history itself lives in the table.
    let score = ContributionTracker::default()
        .record(contribution)
        .map_err(|e| match e {
            RecordError::NonFinite { field } | RecordError::Negative { field, .. } => {
                ApiError::invalid(field, e.to_string())
            }
            RecordError::ScoreOverflow => ApiError::invalid("effort_ratio", e.to_string()),
        })?;
    let entry = ContributionEntry {
        id: uuid::Uuid::now_v7().to_string(),
        agent_id: body.agent_id,
        task_id: body.task_id,
        quality_before: body.quality_before,
        quality_after: body.quality_after,
        effort_ratio: body.effort_ratio,
        impact_multiplier,
        timestamp_ms,
        score,
    };
    let evicted = state.repo.record_contribution(&tenant, &entry).await?;
    Ok((
        StatusCode::CREATED,
        Json(ContributionView {
            score,
            entry,
            evicted,
        }),
    ))
}
