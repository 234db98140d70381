//! The one way a queue consumer settles its messages. Each message is decoded with its
//! envelope version checked before the full parse (so a newer producer's message is named as
//! such rather than reported as malformed), handled to a typed [`Outcome`], and settled:
//! acknowledged, dead-lettered with its reason, or listed for a retry (the ids a
//! [`crate::sqs::Consumer`] returns, SQS's partial batch failures).
//!
//! [`each`] handles a batch message by message; [`grouped`] prepares every message first and
//! then applies them a group at a time (per tenant, agent or partition), for consumers whose
//! store work is done once per group rather than once per message.

use std::{collections::BTreeMap, future::Future};

use agentrl_store::{
    StoreError,
    ports::{Message, Queue},
};
use futures::{StreamExt, stream};
use serde::de::DeserializeOwned;

/// What became of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Handled, or found already handled: acknowledge it.
    Done,
    /// It may succeed later (a store failed): leave it on the queue. The reason is logged.
    Retry(String),
    /// Retrying cannot help: dead-letter it with this reason.
    Poison(String),
}

impl From<StoreError> for Outcome {
    fn from(e: StoreError) -> Self {
        Self::Retry(e.to_string())
    }
}

/// Lets a handler stop at its first failure with `?` and end with `Ok(())`.
impl From<Result<(), Outcome>> for Outcome {
    fn from(result: Result<(), Outcome>) -> Self {
        result.err().unwrap_or(Self::Done)
    }
}

/// A message body as `T`, its envelope version checked first.
///
/// # Errors
/// [`Outcome::Poison`]: a newer envelope version (named), or a body that is not `what` (with
/// serde's reason, after `not {what}: `).
pub fn decode<T: DeserializeOwned>(body: &str, what: &str) -> Result<T, Outcome> {
    agentrl_core::envelope::check_version(body).map_err(Outcome::Poison)?;
    serde_json::from_str(body).map_err(|e| Outcome::Poison(format!("not {what}: {e}")))
}

/// Settles `message` by `outcome`; `Some(id)` when it is to be retried, which is also the
/// case for a poison message that could not be dead-lettered (the queue's own redrive parks
/// it in the end).
pub async fn settle(queue: &dyn Queue, message: &Message, outcome: Outcome) -> Option<String> {
    match outcome {
        Outcome::Done => None,
        Outcome::Retry(reason) => {
            tracing::warn!(message_id = %message.id, %reason, "will retry");
            Some(message.id.clone())
        }
        Outcome::Poison(reason) => {
            tracing::warn!(message_id = %message.id, %reason, "dead-lettered");
            match queue.dead_letter(message, &reason).await {
                Ok(()) => None,
                Err(e) => {
                    tracing::warn!(message_id = %message.id, error = %e, "dead-lettering failed; will retry");
                    Some(message.id.clone())
                }
            }
        }
    }
}

/// Handles each message with `handle`, up to `concurrency` at once, dead-lettering through
/// `queue` (the queue the messages came from); returns the ids to retry.
pub async fn each<'m, H, F, O>(
    queue: &dyn Queue,
    messages: impl IntoIterator<Item = &'m Message>,
    concurrency: usize,
    handle: H,
) -> Vec<String>
where
    H: Fn(&'m Message) -> F,
    F: Future<Output = O>,
    O: Into<Outcome>,
{
    // Built before they are streamed: a closure held by the stream across its awaits would
    // make the caller's future lose `Send` (the compiler cannot prove it for every lifetime).
    let handled: Vec<_> = messages
        .into_iter()
        .map(|message| {
            let outcome = handle(message);
            async move { settle(queue, message, outcome.await.into()).await }
        })
        .collect();
    stream::iter(handled)
        .buffer_unordered(concurrency.max(1))
        .filter_map(std::future::ready)
        .collect()
        .await
}

/// Prepares every message of a batch at once with `prepare` (its group's key and item, or why
/// it cannot join one), then applies each group with `apply`, up to `concurrency` groups at
/// once; dead-letters through `queue` and returns the ids to retry.
///
/// `apply` receives a group's items in message order and answers one outcome per item, in the
/// same order; an item it leaves without one is retried.
pub async fn grouped<'m, K, V, P, PF, A, AF>(
    queue: &dyn Queue,
    messages: impl IntoIterator<Item = &'m Message>,
    concurrency: usize,
    prepare: P,
    apply: A,
) -> Vec<String>
where
    K: Ord,
    P: Fn(&'m Message) -> PF,
    PF: Future<Output = Result<(K, V), Outcome>>,
    A: Fn(K, Vec<V>) -> AF,
    AF: Future<Output = Vec<Outcome>>,
{
    let messages: Vec<&Message> = messages.into_iter().collect();
    let prepared = futures::future::join_all(messages.iter().map(|m| prepare(m))).await;
    let mut groups: BTreeMap<K, (Vec<&Message>, Vec<V>)> = BTreeMap::new();
    let mut settled: Vec<(&Message, Outcome)> = Vec::new();
    for (message, result) in messages.into_iter().zip(prepared) {
        match result {
            Ok((key, item)) => {
                let group = groups
                    .entry(key)
                    .or_insert_with(|| (Vec::new(), Vec::new()));
                group.0.push(message);
                group.1.push(item);
            }
            Err(outcome) => settled.push((message, outcome)),
        }
    }
    let applying: Vec<_> = groups
        .into_iter()
        .map(|(key, (members, items))| {
            let outcomes = apply(key, items);
            async move {
                let outcomes = outcomes.await.into_iter().chain(std::iter::repeat_with(|| {
                    Outcome::Retry("the group left this message without an outcome".to_owned())
                }));
                members.into_iter().zip(outcomes).collect::<Vec<_>>()
            }
        })
        .collect();
    let applied: Vec<Vec<(&Message, Outcome)>> = stream::iter(applying)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut retry = Vec::new();
    for (message, outcome) in settled.into_iter().chain(applied.into_iter().flatten()) {
        retry.extend(settle(queue, message, outcome).await);
    }
    retry
}
