//! Claim checks: a message too large for the queue (SQS takes 256 KiB) travels as a small
//! reference to an object holding its body, written before the reference is sent. The
//! consumer opens a message the same way whichever way it came.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::ports::{Objects, Queue};
use crate::validate::MAX_BODY_BYTES;

/// Where a tenant's claimed bodies are written: raw (unscrubbed) messages, read once by the
/// consumer; give the prefix a lifecycle rule on S3.
#[must_use]
pub fn prefix(tenant: &agentrl_core::TenantId) -> String {
    format!("claims/tenant={tenant}/")
}

/// What a claimed message's body is on the queue.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimCheck {
    /// The object holding the real body.
    claim_check: String,
}

/// Sends `body`: as itself when it fits a queue message, else written to an object under
/// `prefix` (named by a new UUIDv7) and sent as a reference to it. Returns the message id.
///
/// # Errors
/// The object store or the queue failed.
pub async fn send(
    queue: &dyn Queue,
    objects: &dyn Objects,
    prefix: &str,
    body: &str,
) -> Result<String, StoreError> {
    if body.len() <= MAX_BODY_BYTES {
        return queue.send(body).await;
    }
    let path = format!("{prefix}{}.json", uuid::Uuid::now_v7());
    objects
        .put(&path, bytes::Bytes::copy_from_slice(body.as_bytes()))
        .await?;
    let claim = serde_json::to_string(&ClaimCheck { claim_check: path })
        .map_err(|e| StoreError::Backend(e.into()))?;
    queue.send(&claim).await
}

/// Why a claimed body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The object is gone, or is not text: retrying cannot help.
    #[error("claim check {path}: {reason}")]
    Unusable {
        /// The object named.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The object store failed: retry.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The body of a received message: its own, or the object its claim check names.
///
/// # Errors
/// An object that is gone or not UTF-8, or a failing store.
pub async fn open<'a>(objects: &dyn Objects, body: &'a str) -> Result<Cow<'a, str>, OpenError> {
    // A claim is a small object with one field; anything else is a body of its own.
    let claim = if body.len() < 2048 && body.trim_start().starts_with("{\"claim_check\"") {
        serde_json::from_str::<ClaimCheck>(body).ok()
    } else {
        None
    };
    let Some(ClaimCheck { claim_check: path }) = claim else {
        return Ok(Cow::Borrowed(body));
    };
    let unusable = |reason: &str| OpenError::Unusable {
        path: path.clone(),
        reason: reason.to_owned(),
    };
    let bytes = objects
        .get(&path)
        .await?
        .ok_or_else(|| unusable("the object is gone"))?;
    String::from_utf8(bytes.to_vec())
        .map(Cow::Owned)
        .map_err(|_| unusable("the object is not UTF-8"))
}
