//! `POST /gateway/{agent_id}/v1/chat/completions` (session in `x-agentrl-session`, or one
//! per call) and `POST /gateway/{agent_id}/sessions/{session_id}/v1/chat/completions`.

use std::pin::Pin;
use std::task::{Context, Poll};

use agentrl_core::TenantId;
use agentrl_core::gateway::{CallRecord, StreamRecorder, served_name};
use agentrl_core::trajectory::check_id;
use agentrl_http::Tenant;
use agentrl_store::clock::now_ms;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{SESSION_HEADER, VERSION_HEADER, session_id};
use crate::GatewayState;
use crate::budget::{self, BUDGET_HEADER};
use crate::sessions::{self, Recorder, Session};
use crate::upstream::{MAX_ANSWER_BYTES, MAX_ERROR_BYTES, OpenAiError, Overflow, read_capped};

/// An OpenAI Chat Completions request: the fields the gateway reads, and every other field
/// (`tools`, `tool_choice`, `n`, `logprobs`, `stop`, `max_completion_tokens`,
/// `reasoning_effort`…) passed to the upstream as sent.
#[derive(Debug, Deserialize, Serialize, utoipa::ToSchema)]
pub(crate) struct ChatRequest {
    /// The conversation, as OpenAI defines messages (each an object).
    #[schema(value_type = Vec<Object>)]
    messages: Vec<serde_json::Map<String, Value>>,
    /// Replaced by the session's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// Server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    /// The rest of the request.
    #[serde(flatten)]
    #[schema(ignore)]
    rest: serde_json::Map<String, Value>,
}

/// A chat completion through the gateway: the body goes to the session's version unchanged
/// but for `model`, and comes back unchanged; the call is recorded behind the answer.
#[utoipa::path(post, path = "/gateway/{agent_id}/v1/chat/completions", tag = "gateway",
    params(
        ("agent_id" = String, Path, description = "The agent"),
        ("x-agentrl-session" = Option<String>, Header, description = "The session (absent: a new one per call, returned in the same header)"),
        ("x-agentrl-budget" = Option<String>, Header, description = "A thinking budget (`POST /v1/budgets`) the call goes under; absent: the one the session's first call named, if any"),
    ),
    request_body(content = ChatRequest, description = "An OpenAI Chat Completions request; `model` is replaced by the session's"),
    responses(
        (status = 200, description = "The upstream's answer (JSON, or `text/event-stream` with `stream: true`); headers `x-agentrl-session` and `x-agentrl-version`, and under a budget `x-agentrl-budget-action` and `x-agentrl-budget-remaining` (JSON answers)"),
        (status = 400, description = "Not a chat completions request", content_type = "application/problem+json"),
        (status = 404, description = "No such agent, or no such budget, for this tenant", content_type = "application/problem+json"),
        (status = 409, description = "The session has ended", content_type = "application/problem+json"),
        (status = 429, description = "The budget allows no more (`budget_exhausted`, `escalate_to_human`, `budget_completed`), or the upstream's own 429 with its `Retry-After`", content_type = "application/problem+json"),
        (status = 502, description = "The upstream failed or answered malformed JSON", content_type = "application/problem+json"),
        (status = 503, description = "No upstream is configured", content_type = "application/problem+json"),
        (status = 504, description = "The upstream did not answer in time", content_type = "application/problem+json"),
    ))]
pub(crate) async fn chat(
    State(state): State<GatewayState>,
    Tenant(tenant): Tenant,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let session = header(&headers, SESSION_HEADER);
    respond(state, tenant, agent_id, session, &headers, body).await
}

/// [`chat`] with the session in the path, for clients that cannot set headers.
#[utoipa::path(post, path = "/gateway/{agent_id}/sessions/{session_id}/v1/chat/completions", tag = "gateway",
    params(
        ("agent_id" = String, Path, description = "The agent"),
        ("session_id" = String, Path, description = "The session"),
        ("x-agentrl-budget" = Option<String>, Header, description = "A thinking budget the call goes under"),
    ),
    request_body(content = ChatRequest, description = "An OpenAI Chat Completions request"),
    responses(
        (status = 200, description = "The upstream's answer"),
        (status = 400, description = "Not a chat completions request", content_type = "application/problem+json"),
        (status = 404, description = "No such agent, or no such budget, for this tenant", content_type = "application/problem+json"),
        (status = 409, description = "The session has ended", content_type = "application/problem+json"),
        (status = 429, description = "The budget allows no more (`budget_exhausted`, `escalate_to_human`, `budget_completed`), or the upstream's own 429 with its `Retry-After`", content_type = "application/problem+json"),
        (status = 502, description = "The upstream failed or answered malformed JSON", content_type = "application/problem+json"),
        (status = 503, description = "No upstream is configured", content_type = "application/problem+json"),
        (status = 504, description = "The upstream did not answer in time", content_type = "application/problem+json"),
    ))]
