//! Runs a composed application under the Lambda runtime (API Gateway HTTP API, payload v2).

use axum::Router;

/// Hands `app` to `lambda_http`; returns when the runtime stops.
///
/// # Errors
/// When the runtime fails.
pub async fn run(app: Router) -> Result<(), lambda_http::Error> {
    lambda_http::run(app).await
}
