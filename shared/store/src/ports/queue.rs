//! A queue with at-least-once delivery, visibility timeouts and a dead-letter queue.

use std::time::Duration;

use async_trait::async_trait;

use crate::StoreError;

/// A received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The id given when it was sent: stable across redeliveries.
    pub id: String,
    /// The handle for this delivery: pass it to `delete` or `dead_letter`.
    pub receipt: String,
    /// The body as sent.
    pub body: String,
    /// How many times it was delivered, this delivery included.
    pub receive_count: u32,
}

/// A message parked in the dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The original message id.
    pub id: String,
    /// The body as sent.
    pub body: String,
    /// Why it was dead-lettered.
    pub reason: String,
}

/// The queue port.
///
/// Contract: a received message is invisible for its visibility timeout, then delivered
/// again unless deleted; a message delivered `max_receives` times without being deleted
/// moves to the dead-letter queue (reason `max receives exceeded`).
#[async_trait]
pub trait Queue: Send + Sync + 'static {
    /// Sends one message; returns its id.
    ///
    /// # Errors
    /// MUST return [`StoreError::Invalid`] for a body over 256 KiB.
    async fn send(&self, body: &str) -> Result<String, StoreError> {
        Ok(self
            .send_batch(&[body.to_owned()])
            .await?
            .pop()
            .unwrap_or_default())
    }

    /// Sends several messages; returns their ids in order.
    ///
    /// # Errors
    /// As [`Queue::send`]; a failure may leave a prefix of the batch sent.
    async fn send_batch(&self, bodies: &[String]) -> Result<Vec<String>, StoreError>;

    /// Receives up to `max` (1 to 10) messages, hiding them for `visibility`; waits up to
    /// `wait` for the first one.
    ///
    /// # Errors
    /// MUST return [`StoreError::Backend`] only when the backend fails.
    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
        wait: Duration,
    ) -> Result<Vec<Message>, StoreError>;

    /// Deletes a delivered message (acknowledges it).
    ///
    /// # Errors
    /// MUST NOT fail for a receipt whose message is already gone.
    async fn delete(&self, receipt: &str) -> Result<(), StoreError>;

    /// Moves a delivered message to the dead-letter queue with `reason`.
    ///
    /// # Errors
    /// MUST leave the message in the queue when it cannot be parked.
    async fn dead_letter(&self, message: &Message, reason: &str) -> Result<(), StoreError>;

    /// Reads (without removing) up to `max` messages of the dead-letter queue.
    ///
    /// # Errors
    /// MUST return [`StoreError::Backend`] only when the backend fails.
    async fn dead_letters(&self, max: usize) -> Result<Vec<DeadLetter>, StoreError>;
}
