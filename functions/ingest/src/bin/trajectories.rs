//! Lambda entry point of the trajectory API: wiring only.

use agentrl_http::{AppOptions, app, lambda::options, telemetry};
use agentrl_ingest::{TrajectoryState, service};
use agentrl_store::Stores;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let stores = Stores::aws_from_env()?;
    let options = AppOptions {
        idempotency: Some(stores.table.clone()),
        ..options("trajectories")
    };
    let state = TrajectoryState::new(stores.queue, stores.objects, stores.table)
        .with_metrics(options.metrics.clone());
    lambda_http::run(app(vec![service(state)], options)).await
}
