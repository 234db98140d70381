//! Lambda entry point of the SQS-triggered evaluation worker: wiring only.

use std::sync::Arc;

use agentrl_diff::{Limits, Scorer};
use agentrl_http::sqs::{self, Consumer};
use agentrl_rewards::{Evaluator, Provider};
use agentrl_store::Stores;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    let stores = Stores::aws_from_env()?;
    let worker = Evaluator::new(
        stores.table,
        stores.objects,
        stores.evaluations,
        Arc::new(Provider::from_env()),
        Arc::new(Scorer::new(Limits::default())),
    );
    sqs::run(|messages| {
        let worker = worker.clone();
        async move { worker.process(&messages).await }
    })
    .await
}
