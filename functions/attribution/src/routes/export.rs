//! `GET /v1/attributions`: the tenant's attributions as NDJSON, oldest first, paginated.

use agentrl_http::{ApiError, Problem, Tenant, query::link_next};
use axum::{
    extract::{Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;

use super::{DEFAULT_LIMIT, MAX_LIMIT, encode_component, limit, window};
use crate::{AttributionState, attributions};

/// Query string of the export.
#[derive(Debug, Deserialize)]
pub(crate) struct ExportParams {
    from: Option<String>,
    to: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

/// Export attributions as NDJSON (one attribution per line, in creation order).
///
/// `from`/`to` filter by `created_at_ms` in `[from, to)`. While more may follow, the next
/// page's URL is in `Link: <…>; rel="next"` and its cursor in `x-next-cursor`.
#[utoipa::path(get, path = "/v1/attributions", tag = "attribution",
    params(
        ("from" = Option<u64>, Query, description = "Earliest created_at_ms (inclusive)"),
        ("to" = Option<u64>, Query, description = "Latest created_at_ms (exclusive)"),
        ("cursor" = Option<String>, Query, description = "From the previous page's x-next-cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Attributions per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One attribution per line", content_type = "application/x-ndjson"),
        (status = 400, description = "A bad number or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn export(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ExportParams>,
) -> Result<Response, ApiError> {
    let (from, to) = window(params.from.as_deref(), params.to.as_deref(), 0)?;
    let limit = limit(params.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (records, next) = attributions::history(
        &state.repo,
        &tenant,
        (from, to),
        limit,
        params.cursor.clone(),
    )
    .await
    .map_err(ApiError::from_page_query)?;
    let mut body = String::new();
    for r in &records {
        let line = serde_json::to_string(&r.view()).map_err(|e| ApiError::internal(&e))?;
        body.push_str(&line);
        body.push('\n');
    }
    let mut response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        body,
    )
        .into_response();
    if let Some(cursor) = next {
        let mut url = format!(
            "/v1/attributions?limit={limit}&cursor={}",
            encode_component(&cursor)
        );
        if params.from.is_some() {
            url.push_str(&format!("&from={from}"));
        }
        if params.to.is_some() {
            url.push_str(&format!("&to={to}"));
        }
        link_next(response.headers_mut(), &url, &cursor);
    }
    Ok(response)
}
