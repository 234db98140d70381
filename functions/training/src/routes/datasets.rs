//! `GET /v1/datasets` and `GET /v1/datasets/{id}`: the datasets the dataset job built from
//! the tenant's trajectories, by their manifests.

use agentrl_http::{
    ApiError, Problem, Tenant,
    query::{DEFAULT_LIMIT, MAX_LIMIT, limit},
};
use axum::{
    Json,
    extract::{Path, Query, State},
};
use serde::Deserialize;
use serde_json::Value;

use crate::{
    TrainingState, datasets,
    wire::{DatasetPage, DatasetSummary},
};

/// `?cursor=&limit=`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    cursor: Option<String>,
    limit: Option<String>,
}

/// List the tenant's datasets, newest first: each manifest's id, time, counts (rows and
/// trajectories per split, examples, groups, pairs), content hash and sizes.
#[utoipa::path(get, path = "/v1/datasets", tag = "training",
    params(
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Datasets per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = DatasetPage),
        (status = 400, description = "A bad number", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ListParams>,
) -> Result<Json<DatasetPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (manifests, next_cursor) =
        datasets::list(&state, &tenant, limit, params.cursor.as_deref()).await?;
    Ok(Json(DatasetPage {
        datasets: manifests.iter().map(DatasetSummary::of).collect(),
        next_cursor,
    }))
}

/// Read a dataset's manifest as the dataset job wrote it: counts, splits, the rules it was
/// built by, every file with its size and SHA-256, the content hash, the agents selected and
/// the trajectory objects it read.
#[utoipa::path(get, path = "/v1/datasets/{id}", tag = "training",
    params(("id" = String, Path, description = "The dataset id")),
    responses(
        (status = 200, description = "The manifest", body = Object),
        (status = 404, description = "No such dataset for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    datasets::manifest(&state, &tenant, &id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("dataset"))
}
