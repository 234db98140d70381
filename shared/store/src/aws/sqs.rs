//! [`Queue`] on SQS. Redrive after N receives is SQS's own (the queue's redrive policy);
//! `dead_letter` parks a message explicitly, with its reason as a message attribute.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_sqs::{
    Client,
    types::{MessageAttributeValue, MessageSystemAttributeName, SendMessageBatchRequestEntry},
};

use super::Deferred;
use crate::{
    StoreError,
    ports::{DeadLetter, Message, Queue},
    validate::check_bodies,
};

/// A queue and its dead-letter queue.
#[derive(Clone)]
pub struct SqsQueue {
    /// Resolved once and shared by every clone: the client, or the work of building it.
    client: Deferred<Client>,
    url: String,
    dlq_url: String,
}

impl SqsQueue {
    /// The queue at `url`, whose dead-letter queue is at `dlq_url`, reached through `client`.
    pub fn new(client: Client, url: &str, dlq_url: &str) -> Self {
        Self::with(Deferred::ready(client), url, dlq_url)
    }

    /// The queue at `url` and its dead-letter queue at `dlq_url`, with a client built from
    /// `config` on first use (see [`Deferred`]).
    pub fn deferred(config: &Deferred<SdkConfig>, url: &str, dlq_url: &str) -> Self {
        Self::with(config.client(Client::new), url, dlq_url)
    }

    fn with(client: Deferred<Client>, url: &str, dlq_url: &str) -> Self {
        Self {
            client,
            url: url.to_owned(),
            dlq_url: dlq_url.to_owned(),
        }
    }
}

fn backend<E: std::error::Error + Send + Sync + 'static>(
    what: &'static str,
) -> impl FnOnce(E) -> StoreError {
    move |e| StoreError::Backend(anyhow::Error::new(e).context(what))
}

fn text_attribute(value: &str) -> Result<MessageAttributeValue, StoreError> {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .context("building a message attribute")
        .map_err(StoreError::Backend)
}

fn whole_seconds(d: Duration, max: u64) -> i32 {
    d.as_secs_f64().ceil().min(max as f64) as i32
}

#[async_trait]
impl Queue for SqsQueue {
    async fn send_batch(&self, bodies: &[String]) -> Result<Vec<String>, StoreError> {
        check_bodies(bodies)?;
        let mut ids = Vec::with_capacity(bodies.len());
        for chunk in bodies.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, body)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(body)
                        .build()
                        .context("building a batch entry")
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let out = self
                .client
                .get()
                .await
                .send_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(backend("SendMessageBatch"))?;
            if let Some(f) = out.failed.first() {
                return Err(StoreError::Backend(anyhow::anyhow!(
                    "SQS refused message {}: {}",
                    f.id,
                    f.message.as_deref().unwrap_or(&f.code)
                )));
            }
            let mut sent = out.successful;
            sent.sort_by_key(|s| s.id.parse::<usize>().unwrap_or(usize::MAX));
            ids.extend(sent.into_iter().map(|s| s.message_id));
        }
        Ok(ids)
    }

    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
        wait: Duration,
    ) -> Result<Vec<Message>, StoreError> {
        let out = self
            .client
            .get()
            .await
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(max.clamp(1, 10) as i32)
            .visibility_timeout(whole_seconds(visibility, 43_200))
            .wait_time_seconds(whole_seconds(wait, 20))
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
            .map_err(backend("ReceiveMessage"))?;
        Ok(out
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let receive_count = m
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1);
                Message {
                    id: m.message_id.unwrap_or_default(),
                    receipt: m.receipt_handle.unwrap_or_default(),
                    body: m.body.unwrap_or_default(),
                    receive_count,
                }
            })
            .collect())
    }

    async fn delete(&self, receipt: &str) -> Result<(), StoreError> {
        match self
            .client
            .get()
            .await
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_receipt_handle_is_invalid()) =>
            {
                Ok(())
            }
            Err(e) => Err(backend("DeleteMessage")(e)),
        }
    }

    async fn dead_letter(&self, message: &Message, reason: &str) -> Result<(), StoreError> {
        self.client
            .get()
            .await
            .send_message()
            .queue_url(&self.dlq_url)
            .message_body(&message.body)
            .message_attributes("reason", text_attribute(reason)?)
            .message_attributes("original_message_id", text_attribute(&message.id)?)
            .send()
            .await
            .map_err(backend("SendMessage to the dead-letter queue"))?;
        self.delete(&message.receipt).await
    }

    async fn dead_letters(&self, max: usize) -> Result<Vec<DeadLetter>, StoreError> {
        // Peek: a zero visibility timeout leaves every message in the dead-letter queue.
        let out = self
            .client
            .get()
            .await
            .receive_message()
            .queue_url(&self.dlq_url)
            .max_number_of_messages(max.clamp(1, 10) as i32)
            .visibility_timeout(0)
            .message_attribute_names("All")
            .send()
            .await
            .map_err(backend("ReceiveMessage from the dead-letter queue"))?;
        Ok(out
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let attr = |k: &str| {
                    m.message_attributes
                        .as_ref()
                        .and_then(|a| a.get(k))
                        .and_then(|v| v.string_value.clone())
                };
                DeadLetter {
                    id: attr("original_message_id")
                        .or_else(|| m.message_id.clone())
                        .unwrap_or_default(),
                    reason: attr("reason")
                        .unwrap_or_else(|| "max receives exceeded (SQS redrive policy)".to_owned()),
                    body: m.body.clone().unwrap_or_default(),
                }
            })
            .collect())
    }
}
