//! Lambda entry point of the SQS-triggered ingest-queue worker: wiring only.

use agentrl_http::lambda::pseudonyms_from_env;
use agentrl_http::sqs::{self, Consumer};
use agentrl_judges::Provider;
use agentrl_queue_worker::QueueWorker;
use agentrl_store::Stores;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    let stores = Stores::aws_from_env()?;
    let worker = QueueWorker::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
        agentrl_learning::Outlets::of(&stores),
        pseudonyms_from_env()?,
        std::sync::Arc::new(Provider::from_env()),
    );
    sqs::run(|messages| {
        let worker = worker.clone();
        async move { worker.process(&messages).await }
    })
    .await
}
