//! `/v1/training-runs…`: create (once per agent, dataset, base and config), read with
//! progress, list, cancel, promote the version a run registered.

use agentrl_http::{
    ApiError, Problem, Tenant, ValidJson,
    query::{DEFAULT_LIMIT, MAX_LIMIT, bounded, encode_component, limit},
};
use axum::{
    Json,
    extract::{Path, Query, State},
    http::{StatusCode, header},
};
use serde::Deserialize;

use crate::{
    TrainingState, runs, versions,
    wire::{
        CreateRunBody, LogTailView, MetricSeriesView, PromoteBody, PromoteView, RunPage, RunView,
    },
};

/// Start a training run of an agent on a dataset. The same agent, dataset, base and config
/// name one run: a repeated request answers 200 with it instead of starting another job.
#[utoipa::path(post, path = "/v1/training-runs", tag = "training",
    request_body = CreateRunBody,
    responses(
        (status = 201, description = "Created, its job submitted", body = RunView),
        (status = 200, description = "The run these inputs already made", body = RunView),
        (status = 400, description = "Invalid body (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent, dataset, base model or version for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The base version cannot be trained on", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The launcher refused the job (the run is failed)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn create(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<CreateRunBody>,
) -> Result<(StatusCode, [(header::HeaderName, String); 1], Json<RunView>), ApiError> {
    let (run, created) = runs::create(&state, &tenant, body.try_into()?, "request").await?;
    let location = format!("/v1/training-runs/{}", encode_component(&run.run_id));
    let view = runs::read(&state, &tenant, &run.run_id).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, [(header::LOCATION, location)], Json(view.into())))
}

/// Read a run: status, progress, latest metrics, artifacts, cost estimate.
#[utoipa::path(get, path = "/v1/training-runs/{id}", tag = "training",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 200, description = "The run", body = RunView),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    Ok(Json(runs::read(&state, &tenant, &id).await?.into()))
}

/// `?max_points=`.
#[derive(Debug, Deserialize)]
pub(crate) struct CurveParams {
    max_points: Option<String>,
}

/// Points a curve gets unless asked: enough for a chart as wide as a screen.
const DEFAULT_POINTS: usize = 2_000;
/// The most points a curve may ask for.
const MAX_POINTS: usize = 10_000;

/// A run's curves: every line of its `metrics.jsonl` up to `max_points`, an even sample of
/// them above (first and last step kept, evaluation lines kept up to a quarter).
#[utoipa::path(get, path = "/v1/training-runs/{id}/metrics", tag = "training",
    params(
        ("id" = String, Path, description = "The run id"),
        ("max_points" = Option<u64>, Query, minimum = 2, maximum = 10000, description = "Most lines returned (default 2000)"),
    ),
    responses(
        (status = 200, description = "The run's metric lines", body = MetricSeriesView),
        (status = 400, description = "max_points out of range", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn metrics(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    Query(params): Query<CurveParams>,
) -> Result<Json<MetricSeriesView>, ApiError> {
    let max = bounded(
        "max_points",
        params.max_points.as_deref(),
        DEFAULT_POINTS,
        2..=MAX_POINTS,
    )?;
    let (total, points) = runs::metric_lines(&state, &tenant, &id, max).await?;
    Ok(Json(MetricSeriesView {
        run_id: id,
        downsampled: points.len() < total,
        total,
        points,
    }))
}

/// `?lines=`.
#[derive(Debug, Deserialize)]
pub(crate) struct LogParams {
    lines: Option<String>,
}

/// Lines a log tail gets unless asked.
const DEFAULT_LOG_LINES: usize = 200;
/// The most lines a log tail may ask for.
const MAX_LOG_LINES: usize = 2_000;

/// The end of a run's job log: its last lines where this deployment runs jobs itself (the
/// local launcher), or where the log is kept (AWS Batch: its CloudWatch Logs stream).
#[utoipa::path(get, path = "/v1/training-runs/{id}/logs", tag = "training",
    params(
        ("id" = String, Path, description = "The run id"),
        ("lines" = Option<u64>, Query, minimum = 1, maximum = 2000, description = "Last lines returned (default 200)"),
    ),
    responses(
        (status = 200, description = "The log's end, or where it is", body = LogTailView),
        (status = 400, description = "lines out of range", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The run's job ran on a launcher this deployment does not use", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The launcher could not be read", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn logs(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    Query(params): Query<LogParams>,
) -> Result<Json<LogTailView>, ApiError> {
    let lines = bounded(
        "lines",
        params.lines.as_deref(),
        DEFAULT_LOG_LINES,
        1..=MAX_LOG_LINES,
    )?;
    let tail = runs::log_tail(&state, &tenant, &id, lines).await?;
    Ok(Json(LogTailView::new(id, tail)))
}

/// `?agent_id=&cursor=&limit=`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListParams {
    agent_id: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

/// List runs, newest first: the tenant's, or one agent's (status and cost from the run
/// records; `metrics` and the step come with `GET /v1/training-runs/{id}`).
#[utoipa::path(get, path = "/v1/training-runs", tag = "training",
    params(
        ("agent_id" = Option<String>, Query, description = "Only this agent's runs"),
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Runs per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = RunPage),
        (status = 400, description = "A bad number or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ListParams>,
) -> Result<Json<RunPage>, ApiError> {
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (runs, next_cursor) = runs::list(
        &state,
        &tenant,
        params.agent_id.as_deref(),
        limit,
        params.cursor,
    )
    .await
    .map_err(ApiError::from_page_query)?;
    Ok(Json(RunPage {
        runs: runs.into_iter().map(|r| runs::summary(r).into()).collect(),
        next_cursor,
    }))
}

/// Cancel a queued or running run and stop its job.
#[utoipa::path(post, path = "/v1/training-runs/{id}/cancel", tag = "training",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 200, description = "Cancelled", body = RunView),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The run already finished", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn cancel(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    let run = runs::cancel(&state, &tenant, &id).await?;
    Ok(Json(runs::with_progress(&state, run).await?.into()))
}

/// Promote the version a succeeded run registered: to all of its agent's traffic (the
/// deployed version) or, with `percent` below 100, to a canary share first. The evaluation
/// gate compares it with the deployed version on the same validation set and, once both
/// canary arms have enough outcomes, on live traffic; a refusal is 409 with every number in
/// `decision`. Promoting a version deployed before is a rollback and is not gated.
#[utoipa::path(post, path = "/v1/training-runs/{id}/promote", tag = "training",
    params(("id" = String, Path, description = "The run id")),
    request_body(content = Option<PromoteBody>, description = "Absent: 100%"),
    responses(
        (status = 200, description = "Promoted", body = PromoteView),
        (status = 400, description = "percent out of range", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such run for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The run did not succeed, the gate refused (numbers in `decision`), or the upstream does not serve the version (its reason in `detail`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn promote(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    body: Option<ValidJson<PromoteBody>>,
) -> Result<Json<PromoteView>, ApiError> {
    let percent = body.and_then(|ValidJson(b)| b.percent).unwrap_or(100.0);
    let p = versions::promote(&state, &tenant, &id, percent).await?;
    Ok(Json(PromoteView {
        agent_id: p.agent.agent_id,
        version: p.version,
        deployed_version: p.agent.deployed_version,
        canary: p.agent.canary,
        rollback: p.rollback,
        decision: p.decision,
    }))
}
