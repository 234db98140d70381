//! Runs a function under the Lambda runtime (API Gateway HTTP API, payload v2).

use std::sync::Arc;

use agentrl_store::{
    aws::{AwsSettings, DynamoTable},
    ports::Table,
    required_env,
};

use crate::{AppOptions, Auth, DEFAULT_BODY_LIMIT, Metrics, Service, app, telemetry};

/// The whole `main` of a function whose routes need the table: logging, configuration from
/// the environment (`AGENTRL_TABLE`, `AWS_REGION`), the DynamoDB adapter (its client built on the first request that needs it), JWT-claim tenancy,
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
    let table: Arc<dyn Table> = Arc::new(DynamoTable::connect(&settings, &table));
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
        auth: Auth::jwt_claim(),
        metrics: Metrics::Emf {
            namespace: "agentrl".into(),
            service: name.into(),
        },
        body_limit: DEFAULT_BODY_LIMIT,
        idempotency: None,
    }
}

/// The deployment's pseudonymiser, keyed by `AGENTRL_PSEUDONYM_SECRET` (on AWS resolved from
/// Secrets Manager by the template; only the functions that name tenant partitions get it:
/// the ingest worker, the dataset function and the two training functions).
///
/// # Errors
/// When the secret is missing or shorter than the minimum.
pub fn pseudonyms_from_env() -> anyhow::Result<Arc<agentrl_core::privacy::Pseudonymizer>> {
    use anyhow::Context;
    let secret = required_env("AGENTRL_PSEUDONYM_SECRET")?;
    let pseudonyms = agentrl_core::privacy::Pseudonymizer::new(secret.as_bytes())
        .context("AGENTRL_PSEUDONYM_SECRET")?;
    Ok(Arc::new(pseudonyms))
}
