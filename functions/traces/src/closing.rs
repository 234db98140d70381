//! Conversations into trajectories: when one is ended (`POST /v1/traces/conversations/{id}/end`)
//! or has been quiet long enough (the sweep), its spans become one trajectory per agent on
//! the ingest path (PII scrub, differential privacy, the turn table: the ingest worker's), and
//! its buffered spans are forgotten. A trajectory the worker finds invalid (past a limit) is
//! dead-lettered there with the reason.
//!
//! Everything is enqueued before anything is forgotten: a crash in between enqueues the same
//! trajectories (same ids) again at the next sweep.

use std::collections::BTreeMap;

use agentrl_core::TenantId;
use agentrl_core::traces::{Ended, trajectories};
use agentrl_http::trajectory_queue::enqueue_trajectory;
use agentrl_store::StoreError;
use agentrl_store::open_list::SHARDS;

use crate::buffer::{self, Group, Pending};
use crate::{TracesConfig, TracesState};

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceSweep {
    /// Open groups looked at.
    pub visited: usize,
    /// Conversations ingested.
    pub ingested: usize,
    /// Trajectories they became.
    pub trajectories: usize,
    /// Trace groups joined to the conversation their trace was since seen with.
    pub joined: usize,
    /// Left open after a store failure, for the next sweep.
    pub failed: usize,
}

/// Why a conversation did not end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EndError {
    #[error("no span of this conversation is waiting")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl TracesState {
    /// Ingests every conversation due at `now_ms`: its root span seen and no span for its
    /// tenant's `quiet_seconds`, or no span for `orphan_seconds`.
    ///
    /// # Errors
    /// When the open list cannot be read (a group that fails is counted and left open).
    pub async fn sweep(&self, now_ms: u64) -> Result<TraceSweep, StoreError> {
        let mut run = TraceSweep::default();
        let mut configs: BTreeMap<TenantId, TracesConfig> = BTreeMap::new();
        for shard in 0..SHARDS {
            let mut cursor = None;
            loop {
                let (open, next) = buffer::open(self.table.as_ref(), shard, cursor).await?;
                for o in open {
                    run.visited += 1;
                    let config = match configs.get(&o.tenant) {
                        Some(c) => c.clone(),
                        None => {
                            let c = self.configs.get(&o.tenant).await?;
                            configs.insert(o.tenant.clone(), c.clone());
                            c
                        }
                    };
                    // Still active by its entry: nothing to read yet.
                    let wait_ms = config.quiet_seconds.min(config.orphan_seconds) * 1_000;
                    if o.last_ms
                        .is_some_and(|last| now_ms.saturating_sub(last) < wait_ms)
                    {
                        continue;
                    }
                    match self.visit(&o, &config, now_ms).await {
                        Ok(Visit::Waiting) => {}
                        Ok(Visit::Joined) => run.joined += 1,
                        Ok(Visit::Ingested(n)) => {
                            run.ingested += 1;
                            run.trajectories += n;
                        }
                        Err(e) => {
                            run.failed += 1;
                            tracing::warn!(tenant = %o.tenant, group = %o.digest, error = %e,
                                "a traced conversation could not be ingested; left open");
                        }
                    }
                }
                match next {
                    Some(n) => cursor = Some(n),
                    None => break,
                }
            }
        }
        Ok(run)
    }

    async fn visit(
        &self,
        o: &buffer::Open,
        config: &TracesConfig,
        now_ms: u64,
    ) -> Result<Visit, StoreError> {
        let (table, t) = (self.table.as_ref(), &o.tenant);
        let batches = buffer::pending(table, t, &o.digest).await?;
        let Some((_, first)) = batches.first() else {
            buffer::close(
                table,
                self.objects.as_ref(),
                t,
                &o.digest,
                &[],
                Some(o.version),
            )
            .await?;
            return Ok(Visit::Waiting);
        };
        let group = first.group.clone();
        if let Group::Trace(trace) = &group
            && let Some(c) = buffer::conversation_of(table, t, trace).await?
        {
            buffer::join(table, t, &group, &Group::Conversation(c)).await?;
            return Ok(Visit::Joined);
        }
        let last = batches
            .iter()
            .filter_map(|(b, _)| buffer::batch_ms(b))
            .max()
            .unwrap_or(0);
        let quiet = now_ms.saturating_sub(last);
        let rooted = batches.iter().any(|(_, p)| p.root);
        if quiet < config.orphan_seconds * 1_000
            && !(rooted && quiet >= config.quiet_seconds * 1_000)
        {
            return Ok(Visit::Waiting);
        }
        let ids = self
            .ingest(t, &o.digest, &group, &batches, None, Some(o.version))
            .await?;
        Ok(Visit::Ingested(ids.len()))
    }

    /// Ends conversation `conversation` now, with `ended`: the ids of its trajectories.
    pub(crate) async fn end(
        &self,
        t: &TenantId,
        conversation: &str,
        ended: Option<Ended>,
    ) -> Result<Vec<String>, EndError> {
        let table = self.table.as_ref();
        let named = Group::Conversation(conversation.to_owned());
        for trace in buffer::traces_of(table, t, &named).await? {
            buffer::join(table, t, &Group::Trace(trace), &named).await?;
        }
        // A conversation that never named itself is its trace.
        for group in [named, Group::Trace(conversation.to_owned())] {
            let digest = group.digest();
            let batches = buffer::pending(table, t, &digest).await?;
            if !batches.is_empty() {
                return Ok(self
                    .ingest(t, &digest, &group, &batches, ended, None)
                    .await?);
            }
        }
        Err(EndError::NotFound)
    }

    /// The group's spans into trajectories on the ingest queue, then the group forgotten.
    async fn ingest(
        &self,
        t: &TenantId,
        digest: &str,
        group: &Group,
        batches: &[(String, Pending)],
        ended: Option<Ended>,
        listed_at: Option<u64>,
    ) -> Result<Vec<String>, StoreError> {
        let spans = buffer::spans(self.objects.as_ref(), batches).await?;
        let made = trajectories(group.conversation(), &spans, ended);
        let received_at_ms = agentrl_store::clock::now_ms();
        let mut ids = Vec::with_capacity(made.len());
        for trajectory in made {
            ids.push(trajectory.trajectory_id.clone());
            enqueue_trajectory(
                self.queue.as_ref(),
                self.objects.as_ref(),
                &self.kpis,
                t,
                received_at_ms,
                trajectory,
                agentrl_core::envelope::Source::Traces,
            )
            .await?;
        }
        buffer::close(
            self.table.as_ref(),
            self.objects.as_ref(),
            t,
            digest,
            batches,
            listed_at,
        )
        .await?;
        Ok(ids)
    }
}

/// What the sweep found of one open group.
enum Visit {
    Waiting,
    Joined,
    Ingested(usize),
}
