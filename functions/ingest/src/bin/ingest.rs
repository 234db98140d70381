//! Lambda entry point of the SQS-triggered ingest worker: wiring only.

use agentrl_http::sqs;
use agentrl_ingest::{Ingest, pseudonyms_from_env};
use agentrl_store::Stores;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let stores = Stores::aws_from_env().await?;
    let ingest = Ingest::new(
        stores.table,
        stores.objects,
        stores.queue,
        stores.events,
        pseudonyms_from_env()?,
    );
    sqs::run(|messages| {
        let ingest = ingest.clone();
        async move { ingest.process(&messages).await }
    })
    .await
}
