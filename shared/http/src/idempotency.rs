//! `Idempotency-Key` for every POST/PUT route, with Powertools' semantics.
//!
//! A request carrying `Idempotency-Key: K` first writes an in-progress record for
//! (tenant, K) with a conditional put. If the write wins, the handler runs and its answer
//! (any status below 500) is stored as the completed record, kept for an hour; a 5xx deletes
//! the record so a retry runs again. If a record exists:
//! - completed, same request (method, path and body hash) → the stored answer, replayed,
//!   with `Idempotency-Replayed: true`, without running the handler;
//! - same key, different request → 422;
//! - still in progress → 409. An in-progress record expires after [`IN_PROGRESS_SECONDS`]
//!   (the store's TTL semantics make it absent), so a crashed attempt does not block retries.

use std::sync::Arc;

use agentrl_store::{
    StoreError,
    clock::now_ms,
    keys::partition,
    ports::{Condition, Key, Put, Table},
};
use axum::{
    body::{Body, Bytes, to_bytes},
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{ApiError, Tenant};

/// How long a completed answer is replayed.
pub const COMPLETED_SECONDS: u64 = 3_600;
/// How long an attempt may be in progress before a retry may take over.
pub const IN_PROGRESS_SECONDS: u64 = 60;
/// Largest answer stored for replay; a larger one is returned but not kept (the key is freed).
pub const MAX_STORED_BODY: usize = 256 * 1024;
/// The header.
pub const HEADER: &str = "idempotency-key";

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum Record {
    InProgress {
        request: String,
    },
    Completed {
        request: String,
        status: u16,
        content_type: Option<String>,
        body: String,
    },
}

/// What the middleware needs: the table the records live in, and the body limit.
#[derive(Clone)]
pub(crate) struct Idempotency {
    pub table: Arc<dyn Table>,
    pub body_limit: usize,
}

fn record_key(tenant: &Tenant, key: &str) -> Key {
    Key::new(partition(&tenant.0, "idempotency", key), "record")
}

fn valid_key(key: &str) -> bool {
    (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic())
}

pub(crate) async fn idempotent(
    State(state): State<Idempotency>,
    req: Request,
    next: Next,
) -> Response {
    if !matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH) {
        return next.run(req).await;
    }
    let Some(key) = req.headers().get(HEADER) else {
        return next.run(req).await;
    };
    let Some(key) = key
        .to_str()
        .ok()
        .filter(|k| valid_key(k))
        .map(str::to_owned)
    else {
        return ApiError::invalid(HEADER, "must be 1 to 255 visible ASCII characters")
            .into_response();
    };
    let Some(tenant) = req.extensions().get::<Tenant>().cloned() else {
        return next.run(req).await;
    };
    let (parts, body) = req.into_parts();
    let Ok(bytes) = to_bytes(body, state.body_limit).await else {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is over the size limit",
        )
        .into_response();
    };
    let request = fingerprint(&parts.method, parts.uri.path(), &bytes);
    let record = record_key(&tenant, &key);
    match claim(state.table.as_ref(), &record, &request).await {
        Ok(Claim::Won(version)) => {
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            complete(state.table.as_ref(), &record, version, &request, response).await
        }
        Ok(Claim::Replay(response)) => response,
        Err(e) => e.into_response(),
    }
}

fn fingerprint(method: &Method, path: &str, body: &Bytes) -> String {
    let mut h = Sha256::new();
    h.update(method.as_str());
    h.update(b" ");
    h.update(path);
    h.update(b"\n");
    h.update(body);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

enum Claim {
    Won(u64),
    Replay(Response),
}

async fn claim(table: &dyn Table, key: &Key, request: &str) -> Result<Claim, ApiError> {
    let in_progress = Record::InProgress {
        request: request.to_owned(),
    };
    let put = Put {
        key: key.clone(),
        doc: agentrl_store::ports::encode(&in_progress)?,
        expires_at: Some(now_ms() / 1_000 + IN_PROGRESS_SECONDS),
        condition: Condition::Absent,
    };
    match table.put(put).await {
        Ok(version) => return Ok(Claim::Won(version)),
        Err(StoreError::ConditionFailed { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let Some(item) = table.get(key).await? else {
        // It expired between the two calls: the client may simply retry.
        return Err(ApiError::conflict(
            "a request with this Idempotency-Key is in progress",
        ));
    };
    let (record, _) = item.decode::<Record>()?;
    let stored_request = match &record {
        Record::InProgress { request } | Record::Completed { request, .. } => request,
    };
    if stored_request != request {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "this Idempotency-Key was used with a different request",
        )
        .with_field(HEADER));
    }
    match record {
        Record::InProgress { .. } => Err(ApiError::conflict(
            "a request with this Idempotency-Key is in progress",
        )),
        Record::Completed {
            status,
            content_type,
            body,
            ..
        } => Ok(Claim::Replay(replayed(status, content_type, body))),
    }
}

fn replayed(status: u16, content_type: Option<String>, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if let Some(ct) = content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    response
        .headers_mut()
        .insert("idempotency-replayed", HeaderValue::from_static("true"));
    response
}

async fn complete(
    table: &dyn Table,
    key: &Key,
    version: u64,
    request: &str,
    response: Response,
) -> Response {
    let (parts, body) = response.into_parts();
    let bytes = match to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(_) => {
            release(table, key, version).await;
            return ApiError::internal(&std::io::Error::other("reading the handler's response"))
                .into_response();
        }
    };
    let text = String::from_utf8(bytes.to_vec()).ok();
    let storable = parts.status.as_u16() < 500 && bytes.len() <= MAX_STORED_BODY;
    match text.filter(|_| storable) {
        Some(body) => {
            let record = Record::Completed {
                request: request.to_owned(),
                status: parts.status.as_u16(),
                content_type: parts
                    .headers
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
                body,
            };
            let stored = match agentrl_store::ports::encode(&record) {
                Ok(doc) => table
                    .put(Put {
                        key: key.clone(),
                        doc,
                        expires_at: Some(now_ms() / 1_000 + COMPLETED_SECONDS),
                        condition: Condition::Version(version),
                    })
                    .await
                    .map(drop),
                Err(e) => Err(e),
            };
            if let Err(e) = stored {
                tracing::warn!(error = %e, "could not store the idempotent response");
            }
        }
        None => release(table, key, version).await,
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Frees the key so a retry runs the handler again.
async fn release(table: &dyn Table, key: &Key, version: u64) {
    if let Err(e) = table.delete(key, Condition::Version(version)).await {
        tracing::warn!(error = %e, "could not release an idempotency key");
    }
}
