//! `POST /v1/events`: validate learning events and enqueue them for the worker.

use agentrl_core::learning::Event;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use agentrl_store::retry::now_ms;
use axum::{Json, extract::State, http::StatusCode};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::{LearningState, agents};

/// Most events one request may carry.
pub(crate) const MAX_EVENTS: usize = 100;

/// One accepted event.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Queued {
    /// The event, as posted.
    event_id: String,
    /// The queue message carrying it.
    message_id: String,
}

/// The receipt of a request.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = EventsAccepted)]
pub(crate) struct Accepted {
    /// Always `queued`: projections change once the worker has run.
    status: &'static str,
    /// Each event with its message, in the order posted.
    events: Vec<Queued>,
}

/// The event at `field` (`""` for a single event, `[i]` in an array), with `occurred_at_ms`
/// defaulting to the receipt time.
fn event(field: &str, mut value: Value, now: i64) -> Result<Event, ApiError> {
    let Some(object) = value.as_object_mut() else {
        return Err(ApiError::invalid(field, "an event must be a JSON object"));
    };
    object.entry("occurred_at_ms").or_insert(now.into());
    let event: Event = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let at = match (field.is_empty(), path.as_str()) {
            (true, ".") => "event".to_owned(),
            (true, p) => p.to_owned(),
            (false, ".") => field.to_owned(),
            (false, p) => format!("{field}.{p}"),
        };
        ApiError::invalid(at, e.into_inner().to_string())
    })?;
    event.validate().map_err(|e| {
        let at = if field.is_empty() {
            e.field
        } else {
            format!("{field}.{}", e.field)
        };
        ApiError::invalid(at, e.reason)
    })?;
    Ok(event)
}

/// Accept learning events: one event object, or an array of up to 100.
///
/// Each has `event_id`, `type` (`feedback.created`, `ai.message.reply`, `session.ended`,
/// `ai.action`), `agent_id`, `user_id`, an optional `occurred_at_ms` (default: now) and the
/// fields of its type (docs/learning.md). All are validated before any is enqueued; a
/// refusal names the field. Applying is idempotent by `event_id`.
#[utoipa::path(post, path = "/v1/events", tag = "learning",
    request_body(content = Object, description = "An event, or an array of events"),
    responses(
        (status = 202, description = "Queued", body = Accepted),
        (status = 400, description = "Invalid event (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn post(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<Value, false>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
    let events = match body {
        Value::Array(items) => {
            if items.is_empty() || items.len() > MAX_EVENTS {
                return Err(ApiError::invalid(
                    "",
                    format!("an array must hold 1 to {MAX_EVENTS} events"),
                ));
            }
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| event(&format!("[{i}]"), v, now))
                .collect::<Result<Vec<_>, _>>()?
        }
        other => vec![event("", other, now)?],
    };
    let ids = agents::submit(&state.queue, &tenant, &events, now)
        .await
        .map_err(ApiError::from_enqueue)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            status: "queued",
            events: events
                .into_iter()
                .zip(ids)
                .map(|(e, message_id)| Queued {
                    event_id: e.event_id,
                    message_id,
                })
                .collect(),
        }),
    ))
}
