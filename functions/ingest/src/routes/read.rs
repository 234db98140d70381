//! `GET /v1/trajectories/{id}`: one trajectory's summary and its turns, read back from the
//! turn table.

use agentrl_http::{ApiError, Problem, Tenant};
use axum::{
    Json,
    extract::{Path, State},
};

use crate::{TrajectoryState, trajectories, wire::TrajectoryDetail};

/// Read a trajectory with its turns: messages, tool calls and results, every reward
/// component, token counts and safety flags, as stored (anonymised).
///
/// The id is the stored one, as the listing shows it; a `/` in it is sent as `%2F`.
#[utoipa::path(get, path = "/v1/trajectories/{id}", tag = "trajectories",
    params(("id" = String, Path, description = "The trajectory id")),
    responses(
        (status = 200, description = "The trajectory", body = TrajectoryDetail),
        (status = 404, description = "No such trajectory for this tenant (or not written yet)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<TrajectoryState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<TrajectoryDetail>, ApiError> {
    let (summary, rows) =
        trajectories::get(state.table.as_ref(), state.objects.as_ref(), &tenant, &id)
            .await?
            .ok_or_else(|| ApiError::not_found("trajectory"))?;
    Ok(Json(TrajectoryDetail::new(summary, rows)))
}
