//! The consumer of the ingest queue. Trajectories and learning events share one queue (one
//! SQS trigger, one dead-letter queue); this crate is where both consumers are known, so
//! `functions/ingest` and `functions/learning` stay independent of each other.
//!
//! The same worker runs as the SQS-triggered Lambda (`ingest`) and in-process under
//! `agentrl serve`, over the embedded queue.

use std::sync::Arc;

use agentrl_core::privacy::Pseudonymizer;
use agentrl_http::sqs::Consumer;
use agentrl_ingest::Ingest;
use agentrl_judges::Provider;
use agentrl_learning::{Learner, Outlets, is_event_message};
use agentrl_store::ports::{Message, Objects, Queue, Table};

/// Dispatches each message of a batch to the worker of its kind. Cheap to clone.
#[derive(Clone)]
pub struct QueueWorker {
    ingest: Ingest,
    learner: Learner,
}

impl QueueWorker {
    /// Workers over `table` and `objects`, dead-lettering through `queue` (the queue the
    /// messages come from); what learning events change is announced on `outlets`; judged
    /// turn rewards ask `provider`.
    pub fn new(
        table: Arc<dyn Table>,
        objects: Arc<dyn Objects>,
        queue: Arc<dyn Queue>,
        outlets: Outlets,
        pseudonyms: Arc<Pseudonymizer>,
        provider: Arc<Provider>,
    ) -> Self {
        Self {
            ingest: Ingest::new(table.clone(), objects, queue.clone(), pseudonyms, provider),
            learner: Learner::new(table, queue, outlets),
        }
    }
}

impl Consumer for QueueWorker {
    /// Learning events (messages with an `event`) to the learner, everything else to the
    /// trajectory worker, concurrently; the ids to retry of both.
    async fn process(&self, messages: &[Message]) -> Vec<String> {
        let (events, trajectories): (Vec<&Message>, Vec<&Message>) =
            messages.iter().partition(|m| is_event_message(&m.body));
        let (mut retry, learned) = tokio::join!(
            self.ingest.process(trajectories),
            self.learner.process(events)
        );
        retry.extend(learned);
        retry
    }
}