pub(crate) async fn chat_in_session(
    State(state): State<GatewayState>,
    Tenant(tenant): Tenant,
    Path((agent_id, session)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    respond(state, tenant, agent_id, Some(session), &headers, body).await
}

/// A header's value; one that is not visible ASCII as a NUL, which no id check passes.
fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .map(|v| v.to_str().unwrap_or("\u{0}").to_owned())
}

async fn respond(
    state: GatewayState,
    tenant: TenantId,
    agent_id: String,
    session: Option<String>,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let budget = header(headers, BUDGET_HEADER);
    let caller = headers.get(header::AUTHORIZATION);
    match call(state, tenant, agent_id, session, budget, caller, body).await {
        Ok(r) | Err(r) => r,
    }
}

async fn call(
    state: GatewayState,
    tenant: TenantId,
    agent_id: String,
    session: Option<String>,
    budget: Option<String>,
    caller: Option<&HeaderValue>,
    body: Bytes,
) -> Result<Response, Response> {
    let fail = IntoResponse::into_response;
    let parsed = serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(&body));
    let mut request: ChatRequest = parsed.map_err(|e| {
        let path = e.path().to_string();
        let field = match path.as_str() {
            "." if e
                .inner()
                .to_string()
                .starts_with("missing field `messages`") =>
            {
                "messages".into()
            }
            "." => "body".into(),
            _ => path,
        };
        fail(OpenAiError::invalid(
            field,
            format!("not a chat completions request: {}", e.inner()),
        ))
    })?;
    let stream = request.stream.unwrap_or(false);
    let session = session_id(session).map_err(fail)?;
    if let Some(id) = &budget {
        check_id(BUDGET_HEADER, id)
            .map_err(|e| fail(OpenAiError::invalid(BUDGET_HEADER, e.to_string())))?;
    }
    let table = state.table.as_ref();
    let agent = sessions::agent(table, &tenant, &agent_id)
        .await
        .map_err(|e| fail(OpenAiError::from(e)))?
        .ok_or_else(|| {
            fail(OpenAiError::new(
                StatusCode::NOT_FOUND,
                "no such agent",
                "not_found",
            ))
        })?;
    let pinned = sessions::pin(table, &tenant, &agent_id, &session, || {
        let version = agent.route(&tenant, &session);
        Session {
            served_model: served_name(&agent_id, version.as_deref(), &agent.model.name),
            version,
            created_at_ms: now_ms(),
            budget: budget.clone(),
            ended: None,
        }
    })
    .await
    .map_err(|e| fail(OpenAiError::from(e)))?;
    if pinned.ended.is_some() {
        return Err(fail(OpenAiError::new(
            StatusCode::CONFLICT,
            format!("session {session} has ended: start another"),
            "session_ended",
        )));
    }
    let config = state
        .configs
        .get(&tenant)
        .await
        .map_err(|e| fail(OpenAiError::from(e)))?;
    request.model = Some(pinned.served_model.clone());
    if config.token_ids {
        request
            .rest
            .insert("return_token_ids".into(), Value::Bool(true));
        request.rest.entry("logprobs").or_insert(Value::Bool(true));
    }
    let call_id = uuid::Uuid::now_v7().to_string();
    let charge = match budget.as_ref().or(pinned.budget.as_ref()) {
        Some(id) => Some(
            budget::enforce(&state.ledger, &tenant, id, &call_id, &mut request.rest)
                .await
                .map_err(fail)?,
        ),
        None => None,
    };
    // A streamed answer's usage comes in a last chunk only when asked for; one the client did
    // not ask for is taken out of its stream.
    let strip_usage = stream
        && charge.is_some()
        && request
            .rest
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            != Some(true);
    if strip_usage {
        let options = request
            .rest
            .entry("stream_options")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Value::Object(o) = options {
            o.insert("include_usage".into(), Value::Bool(true));
        }
    }
    let tools = match request.rest.get("tools") {
        Some(Value::Array(tools)) => tools.clone(),
        _ => Vec::new(),
    };
    let record = CallRecord::new(
        call_id,
        pinned.served_model.clone(),
        pinned.version.clone(),
        request
            .messages
            .iter()
            .cloned()
            .map(Value::Object)
            .collect(),
        tools,
    );
    let upstream = state
        .upstream
        .post(&config, "/chat/completions", caller)
        .map_err(fail)?
        .json(&request)
        .send()
        .await
        .map_err(|e| fail(OpenAiError::transport(&e)))?;
    let status = upstream.status();
    if !status.is_success() {
        let retry_after = upstream.headers().get(header::RETRY_AFTER).cloned();
        // Only the message is wanted: the start of an error body is enough.
        let body = read_capped(upstream, MAX_ERROR_BYTES, Overflow::Cut)
            .await
            .unwrap_or_default();
        return Err(fail(OpenAiError::upstream(status, retry_after, &body)));
    }
    let prefix = sessions::calls_prefix(&tenant, &agent_id, &session);
    let mut response = if stream {
        let recording = Recording {
            inner: Box::pin(upstream.bytes_stream()),
            recorder: Some((state.recorder.clone(), prefix, StreamRecorder::new(record))),
            pending: Vec::new(),
            strip_usage,
            charge,
            closing: None,
            close_before_done: state.records_before_done,
            ended: false,
        };
        let mut r = Response::new(Body::from_stream(recording));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        r
    } else {
        let body = read_capped(upstream, MAX_ANSWER_BYTES, Overflow::Refuse)
            .await
            .map_err(fail)?;
        let answer: Value = serde_json::from_slice(&body).map_err(|e| {
            fail(OpenAiError::new(
                StatusCode::BAD_GATEWAY,
                format!("the upstream answered malformed JSON: {e}"),
                "upstream_malformed",
            ))
        })?;
        let mut record = record;
        record.complete(&answer, now_ms());
        state.recorder.record(&prefix, &record);
        if state.records_before_done {
            state.recorder.flush().await;
        }
        let mut r = Response::new(Body::from(body));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(charge) = charge
            && let Some(decision) = charge.settle(&record).await
        {
            budget::headers(r.headers_mut(), &decision);
        }
        r
    };
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&session) {
        headers.insert(SESSION_HEADER, v);
    }
    if let Ok(v) = HeaderValue::from_str(&pinned.served_model) {
        headers.insert(VERSION_HEADER, v);
    }
    Ok(response)
}

