//! Runs a function under the Lambda runtime (API Gateway HTTP API, payload v2).

use std::sync::Arc;

use agentrl_store::{
    aws::{AwsSettings, DynamoTable},
    ports::Table,
    required_env,
};
use anyhow::Context;
use axum::{Router, body::Bytes};
use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::{AppOptions, Auth, DEFAULT_BODY_LIMIT, Metrics, Service, app, telemetry};

/// The whole `main` of a function whose routes need the table: logging, configuration from
/// the environment (`AGENTRL_TABLE`, `AWS_REGION`), the DynamoDB adapter, JWT-claim tenancy,
/// EMF metrics under the `service` dimension `name`, bodies up to `body_limit` bytes; returns
/// when the runtime stops.
///
/// # Errors
/// When a variable is missing or the runtime fails.
pub async fn run_table_service(
    name: &str,
    body_limit: usize,
    build: impl FnOnce(Arc<dyn Table>) -> Service,
) -> Result<(), lambda_http::Error> {
    telemetry::init();
    let table = required_env("AGENTRL_TABLE")?;
    let settings = AwsSettings {
        region: required_env("AWS_REGION")?,
        endpoint: None,
        dummy_credentials: false,
    };
    let table: Arc<dyn Table> = Arc::new(DynamoTable::connect(&settings, &table).await);
    let options = AppOptions {
        idempotency: Some(table.clone()),
        body_limit,
        ..options(name)
    };
    lambda_http::run(app(vec![build(table)], options)).await
}

/// The options a function runs with in Lambda: tenant from the JWT claim, EMF metrics under
/// the `service` dimension `name`, the default body limit.
pub fn options(name: &str) -> AppOptions {
    AppOptions {
        auth: Auth::JwtClaim,
        metrics: Metrics::Emf {
            namespace: "agentrl".into(),
            service: name.into(),
        },
        body_limit: DEFAULT_BODY_LIMIT,
        idempotency: None,
    }
}

/// Sends one API Gateway HTTP API (payload v2) event through `app`, decoded by `lambda_http`
/// exactly as the Lambda runtime does; returns the status and the body. For handler tests
/// and local invocations of the fixtures in `events/`.
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

/// The API Gateway fixture `events/{path}` of this repository, for handler tests.
///
/// # Errors
/// When the file is missing or not JSON.
pub fn fixture(path: &str) -> anyhow::Result<serde_json::Value> {
    let file = format!("{}/../../events/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&file).with_context(|| format!("reading {file}"))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {file}"))
}

/// `event` with `body` as its JSON body.
pub fn with_body(mut event: serde_json::Value, body: &serde_json::Value) -> serde_json::Value {
    event["body"] = body.to_string().into();
    event
}
