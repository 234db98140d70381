//! `GET /v1/training-examples` (JSON pages) and `GET /v1/training-examples/export` (JSON
//! Lines of prompt, completion, reward and type, for SFT or reward-model training).

use agentrl_core::verify::ExampleType;
use agentrl_http::{
    ApiError, Problem, Tenant,
    query::{DEFAULT_LIMIT, MAX_LIMIT, encode_component, limit, link_next},
};
use axum::{
    Json,
    extract::{Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;

use crate::{
    RewardState, executions,
    repo::ExampleFilter,
    wire::{ExamplePage, ExampleView},
};

/// Query string of both routes.
#[derive(Debug, Deserialize)]
pub(crate) struct ExampleParams {
    #[serde(rename = "type")]
    kind: Option<String>,
    agent_id: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

impl ExampleParams {
    fn filter(&self) -> Result<ExampleFilter<'_>, ApiError> {
        let kind = self
            .kind
            .as_deref()
            .map(|k| {
                ExampleType::parse(k).ok_or_else(|| {
                    ApiError::invalid("type", "must be positive, negative or neutral")
                })
            })
            .transpose()?;
        Ok(ExampleFilter {
            kind,
            agent_id: self.agent_id.as_deref(),
        })
    }

    async fn page(
        &self,
        state: &RewardState,
        tenant: &agentrl_core::TenantId,
    ) -> Result<(Vec<ExampleView>, Option<String>, usize), ApiError> {
        let limit = limit(self.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
        let (examples, next) = executions::examples(
            &state.repo,
            tenant,
            &self.filter()?,
            limit,
            self.cursor.clone(),
        )
        .await
        .map_err(ApiError::from_page_query)?;
        Ok((examples.into_iter().map(Into::into).collect(), next, limit))
    }
}

/// List training examples, a page at a time.
#[utoipa::path(get, path = "/v1/training-examples", tag = "rewards",
    params(
        ("type" = Option<ExampleType>, Query, description = "positive, negative or neutral"),
        ("agent_id" = Option<String>, Query, description = "Only this agent's (without `type`, a page can hold fewer than `limit`: follow the cursor)"),
        ("cursor" = Option<String>, Query, description = "From the previous page's next_cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Examples per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One page", body = ExamplePage),
        (status = 400, description = "A bad filter, number or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn list(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ExampleParams>,
) -> Result<Json<ExamplePage>, ApiError> {
    let (examples, next_cursor, _) = params.page(&state, &tenant).await?;
    Ok(Json(ExamplePage {
        examples,
        next_cursor,
    }))
}

/// Export training examples as JSON Lines, one example per line.
///
/// While more may follow, the next page's URL is in `Link: <…>; rel="next"` and its cursor
/// in `x-next-cursor`.
#[utoipa::path(get, path = "/v1/training-examples/export", tag = "rewards",
    params(
        ("type" = Option<ExampleType>, Query, description = "positive, negative or neutral"),
        ("agent_id" = Option<String>, Query, description = "Only this agent's (without `type`, a page can hold fewer than `limit`: follow the cursor)"),
        ("cursor" = Option<String>, Query, description = "From the previous page's x-next-cursor"),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "Examples per page (default 100, at most 1000)"),
    ),
    responses(
        (status = 200, description = "One example per line", content_type = "application/x-ndjson"),
        (status = 400, description = "A bad filter, number or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn export(
    State(state): State<RewardState>,
    Tenant(tenant): Tenant,
    Query(params): Query<ExampleParams>,
) -> Result<Response, ApiError> {
    let (examples, next, limit) = params.page(&state, &tenant).await?;
    let mut body = String::new();
    for e in &examples {
        body.push_str(&serde_json::to_string(e).map_err(|e| ApiError::internal(&e))?);
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
            "/v1/training-examples/export?limit={limit}&cursor={}",
            encode_component(&cursor)
        );
        for (name, value) in [("type", &params.kind), ("agent_id", &params.agent_id)] {
            if let Some(v) = value {
                url.push_str(&format!("&{name}={}", encode_component(v)));
            }
        }
        link_next(response.headers_mut(), &url, &cursor);
    }
    Ok(response)
}
