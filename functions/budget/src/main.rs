//! Lambda entry point of the budget function: wiring only.

use std::sync::Arc;

use agentrl_budget::{BudgetState, service};
use agentrl_http::{AppOptions, Auth, DEFAULT_BODY_LIMIT, Metrics, app, telemetry};
use agentrl_store::aws::{AwsSettings, DynamoTable};
use anyhow::Context;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let table = std::env::var("AGENTRL_TABLE")
        .context("failed to load environment variable AGENTRL_TABLE")?;
    let region =
        std::env::var("AWS_REGION").context("failed to load environment variable AWS_REGION")?;
    let settings = AwsSettings {
        region,
        endpoint: None,
        dummy_credentials: false,
    };
    let client = aws_sdk_dynamodb::Client::new(&settings.load().await);
    let state = BudgetState::new(Arc::new(DynamoTable::new(client, &table)));
    let options = AppOptions {
        auth: Auth::JwtClaim,
        metrics: Metrics::Emf {
            namespace: "agentrl".into(),
            service: "budget".into(),
        },
        body_limit: DEFAULT_BODY_LIMIT,
    };
    agentrl_http::lambda::run(app(vec![service(state)], options)).await
}
