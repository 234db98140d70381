//! `POST /v1/traces` (OTLP/HTTP) and `POST /v1/traces/conversations/{id}/end`.

use agentrl_core::gateway::SessionEnd;
use agentrl_core::traces::{Ended, GenAi, INHERITED, Span, SpanError, read};
use agentrl_http::{ApiError, Problem, Tenant};
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::closing::EndError;
use crate::otlp::{self, DecodeError, Encoding};
use crate::{MAX_BODY_BYTES, MAX_DECODED_BYTES, TracesState};

/// Takes an OTLP trace export: spans of GenAI operations (and those naming an agent or a
/// conversation) are stored durably before the answer, to be ingested as trajectories when
/// their conversation ends; other spans are accepted and ignored. Binary protobuf
/// (`application/x-protobuf`) and OTLP/JSON, optionally `Content-Encoding: gzip`; the answer
/// is in the request's encoding.
#[utoipa::path(post, path = "/v1/traces", tag = "traces",
    request_body(content = Object, content_type = "application/json",
        description = "An OTLP ExportTraceServiceRequest in OTLP/JSON (`resourceSpans`), or the same message as application/x-protobuf"),
    responses(
        (status = 200, description = "Taken; spans that could not be used are counted in partialSuccess", body = otlp::JsonResponse),
        (status = 400, description = "The body does not decode (an OTLP Status); a bad Idempotency-Key (a problem)",
            content((otlp::JsonStatus = "application/json"), (Problem = "application/problem+json"))),
        (status = 413, description = "Past the size limits (6 MiB sent, 64 MiB decompressed)",
            content((otlp::JsonStatus = "application/json"), (Problem = "application/problem+json"))),
        (status = 415, description = "Neither application/x-protobuf nor application/json, or an encoding other than gzip",
            content((otlp::JsonStatus = "application/json"), (Problem = "application/problem+json"))),
        (status = 503, description = "The store failed: nothing was taken, retry", body = otlp::JsonStatus),
    ))]
pub(crate) async fn export(
    State(state): State<TracesState>,
    Tenant(tenant): Tenant,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let Some(encoding) = Encoding::of(header(header::CONTENT_TYPE)) else {
        return failed(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/x-protobuf or application/json",
            Encoding::Json,
        );
    };
    let gzip = match header(header::CONTENT_ENCODING)
        .to_ascii_lowercase()
        .as_str()
    {
        "" | "identity" => false,
        "gzip" => true,
        other => {
            return failed(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("Content-Encoding {other:?} is not supported (gzip is)"),
                encoding,
            );
        }
    };
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return failed(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the body exceeds {MAX_BODY_BYTES} bytes"),
            encoding,
        );
    };
    let request = match otlp::inflate(&body, gzip, MAX_DECODED_BYTES)
        .and_then(|bytes| otlp::decode(&bytes, encoding))
    {
        Ok(r) => r,
        Err(e @ DecodeError::TooLarge(_)) => {
            return failed(StatusCode::PAYLOAD_TOO_LARGE, &e.to_string(), encoding);
        }
        Err(e @ DecodeError::Malformed(_)) => {
            return failed(StatusCode::BAD_REQUEST, &e.to_string(), encoding);
        }
    };
    let (spans, mut rejected) = otlp::spans(request);
    let kept = keep(spans, &mut rejected);
    if !kept.is_empty()
        && let Err(e) = crate::buffer::store(
            state.table.as_ref(),
            state.objects.as_ref(),
            &tenant,
            kept,
            agentrl_store::clock::now_ms(),
        )
        .await
    {
        tracing::warn!(%tenant, error = %e, "an OTLP export could not be stored");
        return failed(
            StatusCode::SERVICE_UNAVAILABLE,
            "the spans could not be stored; retry",
            encoding,
        );
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, encoding.content_type())],
        otlp::response(&rejected, encoding),
    )
        .into_response()
}

/// The spans worth keeping: model calls and tool runs whole; other spans that name an agent
/// or a conversation (an `invoke_agent` span, which gives its children their agent) with
/// only those attributes; the rest is ignored. A model call whose messages do not parse is
/// rejected, with why.
fn keep(spans: Vec<Span>, rejected: &mut Vec<SpanError>) -> Vec<Span> {
    let mut kept = Vec::with_capacity(spans.len());
    for mut span in spans {
        match read(&span) {
            Ok(GenAi::Chat(_) | GenAi::Tool(_)) => kept.push(span),
            Ok(GenAi::Other) => {
                let names = span.agent().is_some()
                    || span.conversation().is_some()
                    || span.attributes.contains_key("gen_ai.operation.name");
                if names {
                    span.attributes.retain(|k, _| {
                        INHERITED.contains(&k.as_str()) || k == "gen_ai.operation.name"
                    });
                    kept.push(span);
                }
            }
            Err(reason) => rejected.push(SpanError {
                span: span.span_id,
                reason,
            }),
        }
    }
    kept
}

fn failed(status: StatusCode, message: &str, encoding: Encoding) -> Response {
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => 8,
        StatusCode::SERVICE_UNAVAILABLE => 14,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => 12,
        _ => 3,
    };
    (
        status,
        [(header::CONTENT_TYPE, encoding.content_type())],
        Bytes::from(otlp::status(code, message, encoding)),
    )
        .into_response()
}

/// An ended conversation.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EndedConversation {
    conversation_id: String,
    /// Its trajectories (one per agent that called a model in it), queued for ingest.
    trajectory_ids: Vec<String>,
    /// `queued`.
    status: &'static str,
}

/// Ends a traced conversation now rather than after its quiet period: its spans become its
/// trajectories on the ingest path. The id is the `gen_ai.conversation.id` (or `session.id`)
/// its spans carry, or the trace id of a conversation that names none.
#[utoipa::path(post, path = "/v1/traces/conversations/{id}/end", tag = "traces",
    params(("id" = String, Path, description = "The conversation")),
    request_body(content = Option<SessionEnd>, description = "Optional: the outcome (`success`, `reward`)"),
    responses(
        (status = 202, description = "Queued for ingest", body = EndedConversation),
        (status = 400, description = "An invalid outcome (the field is named)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No span of this conversation is waiting in this tenant", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn end(
    State(state): State<TracesState>,
    Tenant(tenant): Tenant,
    Path(conversation): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<EndedConversation>), ApiError> {
    let outcome: SessionEnd = agentrl_http::optional_body(&body)?;
    outcome
        .validate()
        .map_err(|e| ApiError::invalid(e.field, e.reason))?;
    if outcome.choices.is_some() {
        return Err(ApiError::invalid(
            "choices",
            "a traced conversation is one trajectory per agent, not a group: give success and reward",
        ));
    }
    let ended = outcome.success.map(|success| Ended {
        success,
        reward: outcome.reward,
    });
    let ids = state
        .end(&tenant, &conversation, ended)
        .await
        .map_err(|e| match e {
            EndError::NotFound => ApiError::not_found("conversation"),
            EndError::Store(e) => ApiError::internal(&e),
        })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EndedConversation {
            conversation_id: conversation,
            trajectory_ids: ids,
            status: "queued",
        }),
    ))
}