/// The upstream's event stream passed through chunk by chunk as it arrives, its `data:`
/// payloads fed to a [`StreamRecorder`] on the way; the record is queued when the stream ends
/// or, cut short (the client went away, the upstream failed), when it is dropped: then it is
/// marked truncated. Under a budget the record's usage is charged then, and a usage chunk the
/// gateway asked for on the client's behalf is left out (whole lines are passed on then).
/// Where the process may be frozen once the answer is complete (Lambda), the stream's end
/// waits until the record is written and the usage charged.
struct Recording {
    inner: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    recorder: Option<(Recorder, String, StreamRecorder)>,
    /// The bytes of a line not yet complete.
    pending: Vec<u8>,
    strip_usage: bool,
    charge: Option<budget::Charge>,
    /// The record's write and the charge, awaited before the stream ends.
    closing: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    close_before_done: bool,
    /// The upstream's stream ended.
    ended: bool,
}

/// A chunk that carries only the usage (`choices: []`).
fn usage_only(chunk: &Value) -> bool {
    chunk.get("usage").is_some_and(|u| !u.is_null())
        && chunk
            .get("choices")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
}

impl Recording {
    /// Feeds the recorder the complete lines in `bytes` (with what was pending); the bytes to
    /// pass on.
    fn feed(&mut self, bytes: Bytes) -> Bytes {
        let Some((.., rec)) = self.recorder.as_mut() else {
            return bytes;
        };
        self.pending.extend_from_slice(&bytes);
        let mut kept = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let mut keep = true;
            if let Some(data) = line.strip_prefix(b"data:") {
                let data = data.trim_ascii();
                if data == b"[DONE]" {
                    rec.done();
                } else if let Ok(chunk) = serde_json::from_slice::<Value>(data) {
                    rec.feed(&chunk);
                    keep = !(self.strip_usage && usage_only(&chunk));
                }
            }
            if keep && self.strip_usage {
                kept.extend_from_slice(&line);
            }
        }
        if self.strip_usage {
            Bytes::from(kept)
        } else {
            bytes
        }
    }

    fn finish(&mut self) {
        if let Some((recorder, prefix, rec)) = self.recorder.take() {
            let record = rec.finish(now_ms());
            recorder.record(&prefix, &record);
            let charge = self.charge.take();
            if self.close_before_done {
                self.closing = Some(Box::pin(async move {
                    recorder.flush().await;
                    if let Some(charge) = charge {
                        charge.settle(&record).await;
                    }
                }));
            } else if let Some(charge) = charge {
                charge.settle_behind(record);
            }
        }
    }
}

impl Stream for Recording {
    type Item = reqwest::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            // The upstream is done: what is left is the record's write (Lambda), then the end.
            if let Some(closing) = self.closing.as_mut() {
                if closing.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.closing = None;
            }
            return Poll::Ready(None);
        }
        loop {
            match self.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    let out = self.feed(bytes);
                    // A chunk that was only a usage line (or part of a line) passes nothing.
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(out)));
                    }
                }
                Poll::Ready(None) => {
                    self.ended = true;
                    self.finish();
                    return self.poll_next(cx);
                }
                Poll::Ready(Some(Err(e))) => {
                    self.finish();
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.finish();
    }
}
