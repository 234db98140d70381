//! Sessions: the version each one is pinned to (table), its calls' records (object store,
//! written behind the answers in group commits), and the agents it reads.
//!
//! Open sessions are also on an [`OpenList`] (`gateway-open`), written with the session's
//! first call and removed with its end, so the idle sweep finds them without reading every
//! tenant.
//!
//! Agents belong to the training function; the gateway reads their records as a view of
//! the fields it routes on (`model`, `deployed_version`, `canary`), under the registry's
//! key ([`agentrl_store::keys::agents`], the agent id).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agentrl_core::TenantId;
use agentrl_core::gateway::CallRecord;
use agentrl_core::training::{Arm, Canary, bucket};
use agentrl_store::StoreError;
use agentrl_store::keys::partition;
use agentrl_store::open_list::OpenList;
use agentrl_store::ports::{Condition, Key, Objects, Put, Table, Write, encode};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, watch};

/// The fields of an agent the gateway routes on.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct AgentView {
    pub agent_id: String,
    pub model: ModelView,
    #[serde(default)]
    pub deployed_version: Option<String>,
    #[serde(default)]
    pub canary: Option<Canary>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ModelView {
    pub name: String,
}

pub(crate) async fn agent(
    table: &dyn Table,
    t: &TenantId,
    id: &str,
) -> Result<Option<AgentView>, StoreError> {
    let key = Key::new(agentrl_store::keys::agents(t), id);
    Ok(table
        .get(&key)
        .await?
        .map(|i| i.decode())
        .transpose()?
        .map(|(a, _)| a))
}

impl AgentView {
    /// The version serving `session` by the canary rule (`None` before any promotion).
    pub(crate) fn route(&self, t: &TenantId, session: &str) -> Option<String> {
        match &self.canary {
            Some(c) if c.arm(bucket(t.as_str(), &self.agent_id, session)) == Arm::Candidate => {
                Some(c.version.clone())
            }
            _ => self.deployed_version.clone(),
        }
    }
}

/// A session: the version it was pinned to at its first call, and whether it ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Session {
    pub version: Option<String>,
    pub served_model: String,
    pub created_at_ms: u64,
    /// The thinking budget its first call named: later calls that name none go under it.
    #[serde(default)]
    pub budget: Option<String>,
    /// Set when it ended: the trajectories it became.
    #[serde(default)]
    pub ended: Option<Vec<String>>,
}

fn session_key(t: &TenantId, agent: &str, session: &str) -> Key {
    Key::new(partition(t, "gateway-session", agent), session)
}

/// The open sessions.
const OPEN: OpenList = OpenList::new("gateway-open");

/// The open-list entry of a session (its shard from a hash of its names). Tenant, agent and
/// session ids hold no `#`, so the sort key splits back into them.
fn open_key(t: &TenantId, agent: &str, session: &str) -> Key {
    let digest = Sha256::digest(format!("{t}\0{agent}\0{session}").as_bytes());
    OPEN.key(digest[0], format!("{t}#{agent}#{session}"))
}

/// A session on the open list.
#[derive(Debug, Clone)]
pub(crate) struct OpenSession {
    pub tenant: TenantId,
    pub agent_id: String,
    pub session_id: String,
}

/// A page of shard `shard`'s open sessions, and the cursor of the next.
pub(crate) async fn open(
    table: &dyn Table,
    shard: u8,
    cursor: Option<String>,
) -> Result<(Vec<OpenSession>, Option<String>), StoreError> {
    let (items, next) = OPEN.page(table, shard, cursor).await?;
    let open = items
        .iter()
        .filter_map(|item| {
            let mut parts = item.key.sk.splitn(3, '#');
            Some(OpenSession {
                tenant: TenantId::parse(parts.next()?).ok()?,
                agent_id: parts.next()?.to_owned(),
                session_id: parts.next()?.to_owned(),
            })
        })
        .collect();
    Ok((open, next))
}

/// The session, and its item's version.
pub(crate) async fn read(
    table: &dyn Table,
    t: &TenantId,
    agent: &str,
    session: &str,
) -> Result<Option<(Session, u64)>, StoreError> {
    table
        .get(&session_key(t, agent, session))
        .await?
        .map(|i| i.decode())
        .transpose()
}

/// The session, pinned to `fresh` if it has no item yet (a concurrent first call's pin wins).
pub(crate) async fn pin(
    table: &dyn Table,
    t: &TenantId,
    agent: &str,
    session: &str,
    fresh: impl FnOnce() -> Session,
) -> Result<Session, StoreError> {
    if let Some((s, _)) = read(table, t, agent, session).await? {
        return Ok(s);
    }
    let s = fresh();
    let writes = vec![
        Write::Put(Put {
            key: session_key(t, agent, session),
            doc: encode(&s)?,
            expires_at: None,
            condition: Condition::Absent,
        }),
        Write::Put(Put {
            key: open_key(t, agent, session),
            doc: serde_json::json!({}),
            expires_at: None,
            condition: Condition::None,
        }),
    ];
    match table.transact(writes).await {
        Ok(()) => Ok(s),
        Err(StoreError::Conflict | StoreError::ConditionFailed { .. }) => {
            read(table, t, agent, session)
                .await?
                .map(|(s, _)| s)
                .ok_or(StoreError::Conflict)
        }
        Err(e) => Err(e),
    }
}

