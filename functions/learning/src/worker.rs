//! The queue worker of learning events: a batch of messages in, projections updated.
//!
//! Every message ends in exactly one place: applied (or found already applied) and then
//! acknowledged, the dead-letter queue with the reason (malformed or invalid: retrying cannot
//! help), or back on the queue for a retry (a store failed). Events are grouped by agent so
//! each agent's projection is read and written once per chunk of its events, not per event;
//! agents are processed concurrently.

use std::{collections::BTreeMap, sync::Arc};

use agentrl_core::{TenantId, learning::Event};
use agentrl_http::consume::{self, Outcome};
use agentrl_store::{
    StoreError,
    ports::{Message, Queue, Table},
};

use crate::{EventEnvelope, Outlets, policy::Policy, repo::LearningRepo};

/// How many agents of a batch are applied at once. Mostly waiting on the store: many in
/// flight let the embedded store commit their transactions together (one fsync for the
/// group) and DynamoDB serve them in parallel.
const CONCURRENT_AGENTS: usize = 64;

/// The worker's dependencies. Cheap to clone.
#[derive(Clone)]
pub struct Learner {
    repo: LearningRepo,
    policy: Policy,
    queue: Arc<dyn Queue>,
}

impl Learner {
    /// A worker over `table`, dead-lettering through `queue` (the queue the messages came
    /// from) and emitting `agent.learning.updated` and friends on `outlets`.
    pub fn new(table: Arc<dyn Table>, queue: Arc<dyn Queue>, outlets: Outlets) -> Self {
        let repo = LearningRepo::new(table);
        Self {
            policy: Policy::new(repo.clone(), outlets),
            repo,
            queue,
        }
    }

    /// Processes a batch of learning-event messages; returns the ids of the messages to retry.
    /// Poison messages are dead-lettered here, with their reason.
    pub async fn process<'a>(
        &self,
        messages: impl IntoIterator<Item = &'a Message>,
    ) -> Vec<String> {
        consume::grouped(
            self.queue.as_ref(),
            messages,
            CONCURRENT_AGENTS,
            |message| std::future::ready(parse(message)),
            |(tenant, agent), events| async move {
                let count = events.len();
                let mut unique = BTreeMap::new();
                for event in events {
                    // The same event twice in one batch (a duplicate send) is one event.
                    unique.entry(event.event_id.clone()).or_insert(event);
                }
                let outcome = match self.apply(&tenant, &agent, unique).await {
                    Ok(()) => Outcome::Done,
                    Err(e) => {
                        Outcome::Retry(format!("the events of agent {agent} ({tenant}): {e}"))
                    }
                };
                vec![outcome; count]
            },
        )
        .await
    }

    async fn apply(
        &self,
        tenant: &TenantId,
        agent: &str,
        events: BTreeMap<String, Event>,
    ) -> Result<(), StoreError> {
        let config = self.repo.config(tenant).await?;
        let applied = self
            .repo
            .apply(tenant, agent, events.into_values().collect(), &config)
            .await?;
        tracing::debug!(%tenant, agent_id = %agent, applied = applied.applied, duplicates = applied.duplicates, "events applied");
        if applied.update_due {
            // The threshold trigger. A failure here does not undo the events: the scheduled
            // run picks the agent up from the pending list.
            if let Err(e) = self.policy.update(tenant, agent).await {
                tracing::warn!(%tenant, agent_id = %agent, error = %format!("{e:#}"), "threshold update failed; the schedule will retry");
            }
        }
        Ok(())
    }
}

/// The agent's group and the validated event of a message.
fn parse(message: &Message) -> Result<((TenantId, String), Event), Outcome> {
    let envelope: EventEnvelope = consume::decode(&message.body, "a learning-event message")?;
    let tenant =
        TenantId::parse(&envelope.tenant).map_err(|e| Outcome::Poison(format!("tenant: {e}")))?;
    envelope
        .event
        .validate()
        .map_err(|e| Outcome::Poison(format!("invalid event: {e}")))?;
    Ok(((tenant, envelope.event.agent_id.clone()), envelope.event))
}
