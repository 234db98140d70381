//! API Gateway HTTP API (payload v2) events through a router, decoded by `lambda_http`
//! exactly as the Lambda runtime does: the handler tests of every function use the fixtures
//! in `events/`, which `sam local invoke` takes as well.

use anyhow::Context;
use axum::{Router, body::Bytes};
use http_body_util::BodyExt;
use tower::ServiceExt;

/// Sends one event through `app`; returns the status and the body.
///
/// # Errors
/// When `event` is not an API Gateway event.
pub async fn invoke(app: &Router, event: &str) -> anyhow::Result<(u16, Bytes)> {
    let request = lambda_http::request::from_str(event).context("not an API Gateway event")?;
    let response = app.clone().oneshot(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

/// [`invoke`] for JSON: the event as a value, the body parsed (`Null` when it is not JSON).
///
/// # Errors
/// When `event` is not an API Gateway event.
pub async fn invoke_json(
    app: &Router,
    event: &serde_json::Value,
) -> anyhow::Result<(u16, serde_json::Value)> {
    let (status, body) = invoke(app, &event.to_string()).await?;
    Ok((status, serde_json::from_slice(&body).unwrap_or_default()))
}

/// The fixture `events/{path}` of this repository: the one above the running test's package
/// (cargo sets `CARGO_MANIFEST_DIR` when it runs a test), so a build of this crate made in
/// another checkout that shares the target directory still reads this checkout's fixtures.
///
/// # Errors
/// When the file is missing or not JSON.
pub fn fixture(path: &str) -> anyhow::Result<serde_json::Value> {
    let package = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned());
    let root = std::path::Path::new(&package)
        .ancestors()
        .find(|dir| dir.join("events").is_dir() && dir.join("Cargo.lock").is_file())
        .with_context(|| format!("no repository root with events/ above {package}"))?;
    let file = root.join("events").join(path).display().to_string();
    let text = std::fs::read_to_string(&file).with_context(|| format!("reading {file}"))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {file}"))
}

/// `event` with `body` as its JSON body.
pub fn with_body(mut event: serde_json::Value, body: &serde_json::Value) -> serde_json::Value {
    event["body"] = body.to_string().into();
    event
}
