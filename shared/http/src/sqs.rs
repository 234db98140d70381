//! The one SQS batch lifter of every queue-triggered function: Lambda's SQS records become
//! queue-port [`Message`]s, the function's batch handler decides, and the message ids it wants
//! retried come back as partial batch failures (`ReportBatchItemFailures`).
//!
//! Handlers dead-letter poison messages themselves (through the queue port, with the reason)
//! and acknowledge everything else by not listing it. [`drain`] is the local counterpart of
//! the trigger, over the queue port.

use std::{collections::HashSet, future::Future, time::Duration};

use agentrl_store::{
    StoreError,
    ports::{Message, Queue},
};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::{LambdaEvent, service_fn};

use crate::telemetry;

/// The port messages of an SQS event. A record without an id or a receipt handle cannot be
/// acknowledged or retried; SQS never sends one, so it is skipped with a log line.
pub fn messages(event: SqsEvent) -> Vec<Message> {
    event
        .records
        .into_iter()
        .filter_map(|record| {
            let (Some(id), Some(receipt)) = (record.message_id, record.receipt_handle) else {
                tracing::error!("SQS record without message id or receipt handle skipped");
                return None;
            };
            let receive_count = record
                .attributes
                .get("ApproximateReceiveCount")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            Some(Message {
                id,
                receipt,
                body: record.body.unwrap_or_default(),
                receive_count,
            })
        })
        .collect()
}

/// The partial batch response retrying exactly `retry` (message ids).
pub fn response(retry: impl IntoIterator<Item = String>) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = retry
        .into_iter()
        .map(|id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failure
        })
        .collect();
    response
}

/// Runs `handle` (messages → ids to retry) under the Lambda runtime until it stops; logging is
/// initialised first.
///
/// # Errors
/// When the runtime fails.
pub async fn run<H, F>(handle: H) -> Result<(), lambda_runtime::Error>
where
    H: Fn(Vec<Message>) -> F,
    F: Future<Output = Vec<String>>,
{
    telemetry::init();
    let handle = &handle;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let retry = handle(messages(event.payload)).await;
        Ok::<_, lambda_runtime::Error>(response(retry))
    }))
    .await
}

/// A queue's batch handler: messages in, the ids of those to retry out. Poison messages are
/// dead-lettered by the handler, with their reason; the rest are acknowledged.
pub trait Consumer: Send + Sync {
    /// Handles a batch; returns the ids of the messages to retry.
    fn process(&self, messages: &[Message]) -> impl Future<Output = Vec<String>> + Send;
}

/// How the local worker reads the queue.
#[derive(Debug, Clone, Copy)]
pub struct DrainOptions {
    /// Messages per batch (the ingest worker writes one Parquet object per tenant and date
    /// of a batch).
    pub max_messages: usize,
    /// How long a received message stays hidden before it is redelivered.
    pub visibility: Duration,
    /// How long to wait for the first message.
    pub wait: Duration,
}

impl Default for DrainOptions {
    fn default() -> Self {
        Self {
            max_messages: 1_000,
            visibility: Duration::from_secs(60),
            wait: Duration::from_secs(1),
        }
    }
}

/// Receives one batch from `queue`, hands it to `consumer` and acknowledges what was handled;
/// returns how many messages were received. The local counterpart of the SQS trigger.
///
/// # Errors
/// When the queue fails.
pub async fn drain(
    consumer: &impl Consumer,
    queue: &dyn Queue,
    options: DrainOptions,
) -> Result<usize, StoreError> {
    let mut batch: Vec<Message> = Vec::new();
    while batch.len() < options.max_messages {
        let wait = if batch.is_empty() {
            options.wait
        } else {
            Duration::ZERO
        };
        let got = queue
            .receive(
                (options.max_messages - batch.len()).min(10),
                options.visibility,
                wait,
            )
            .await?;
        if got.is_empty() {
            break;
        }
        batch.extend(got);
    }
    if batch.is_empty() {
        return Ok(0);
    }
    let retry: HashSet<String> = consumer.process(&batch).await.into_iter().collect();
    for message in batch.iter().filter(|m| !retry.contains(&m.id)) {
        queue.delete(&message.receipt).await?;
    }
    Ok(batch.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_become_messages_and_retries_become_failures() {
        let event: SqsEvent = serde_json::from_value(serde_json::json!({"Records": [
            {"messageId": "m-1", "receiptHandle": "r-1", "body": "{}",
             "attributes": {"ApproximateReceiveCount": "3"}},
            {"messageId": "m-2", "receiptHandle": "r-2", "body": "x", "attributes": {}},
            {"body": "no id"}
        ]}))
        .unwrap();
        let messages = messages(event);
        assert_eq!(messages.len(), 2);
        assert_eq!(
            (messages[0].id.as_str(), messages[0].receive_count),
            ("m-1", 3)
        );
        assert_eq!(messages[1].receive_count, 1);
        let json = serde_json::to_value(response(["m-2".to_owned()])).unwrap();
        assert_eq!(json["batchItemFailures"][0]["itemIdentifier"], "m-2");
    }
}
