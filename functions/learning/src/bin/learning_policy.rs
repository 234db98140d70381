//! Lambda entry point of the scheduled policy update loop (an EventBridge schedule invokes
//! it): wiring only.

use agentrl_learning::policy;
use agentrl_store::Stores;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    agentrl_http::telemetry::init();
    let stores = Stores::aws_from_env()?;
    let policy = &policy(stores.table.clone(), agentrl_learning::Outlets::of(&stores))
        .with_metrics(agentrl_http::lambda::options("learning-policy").metrics);
    lambda_runtime::run(service_fn(move |_: LambdaEvent<Value>| async move {
        let run = policy.run_pending().await?;
        Ok::<_, lambda_runtime::Error>(serde_json::to_value(run)?)
    }))
    .await
}
