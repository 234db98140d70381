//! The queue worker of learning events: a batch of messages in, projections updated.
//!
//! Every message ends in exactly one place: applied (or found already applied) and then
//! acknowledged, the dead-letter queue with the reason (malformed or invalid: retrying cannot
//! help), or back on the queue for a retry (a store failed). Events are grouped by agent so
//! each agent's projection is read and written once per chunk of its events, not per event;
//! agents are processed concurrently.

use std::{collections::BTreeMap, sync::Arc};

use agentrl_core::{FieldError, TenantId, TenantIdError, learning::Event};
use agentrl_store::{
    StoreError,
    ports::{Message, Queue, Table},
};
use futures::{StreamExt, stream};

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

/// One agent's share of a batch.
struct Group {
    events: BTreeMap<String, Event>,
    messages: Vec<String>,
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
        let mut groups: BTreeMap<(TenantId, String), Group> = BTreeMap::new();
        let mut retry = Vec::new();
        for message in messages {
            match parse(message) {
                Ok((tenant, event)) => {
                    let group = groups
                        .entry((tenant, event.agent_id.clone()))
                        .or_insert_with(|| Group {
                            events: BTreeMap::new(),
                            messages: Vec::new(),
                        });
                    group.messages.push(message.id.clone());
                    // The same event twice in one batch (a duplicate send) is one event.
                    group.events.entry(event.event_id.clone()).or_insert(event);
                }
                Err(poison) => {
                    let reason = poison.to_string();
                    tracing::warn!(message_id = %message.id, %reason, "dead-lettered");
                    if let Err(e) = self.queue.dead_letter(message, &reason).await {
                        tracing::warn!(message_id = %message.id, error = %e, "dead-lettering failed; will retry");
                        retry.push(message.id.clone());
                    }
                }
            }
        }
        let failed: Vec<Vec<String>> = stream::iter(groups)
            .map(|((tenant, agent), group)| async move {
                match self.apply(&tenant, &agent, group.events).await {
                    Ok(()) => Vec::new(),
                    Err(e) => {
                        tracing::warn!(%tenant, agent_id = %agent, error = %format!("{e:#}"), "events will be retried");
                        group.messages
                    }
                }
            })
            .buffer_unordered(CONCURRENT_AGENTS)
            .collect()
            .await;
        retry.extend(failed.into_iter().flatten());
        retry
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

/// Why a message is poison: retrying cannot help, it is dead-lettered with this reason.
#[derive(Debug, thiserror::Error)]
enum Poison {
    #[error("not a learning-event message: {0}")]
    Malformed(#[from] serde_json::Error),
    #[error("{0}")]
    Version(String),
    #[error("tenant: {0}")]
    Tenant(#[from] TenantIdError),
    #[error("invalid event: {0}")]
    Invalid(#[from] FieldError),
}

/// The tenant and the validated event of a message.
fn parse(message: &Message) -> Result<(TenantId, Event), Poison> {
    agentrl_core::envelope::check_version(&message.body).map_err(Poison::Version)?;
    let envelope: EventEnvelope = serde_json::from_str(&message.body)?;
    let tenant = TenantId::parse(&envelope.tenant)?;
    envelope.event.validate()?;
    Ok((tenant, envelope.event))
}
