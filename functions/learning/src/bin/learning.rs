//! Lambda entry point of the learning API: wiring only.

use agentrl_http::{DEFAULT_BODY_LIMIT, app, lambda::options};
use agentrl_learning::{LearningState, service};
use agentrl_store::Stores;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    agentrl_http::telemetry::init();
    let stores = Stores::aws_from_env()?;
    let state = LearningState::new(
        stores.table.clone(),
        stores.queue.clone(),
        agentrl_learning::Outlets::of(&stores),
    );
    let options = agentrl_http::AppOptions {
        idempotency: Some(stores.table),
        body_limit: DEFAULT_BODY_LIMIT,
        ..options("learning")
    };
    lambda_http::run(app(vec![service(state)], options)).await
}
