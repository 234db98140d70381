//! Lambda entry point of the training function's routes: wiring only.

use std::sync::Arc;

use agentrl_store::Stores;
use agentrl_training::{TrainingState, launch::BatchLauncher, service};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    agentrl_http::telemetry::init();
    let stores = Stores::aws_from_env()?;
    let launcher = Arc::new(BatchLauncher::from_env()?);
    let state = TrainingState::new(
        stores.table.clone(),
        stores.objects,
        launcher,
        agentrl_http::lambda::pseudonyms_from_env()?,
    )
    .with_metrics(agentrl_http::Metrics::Emf {
        namespace: "agentrl".into(),
        service: "training".into(),
    });
    let options = agentrl_http::AppOptions {
        idempotency: Some(stores.table),
        ..agentrl_http::lambda::options("training")
    };
    lambda_http::run(agentrl_http::app(vec![service(state)], options)).await
}
