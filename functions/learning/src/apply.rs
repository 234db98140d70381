//! Applying a batch of one agent's new events: rewards, projection, relationships, replies
//! and dedup markers, in transactions.
//!
//! Each chunk of events is read in one batch (the agent, its relationships and replies, and the
//! events' markers) and written in one transaction (≤ 100 writes): the agent item and each
//! relationship and reply item conditioned on the version read, each event's marker
//! conditioned on being absent. So an event is applied exactly once: one whose marker exists
//! (a redelivery) is dropped before anything is computed, and a concurrent writer on the same
//! agent — or a concurrent delivery of the same event — fails a condition, and the chunk is
//! read and computed again.

use std::collections::{BTreeMap, BTreeSet};

use agentrl_core::{
    TenantId,
    learning::{Event, LearningConfig, Relationship, ReplyLedger, absorb},
};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    ports::{Condition, Key, Put, Write, encode},
    retry::optimistic,
};

use crate::repo::{
    AgentDoc, LearningRepo, MARKER_SECONDS, REPLY_SECONDS, Versioned, agent_key, marker_key,
    pending_entry, reply_key, user_key, versioned,
};

/// The most writes of one transaction (the table's limit).
const MAX_WRITES: usize = 100;

/// What applying a batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// Events applied now.
    pub applied: usize,
    /// Events that had been applied before (redeliveries).
    pub duplicates: usize,
    /// Whether the agent's projection, as last written, is due a policy update.
    pub update_due: bool,
}

