//! Lambda entry point of the training function's event consumer: the training queue (SQS,
//! `training.dataset.ready`) and AWS Batch's *Job State Change* events (EventBridge). Wiring
//! only.

use std::sync::Arc;

use agentrl_http::sqs::{self, Consumer};
use agentrl_store::Stores;
use agentrl_training::{TrainingConsumer, TrainingState, launch::BatchLauncher};
use aws_lambda_events::event::sqs::SqsEvent;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    agentrl_http::telemetry::init();
    let stores = Stores::aws_from_env()?;
    let state = TrainingState::new(
        stores.table,
        stores.objects,
        Arc::new(BatchLauncher::from_env()?),
        agentrl_http::lambda::pseudonyms_from_env()?,
    )
    .with_metrics(agentrl_http::Metrics::Emf {
        namespace: "agentrl".into(),
        service: "training".into(),
    });
    let consumer = &TrainingConsumer::new(state, stores.training);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        if event.payload.get("Records").is_some() {
            let records: SqsEvent = serde_json::from_value(event.payload)?;
            let retry = consumer.process(&sqs::messages(records)).await;
            return Ok::<_, lambda_runtime::Error>(serde_json::to_value(sqs::response(retry))?);
        }
        let changed = consumer.batch_state_change(&event.payload).await?;
        Ok(serde_json::json!({ "changed": changed }))
    }))
    .await
}
