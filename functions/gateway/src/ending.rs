//! Ending a session, asked for (`POST …/sessions/{id}/end`) or for being idle past the
//! tenant's `session_idle_seconds` (the sweep): its recorded calls become its trajectories on
//! the ingest path, and it is marked ended with their ids and taken off the open list.

use agentrl_core::TenantId;
use agentrl_core::gateway::{SessionEnd, trajectories};
use agentrl_http::trajectory_queue::enqueue_trajectory;
use agentrl_store::StoreError;
use agentrl_store::clock::now_ms;
use agentrl_store::open_list::SHARDS;

use crate::GatewayState;
use crate::sessions;

/// Why a session did not end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EndError {
    #[error("no such session")]
    NotFound,
    #[error("{}", .0.reason)]
    Outcomes(agentrl_core::FieldError),
    #[error("the session has no answered call to record: nothing to end")]
    NoCalls,
    #[error("trajectory {trajectory}: {reason}")]
    Invalid {
        trajectory: String,
        field: String,
        reason: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Ends the session with `outcome`: the ids of the trajectories it became (those it became
/// before, when it had ended already).
pub(crate) async fn end(
    state: &GatewayState,
    tenant: &TenantId,
    agent_id: &str,
    session: &str,
    outcome: &SessionEnd,
) -> Result<Vec<String>, EndError> {
    let table = state.table.as_ref();
    let (pinned, at) = sessions::read(table, tenant, agent_id, session)
        .await?
        .ok_or(EndError::NotFound)?;
    if let Some(ids) = pinned.ended.clone() {
        return Ok(ids);
    }
    state.recorder.flush().await;
    let prefix = sessions::calls_prefix(tenant, agent_id, session);
    let calls = sessions::calls(state.objects.as_ref(), &prefix).await?;
    if calls.is_empty() {
        return Err(EndError::NoCalls);
    }
    let made = trajectories(agent_id, session, &calls, outcome).map_err(EndError::Outcomes)?;
    for t in &made {
        t.validate().map_err(|e| EndError::Invalid {
            trajectory: t.trajectory_id.clone(),
            field: e.field,
            reason: e.reason,
        })?;
    }
    let received_at_ms = now_ms();
    for t in &made {
        enqueue_trajectory(
            state.queue.as_ref(),
            state.objects.as_ref(),
            &state.kpis,
            tenant,
            received_at_ms,
            t.clone(),
            agentrl_core::envelope::Source::Gateway,
        )
        .await?;
    }
    let ids: Vec<String> = made.into_iter().map(|t| t.trajectory_id).collect();
    sessions::end(table, tenant, agent_id, session, pinned, at, ids.clone()).await?;
    Ok(ids)
}

/// What one idle sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleSweep {
    /// Open sessions looked at.
    pub visited: usize,
    /// Ended into trajectories.
    pub ended: usize,
    /// Closed without a trajectory: no answered call, or calls that break a trajectory limit
    /// (their records stay in the object store; the reason is logged).
    pub closed_empty: usize,
    /// Left open after a store failure, for the next sweep.
    pub failed: usize,
}

impl GatewayState {
    /// Ends every open session idle (no call answered) at `now_ms` for its tenant's
    /// `session_idle_seconds`, as `end` with no outcome would.
    ///
    /// # Errors
    /// When the open list cannot be read (a session that fails is counted and left open).
    pub async fn end_idle_sessions(&self, now_ms: u64) -> Result<IdleSweep, StoreError> {
        let mut run = IdleSweep::default();
        for shard in 0..SHARDS {
            let mut cursor = None;
            loop {
                let (open, next) = sessions::open(self.table.as_ref(), shard, cursor).await?;
                for s in open {
                    run.visited += 1;
                    match self.end_if_idle(&s, now_ms).await {
                        Ok(Visit::Active) => {}
                        Ok(Visit::Ended) => run.ended += 1,
                        Ok(Visit::ClosedEmpty) => run.closed_empty += 1,
                        Err(e) => {
                            run.failed += 1;
                            tracing::warn!(tenant = %s.tenant, agent_id = %s.agent_id,
                                session_id = %s.session_id, error = %e,
                                "an idle session could not be ended; left open");
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

    async fn end_if_idle(
        &self,
        s: &sessions::OpenSession,
        now_ms: u64,
    ) -> Result<Visit, StoreError> {
        let (tenant, agent, session) = (&s.tenant, s.agent_id.as_str(), s.session_id.as_str());
        let table = self.table.as_ref();
        let Some((pinned, at)) = sessions::read(table, tenant, agent, session).await? else {
            sessions::unlist(table, tenant, agent, session).await?;
            return Ok(Visit::ClosedEmpty);
        };
        let idle_ms = self.configs.get(tenant).await?.session_idle_seconds * 1_000;
        let prefix = sessions::calls_prefix(tenant, agent, session);
        let last = sessions::last_call_ms(self.objects.as_ref(), &prefix)
            .await?
            .unwrap_or(0)
            .max(pinned.created_at_ms);
        if now_ms.saturating_sub(last) < idle_ms {
            return Ok(Visit::Active);
        }
        match end(self, tenant, agent, session, &SessionEnd::default()).await {
            Ok(_) => Ok(Visit::Ended),
            Err(EndError::Store(e)) => Err(e),
            Err(EndError::NotFound) => {
                sessions::unlist(table, tenant, agent, session).await?;
                Ok(Visit::ClosedEmpty)
            }
            Err(e @ (EndError::NoCalls | EndError::Invalid { .. } | EndError::Outcomes(_))) => {
                if !matches!(e, EndError::NoCalls) {
                    tracing::error!(%tenant, agent_id = agent, session_id = session, error = %e,
                        "an idle session cannot become a trajectory; closed, its call records kept");
                }
                sessions::end(table, tenant, agent, session, pinned, at, Vec::new()).await?;
                Ok(Visit::ClosedEmpty)
            }
        }
    }
}

/// What the sweep found of one open session.
enum Visit {
    Active,
    Ended,
    ClosedEmpty,
}