/// Splits `events` into chunks whose transaction stays within [`MAX_WRITES`]: the agent item,
/// the pending entry, and per event its marker plus any relationship or reply not yet in the
/// chunk.
fn chunks(events: Vec<Event>) -> Vec<Vec<Event>> {
    let mut out: Vec<Vec<Event>> = Vec::new();
    let mut current: Vec<Event> = Vec::new();
    let mut keys: BTreeSet<(u8, String)> = BTreeSet::new();
    for event in events {
        let mut new_keys = vec![(0u8, event.user_id.clone())];
        if let Some(reply) = event.reply_id() {
            new_keys.push((1, reply.to_owned()));
        }
        let added = new_keys.iter().filter(|k| !keys.contains(k)).count();
        if 2 + current.len() + keys.len() + 1 + added > MAX_WRITES && !current.is_empty() {
            out.push(std::mem::take(&mut current));
            keys.clear();
        }
        keys.extend(new_keys);
        current.push(event);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The state one chunk reads and writes back.
struct ChunkState {
    agent: Versioned<AgentDoc>,
    users: BTreeMap<String, Versioned<Relationship>>,
    replies: BTreeMap<String, Versioned<ReplyLedger>>,
    /// Ids of the chunk's events that were already applied.
    applied: BTreeSet<String>,
}

impl LearningRepo {
    /// Applies `events` (all of `agent`, deduplicated by id within the batch) under
    /// `config`; returns what was done.
    ///
    /// # Errors
    /// When a store fails, or the agent stayed contended for every attempt.
    pub(crate) async fn apply(
        &self,
        t: &TenantId,
        agent: &str,
        mut events: Vec<Event>,
        config: &LearningConfig,
    ) -> Result<Applied, StoreError> {
        // A fixed order makes the chunks, and so the retries, deterministic.
        events
            .sort_by(|a, b| (a.occurred_at_ms, &a.event_id).cmp(&(b.occurred_at_ms, &b.event_id)));
        let mut done = Applied::default();
        for chunk in chunks(events) {
            let chunk = &chunk;
            // A concurrent writer (or delivery) that got there first makes the write fail:
            // read again.
            let round = optimistic::<_, StoreError, _>(move || async move {
                let state = self.read_chunk(t, agent, chunk).await?;
                // Events whose marker exists were applied by an earlier delivery.
                let fresh: Vec<Event> = chunk
                    .iter()
                    .filter(|e| !state.applied.contains(&e.event_id))
                    .cloned()
                    .collect();
                let duplicates = chunk.len() - fresh.len();
                if fresh.is_empty() {
                    return Ok((duplicates, 0, None));
                }
                let (writes, due) = build(t, agent, &fresh, state, config)?;
                self.table.transact(writes).await?;
                Ok((duplicates, fresh.len(), Some(due)))
            })
            .await?;
            let (duplicates, applied, due) = round;
            done.duplicates += duplicates;
            done.applied += applied;
            if let Some(due) = due {
                done.update_due = due;
            }
        }
        Ok(done)
    }

    /// Everything a chunk touches, in one batched read: the agent, its relationships and
    /// replies, and the markers of the chunk's events.
    async fn read_chunk(
        &self,
        t: &TenantId,
        agent: &str,
        chunk: &[Event],
    ) -> Result<ChunkState, StoreError> {
        let users: BTreeSet<&str> = chunk.iter().map(|e| e.user_id.as_str()).collect();
        let replies: BTreeSet<&str> = chunk.iter().filter_map(Event::reply_id).collect();
        let mut keys = vec![agent_key(t, agent)];
        keys.extend(users.iter().map(|u| user_key(t, agent, u)));
        keys.extend(replies.iter().map(|m| reply_key(t, agent, m)));
        keys.extend(chunk.iter().map(|e| marker_key(t, agent, &e.event_id)));
        let mut items = self.table.get_many(&keys).await?.into_iter();
        let mut next = || items.next().flatten();
        let agent = versioned(next())?;
        let users = users
            .into_iter()
            .map(|u| Ok((u.to_owned(), versioned(next())?)))
            .collect::<Result<_, StoreError>>()?;
        let replies = replies
            .into_iter()
            .map(|m| Ok((m.to_owned(), versioned(next())?)))
            .collect::<Result<_, StoreError>>()?;
        let applied = chunk
            .iter()
            .filter(|_| next().is_some())
            .map(|e| e.event_id.clone())
            .collect();
        Ok(ChunkState {
            agent,
            users,
            replies,
            applied,
        })
    }
}

fn put(key: Key, doc: serde_json::Value, expires_at: Option<u64>, condition: Condition) -> Write {
    Write::Put(Put {
        key,
        doc,
        expires_at,
        condition,
    })
}

/// The chunk's writes, and whether the projection they store is due a policy update.
fn build(
    t: &TenantId,
    agent: &str,
    chunk: &[Event],
    state: ChunkState,
    config: &LearningConfig,
) -> Result<(Vec<Write>, bool), StoreError> {
    let ChunkState {
        agent: (mut doc, agent_version),
        mut users,
        mut replies,
        ..
    } = state;
    for event in chunk {
        let ledger = event
            .reply_id()
            .and_then(|id| replies.get_mut(id))
            .map(|(ledger, _)| ledger);
        // Every event's user was read with the chunk.
        if let Some((relationship, _)) = users.get_mut(&event.user_id) {
            absorb(event, &mut doc.projection, relationship, ledger, config);
        }
    }
    // Retention runs from when the events were applied, not from when they happened: a
    // redelivery comes within the queue's retention of the first delivery, whatever the
    // events' own times.
    let now_s = now_ms() / 1_000;
    let expiry = |seconds: u64| Some(now_s + seconds);
    let mut writes = Vec::with_capacity(3 + users.len() + replies.len() + chunk.len());
    let newly_pending = !doc.pending;
    doc.pending = true;
    let update_due = doc.projection.update_due(config);
    writes.push(put(
        agent_key(t, agent),
        encode(&doc)?,
        None,
        Condition::at(agent_version),
    ));
    if newly_pending {
        writes.push(pending_entry(t, agent, true));
    }
    for (user, (relationship, version)) in &users {
        writes.push(put(
            user_key(t, agent, user),
            encode(relationship)?,
            None,
            Condition::at(*version),
        ));
    }
    for (message, (ledger, version)) in &replies {
        writes.push(put(
            reply_key(t, agent, message),
            encode(ledger)?,
            expiry(REPLY_SECONDS),
            Condition::at(*version),
        ));
    }
    for event in chunk {
        writes.push(put(
            marker_key(t, agent, &event.event_id),
            serde_json::json!({ "type": event.kind() }),
            expiry(MARKER_SECONDS),
            Condition::Absent,
        ));
    }
    Ok((writes, update_due))
}

#[cfg(test)]
mod tests {
    use agentrl_core::learning::EventBody;

    use super::*;

    fn feedback(id: usize, user: usize) -> Event {
        serde_json::from_value(serde_json::json!({
            "event_id": format!("e{id}"), "agent_id": "a", "user_id": format!("u{user}"),
            "occurred_at_ms": 1, "type": "feedback.created", "value": 0.5,
            "source_id": format!("m{id}"),
        }))
        .unwrap()
    }

    #[test]
    fn chunks_stay_within_a_transaction() {
        // Every event brings a new user and a new reply: three writes each.
        let events: Vec<Event> = (0..100).map(|i| feedback(i, i)).collect();
        let split = chunks(events);
        assert_eq!(split.iter().map(Vec::len).sum::<usize>(), 100);
        for c in &split {
            let writes = 2 + c.len() * 3;
            assert!(writes <= MAX_WRITES, "{writes} writes");
        }
        // One user, no replies: two writes each.
        let events: Vec<Event> = (0..60)
            .map(|i| {
                let mut e = feedback(i, 0);
                if let EventBody::Feedback(f) = &mut e.body {
                    f.source_id = None;
                }
                e
            })
            .collect();
        let split = chunks(events);
        assert!(split.iter().all(|c| 3 + c.len() <= MAX_WRITES));
        assert_eq!(split.len(), 1);
    }
}
