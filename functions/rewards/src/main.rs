//! Lambda entry point of the rewards function: wiring only.

use std::sync::Arc;

use agentrl_http::{AppOptions, app, lambda::options, telemetry};
use agentrl_rewards::{MAX_BODY_BYTES, Provider, RewardState, service};
use agentrl_store::Stores;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let stores = Stores::aws_from_env()?;
    let options = AppOptions {
        idempotency: Some(stores.table.clone()),
        body_limit: MAX_BODY_BYTES,
        ..options("rewards")
    };
    let state = RewardState::new(
        stores.table,
        stores.objects,
        stores.evaluations,
        Arc::new(Provider::from_env()),
    );
    lambda_http::run(app(vec![service(state)], options)).await
}