/// Marks the session ended with its trajectories, over the version read, and takes it off
/// the open list.
pub(crate) async fn end(
    table: &dyn Table,
    t: &TenantId,
    agent: &str,
    session: &str,
    mut s: Session,
    at: u64,
    trajectories: Vec<String>,
) -> Result<(), StoreError> {
    s.ended = Some(trajectories);
    table
        .transact(vec![
            Write::Put(Put {
                key: session_key(t, agent, session),
                doc: encode(&s)?,
                expires_at: None,
                condition: Condition::Version(at),
            }),
            Write::Delete {
                key: open_key(t, agent, session),
                condition: Condition::None,
            },
        ])
        .await
}

/// Takes a session that is gone or already ended off the open list.
pub(crate) async fn unlist(
    table: &dyn Table,
    t: &TenantId,
    agent: &str,
    session: &str,
) -> Result<(), StoreError> {
    table
        .transact(vec![Write::Delete {
            key: open_key(t, agent, session),
            condition: Condition::None,
        }])
        .await
}

/// When the session's last recorded call was answered (epoch ms), read from the call ids
/// (UUIDv7: their first 48 bits are the time), if it has any.
pub(crate) async fn last_call_ms(
    objects: &dyn Objects,
    prefix: &str,
) -> Result<Option<u64>, StoreError> {
    Ok(objects
        .list(prefix)
        .await?
        .iter()
        .filter_map(|meta| {
            let name = meta.path.rsplit('/').next()?.strip_suffix(".json")?;
            let (secs, nanos) = uuid::Uuid::parse_str(name).ok()?.get_timestamp()?.to_unix();
            Some(secs * 1_000 + u64::from(nanos) / 1_000_000)
        })
        .max())
}

/// Where a session's call records live: one object per call, named by its time-ordered id.
pub(crate) fn calls_prefix(t: &TenantId, agent: &str, session: &str) -> String {
    format!("gateway/tenant={t}/agent={agent}/session={session}/")
}

/// Call records written behind the answers: a background task takes what has queued up and
/// writes it together (a group commit), retrying a failed write until it lands. A record is
/// queued as soon as its call is answered; [`Recorder::flush`] waits until everything queued
/// so far is written.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::UnboundedSender<(u64, String, Bytes)>,
    queued: Arc<AtomicU64>,
    written: watch::Receiver<u64>,
}

/// Records one commit takes at most.
const GROUP: usize = 256;

impl Recorder {
    /// Starts the writer on the current Tokio runtime.
    #[must_use]
    pub fn start(objects: Arc<dyn Objects>) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<(u64, String, Bytes)>();
        let (done, written) = watch::channel(0);
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(GROUP);
            while rx.recv_many(&mut batch, GROUP).await > 0 {
                let last = batch.iter().map(|(seq, ..)| *seq).max().unwrap_or(0);
                let writes = batch.drain(..).map(|(_, path, bytes)| {
                    let objects = objects.clone();
                    async move { write(objects.as_ref(), &path, bytes).await }
                });
                futures::future::join_all(writes).await;
                done.send_replace(last);
            }
        });
        Self {
            tx,
            queued: Arc::new(AtomicU64::new(0)),
            written,
        }
    }

    /// Queues `record` of the session under `prefix`.
    pub(crate) fn record(&self, prefix: &str, record: &CallRecord) {
        let bytes = match serde_json::to_vec(record) {
            Ok(b) => Bytes::from(b),
            Err(e) => {
                tracing::error!(error = %e, "a call record could not be encoded");
                return;
            }
        };
        let seq = self.queued.fetch_add(1, Ordering::SeqCst) + 1;
        let path = format!("{prefix}{}.json", record.call_id);
        if self.tx.send((seq, path, bytes)).is_err() {
            tracing::error!("the call recorder has stopped: a call record is lost");
        }
    }

    /// Waits until every record queued before this call is written.
    pub(crate) async fn flush(&self) {
        let target = self.queued.load(Ordering::SeqCst);
        let mut written = self.written.clone();
        let _ = written.wait_for(|&w| w >= target).await;
    }
}

/// Writes one record, retrying with backoff until the store takes it.
async fn write(objects: &dyn Objects, path: &str, bytes: Bytes) {
    let mut wait = Duration::from_millis(50);
    loop {
        match objects.put(path, bytes.clone()).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, path, "a call record write failed; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Every recorded call of a session, in call order.
pub(crate) async fn calls(
    objects: &dyn Objects,
    prefix: &str,
) -> Result<Vec<CallRecord>, StoreError> {
    let mut out = Vec::new();
    for meta in objects.list(prefix).await? {
        if let Some(bytes) = objects.get(&meta.path).await? {
            out.push(serde_json::from_slice(&bytes).map_err(|e| StoreError::Backend(e.into()))?);
        }
    }
    Ok(out)
}
