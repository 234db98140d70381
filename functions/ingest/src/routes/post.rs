//! `POST /v1/trajectories`: validate a trajectory and enqueue it for the worker.

use agentrl_core::trajectory::Trajectory;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use axum::{Json, extract::State, http::StatusCode};
use serde::Serialize;
use utoipa::ToSchema;

use crate::{
    TrajectoryState,
    trajectories::{self, SubmitError},
};

/// The receipt of an accepted trajectory.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TrajectoriesAccepted)]
pub(crate) struct Accepted {
    /// The trajectory, as posted.
    trajectory_id: String,
    /// The queue message carrying it (its rows record it as `message_id`).
    message_id: String,
    /// Always `queued`: the rows appear in the turn table once the worker has run.
    status: &'static str,
}

/// Accept a trajectory.
///
/// Validated in full before anything is enqueued (ids, turns, token lists of equal length,
/// logprobs finite and ≤ 0, sizes; see docs/trajectories.md); a refusal names the field.
/// Besides each field's limits, the schema cannot state: tool names are unique, only assistant
/// turns carry a `tool_call`, `loss_mask` and `behavior_logprobs` need `response_token_ids` of
/// the same length, all text together is at most 4 MiB, JSON nests at most 64 levels.
/// The worker then scores its turns, anonymises it and writes it to the turn table.
#[utoipa::path(post, path = "/v1/trajectories", tag = "trajectories",
    request_body(content = Trajectory, description = "A trajectory (docs/trajectories.md)"),
    responses(
        (status = 202, description = "Queued", body = Accepted),
        (status = 400, description = "Invalid trajectory (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Larger than the request limit (6 MiB, Lambda's payload limit)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn post(
    State(state): State<TrajectoryState>,
    Tenant(tenant): Tenant,
    ValidJson(trajectory): ValidJson<Trajectory>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let trajectory_id = trajectory.trajectory_id.clone();
    let message_id = trajectories::submit(
        &state.queue,
        &state.objects,
        &state.kpis,
        &tenant,
        trajectory,
    )
    .await
    .map_err(|e| match e {
        SubmitError::Invalid(e) => e.into(),
        SubmitError::Queue(e) => ApiError::from_enqueue(e),
    })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            trajectory_id,
            message_id,
            status: "queued",
        }),
    ))
}
