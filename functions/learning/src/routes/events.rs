//! `POST /v1/events`: validate learning events and enqueue them for the worker.

use agentrl_core::learning::Event;
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use agentrl_store::clock::now_ms_i64;
use axum::{Json, extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{
    PartialSchema, ToSchema,
    openapi::{ArrayBuilder, OneOfBuilder, RefOr, Schema},
};

use crate::{LearningState, agents};

/// Most events one request may carry.
pub(crate) const MAX_EVENTS: usize = 100;

/// The body: one event, or an array of 1 to [`MAX_EVENTS`]. Each stays a JSON value until
/// [`event`] reads it (its time defaults to the receipt's, an error names its position); the
/// document describes the events themselves.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Events {
    Many(Vec<Value>),
    One(Value),
}

impl PartialSchema for Events {
    fn schema() -> RefOr<Schema> {
        let event = || RefOr::Ref(utoipa::openapi::Ref::from_schema_name(Event::name()));
        OneOfBuilder::new()
            .item(event())
            .item(
                ArrayBuilder::new()
                    .items(event())
                    .min_items(Some(1))
                    .max_items(Some(MAX_EVENTS)),
            )
            .description(Some(format!(
                "An event, or an array of 1 to {MAX_EVENTS} events"
            )))
            .into()
    }
}

impl ToSchema for Events {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((Event::name().into(), Event::schema()));
        Event::schemas(schemas);
    }
}

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
/// defaulting to the receipt time; integers written as `4.0` read as integers, as for every
/// other body.
fn event(field: &str, mut value: Value, now: i64) -> Result<Event, ApiError> {
    let Some(object) = value.as_object_mut() else {
        return Err(ApiError::invalid(field, "an event must be a JSON object"));
    };
    object.entry("occurred_at_ms").or_insert(now.into());
    agentrl_http::integral_floats_as_integers(&mut value);
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
    request_body(content = Events, description = "An event, or an array of events"),
    responses(
        (status = 202, description = "Queued", body = Accepted),
        (status = 400, description = "Invalid event (the field is named)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn post(
    State(state): State<LearningState>,
    Tenant(tenant): Tenant,
    ValidJson(body): ValidJson<Events, false>,
) -> Result<(StatusCode, Json<Accepted>), ApiError> {
    let now = now_ms_i64();
    let events = match body {
        Events::Many(items) => {
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
        Events::One(value) => vec![event("", value, now)?],
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
