//! Where attributions, sessions and contributions live in the table.
//!
//! Layout (single table, every partition key starts with the tenant):
//! - `tenant#attribution#TASK`, sk `current`: the task's attribution;
//! - `tenant#attribution-history#all`, sk `{created_at_ms:020}#TASK`: the same record in
//!   creation order (written in the same transaction; replacing a task moves its entry);
//! - `tenant#attribution-session#ID`, sk `head`: a session's metadata, and sk `part#K`: the
//!   serialised `InteractiveShapley` in parts, each tagged with the head's generation;
//! - `tenant#contributions#all`, sk `e#{timestamp_ms:020}#ID`: contributions in time order,
//!   and sk `counter`: how many there are (updated in the same transaction as each insert).

use std::sync::Arc;

use agentrl_core::{TenantId, attribution::InteractiveShapley};
use agentrl_store::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Put, Query, SortRange, Table, Write, encode},
    retry::optimistic,
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::{MAX_SESSION_BYTES, SESSION_PART_BYTES, compute::AttributionRecord, model::Strategy};

/// How long a session is kept after its last change.
pub const SESSION_RETENTION_SECONDS: u64 = 30 * 24 * 3600;

/// A contribution as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct ContributionEntry {
    /// Unique id of the entry.
    pub id: String,
    pub agent_id: String,
    pub task_id: String,
    pub quality_before: f64,
    pub quality_after: f64,
    pub effort_ratio: f64,
    pub impact_multiplier: f64,
    pub timestamp_ms: u64,
    /// (quality_after − quality_before) × impact_multiplier / max(effort_ratio, 1e-6).
    pub score: f64,
}

/// A session's metadata (the sampler state is stored beside it in parts).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SessionHead {
    pub session_id: String,
    pub task_id: String,
    pub agents: Vec<String>,
    pub total_reward: f64,
    pub strategy: Strategy,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    /// v(∅) and v(N) once measured (for the efficiency gap of the final attribution).
    pub v_empty: Option<f64>,
    pub v_full: Option<f64>,
    /// Incremented by every save; each part carries the generation it was written with.
    pub generation: u64,
    /// Number of parts of the state.
    pub parts: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct SessionPart {
    generation: u64,
    text: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Counter {
    count: u64,
}

/// Typed access to the attribution items of the table.
#[derive(Clone)]
pub struct AttributionRepo {
    table: Arc<dyn Table>,
    contribution_cap: u64,
}

fn put(key: Key, doc: serde_json::Value, condition: Condition) -> Write {
    Write::Put(Put {
        key,
        doc,
        expires_at: None,
        condition,
    })
}

/// The sort-key range `[from_ms, to_ms)` of keys starting `{prefix}{ms:020}`.
fn time_range(prefix: &str, from_ms: u64, to_ms: u64) -> SortRange {
    // `{to:020}` sorts after every `{ms:020}#…` with ms < to and before `{to:020}#…`.
    SortRange::Between(
        format!("{prefix}{from_ms:020}"),
        format!("{prefix}{to_ms:020}"),
    )
}

impl AttributionRepo {
    /// A repository over `table` keeping at most `contribution_cap` contributions per tenant.
    pub fn new(table: Arc<dyn Table>, contribution_cap: u64) -> Self {
        Self {
            table,
            contribution_cap,
        }
    }

    fn current_key(t: &TenantId, task_id: &str) -> Key {
        Key::new(partition(t, "attribution", task_id), "current")
    }

    fn history_pk(t: &TenantId) -> String {
        partition(t, "attribution-history", "all")
    }

    fn history_key(t: &TenantId, r: &AttributionRecord) -> Key {
        Key::new(
            Self::history_pk(t),
            format!("{:020}#{}", r.created_at_ms, r.task_id),
        )
    }

    async fn read<T: DeserializeOwned>(&self, key: &Key) -> Result<Option<(T, u64)>, StoreError> {
        self.table.get(key).await?.map(Item::decode).transpose()
    }

    /// The task's attribution with its version.
    pub(crate) async fn attribution(
        &self,
        t: &TenantId,
        task_id: &str,
    ) -> Result<Option<(AttributionRecord, u64)>, StoreError> {
        self.read(&Self::current_key(t, task_id)).await
    }

    /// The writes that store `r`, replacing `previous` (read at its version) and its history
    /// entry.
    fn attribution_writes(
        t: &TenantId,
        r: &AttributionRecord,
        previous: Option<&(AttributionRecord, u64)>,
    ) -> Result<Vec<Write>, StoreError> {
        let doc = encode(r)?;
        let history = Self::history_key(t, r);
        let mut writes = vec![
            put(
                Self::current_key(t, &r.task_id),
                doc.clone(),
                Condition::at(previous.map(|p| p.1)),
            ),
            put(history.clone(), doc, Condition::None),
        ];
        if let Some((old, _)) = previous {
            let old_key = Self::history_key(t, old);
            if old_key != history {
                writes.push(Write::Delete {
                    key: old_key,
                    condition: Condition::None,
                });
            }
        }
        Ok(writes)
    }

    /// Stores `r` under its task and in the history, replacing any earlier attribution of
    /// the task (retrying on a concurrent replacement).
    pub(crate) async fn put_attribution(
        &self,
        t: &TenantId,
        r: &AttributionRecord,
    ) -> Result<(), StoreError> {
        optimistic(move || async move {
            let previous = self.attribution(t, &r.task_id).await?;
            let writes = Self::attribution_writes(t, r, previous.as_ref())?;
            self.table.transact(writes).await
        })
        .await
    }

    /// One page of the history in `[from_ms, to_ms)`, oldest first, and the next cursor.
    pub(crate) async fn history(
        &self,
        t: &TenantId,
        (from_ms, to_ms): (u64, u64),
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<AttributionRecord>, Option<String>), StoreError> {
        let page = self
            .table
            .query(&Query {
                pk: Self::history_pk(t),
                range: time_range("", from_ms, to_ms),
                limit,
                cursor,
                ascending: true,
            })
            .await?;
        let records = page
            .items
            .into_iter()
            .map(|i| i.decode().map(|(r, _)| r))
            .collect::<Result<_, _>>()?;
        Ok((records, page.next))
    }

    fn head_key(t: &TenantId, id: &str) -> Key {
        Key::new(partition(t, "attribution-session", id), "head")
    }

    fn part_key(t: &TenantId, id: &str, k: usize) -> Key {
        Key::new(partition(t, "attribution-session", id), format!("part#{k}"))
    }

    /// A session: its head (with version) and its sampler state.
    pub(crate) async fn session(
        &self,
        t: &TenantId,
        id: &str,
    ) -> Result<Option<(SessionHead, u64, InteractiveShapley)>, StoreError> {
        optimistic(move || async move {
            let Some((head, version)) = self.read::<SessionHead>(&Self::head_key(t, id)).await?
            else {
                return Ok(None);
            };
            let mut text = String::new();
            for k in 0..head.parts {
                match self.read::<SessionPart>(&Self::part_key(t, id, k)).await? {
                    Some((part, _)) if part.generation == head.generation => {
                        text.push_str(&part.text);
                    }
                    // A concurrent save between our reads: read again.
                    _ => return Err(StoreError::Conflict),
                }
            }
            let state = serde_json::from_str(&text)
                .map_err(|e| StoreError::Backend(anyhow::anyhow!("corrupt session {id}: {e}")))?;
            Ok(Some((head, version, state)))
        })
        .await
    }

    /// Saves a session if its head is still at `version` (`None`: creates it), together with
    /// `extra` writes, in one transaction.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] when the state is over [`MAX_SESSION_BYTES`];
    /// `ConditionFailed`/`Conflict` when another save won.
    pub(crate) async fn save_session(
        &self,
        t: &TenantId,
        head: &SessionHead,
        version: Option<u64>,
        state: &InteractiveShapley,
        extra: Vec<Write>,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(state).map_err(|e| StoreError::Backend(e.into()))?;
        if text.len() > MAX_SESSION_BYTES {
            return Err(StoreError::Invalid(format!(
                "the session state would take {} bytes, over the limit of {MAX_SESSION_BYTES}; \
                 use fewer agents or a smaller batch_size",
                text.len()
            )));
        }
        // The state is ASCII JSON (numbers and punctuation), so byte chunks are valid UTF-8.
        let parts: Vec<&str> = text
            .as_bytes()
            .chunks(SESSION_PART_BYTES)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        let mut head = head.clone();
        let old_parts = head.parts;
        head.generation += 1;
        head.parts = parts.len();
        let expires_at = Some(head.updated_at_ms / 1_000 + SESSION_RETENTION_SECONDS);
        let mut writes = vec![Write::Put(Put {
            key: Self::head_key(t, &head.session_id),
            doc: encode(&head)?,
            expires_at,
            condition: Condition::at(version),
        })];
        for (k, part) in parts.iter().enumerate() {
            writes.push(Write::Put(Put {
                key: Self::part_key(t, &head.session_id, k),
                doc: encode(&SessionPart {
                    generation: head.generation,
                    text: (*part).to_owned(),
                })?,
                expires_at,
                condition: Condition::None,
            }));
        }
        for k in parts.len()..old_parts {
            writes.push(Write::Delete {
                key: Self::part_key(t, &head.session_id, k),
                condition: Condition::None,
            });
        }
        writes.extend(extra);
        self.table.transact(writes).await
    }

    /// The writes that store a session's final attribution (see [`Self::save_session`]).
    pub(crate) async fn final_attribution_writes(
        &self,
        t: &TenantId,
        r: &AttributionRecord,
    ) -> Result<Vec<Write>, StoreError> {
        let previous = self.attribution(t, &r.task_id).await?;
        Self::attribution_writes(t, r, previous.as_ref())
    }

    fn contributions_pk(t: &TenantId) -> String {
        partition(t, "contributions", "all")
    }

    fn counter_key(t: &TenantId) -> Key {
        Key::new(Self::contributions_pk(t), "counter")
    }

    async fn counter(&self, t: &TenantId) -> Result<(u64, Option<u64>), StoreError> {
        Ok(match self.read::<Counter>(&Self::counter_key(t)).await? {
            Some((c, v)) => (c.count, Some(v)),
            None => (0, None),
        })
    }

    /// Records `entry` and counts it; then deletes the oldest entries (by timestamp) while
    /// the tenant has more than the cap. Returns how many were deleted.
    pub(crate) async fn record_contribution(
        &self,
        t: &TenantId,
        entry: &ContributionEntry,
    ) -> Result<u64, StoreError> {
        let key = Key::new(
            Self::contributions_pk(t),
            format!("e#{:020}#{}", entry.timestamp_ms, entry.id),
        );
        let (key, doc) = (&key, &encode(entry)?);
        optimistic(move || async move {
            let (count, version) = self.counter(t).await?;
            let writes = vec![
                put(key.clone(), doc.clone(), Condition::Absent),
                put(
                    Self::counter_key(t),
                    encode(&Counter { count: count + 1 })?,
                    Condition::at(version),
                ),
            ];
            self.table.transact(writes).await
        })
        .await?;
        self.trim_contributions(t).await
    }

    /// Deletes the oldest entries down to the cap, up to 99 per transaction.
    async fn trim_contributions(&self, t: &TenantId) -> Result<u64, StoreError> {
        let mut evicted = 0;
        loop {
            let round = optimistic(move || async move { self.evict_oldest(t).await }).await?;
            match round {
                Some(0) | None => return Ok(evicted), // under the cap, or the counter repaired
                Some(k) => evicted += k,
            }
        }
    }

    /// One round of [`Self::trim_contributions`]: deletes up to 99 of the oldest entries
    /// past the cap and lowers the counter; `None` when the tenant is within the cap.
    async fn evict_oldest(&self, t: &TenantId) -> Result<Option<u64>, StoreError> {
        let (count, version) = self.counter(t).await?;
        if count <= self.contribution_cap {
            return Ok(None);
        }
        let excess = (count - self.contribution_cap).min(99) as usize;
        let page = self
            .table
            .query(&Query {
                pk: Self::contributions_pk(t),
                range: SortRange::BeginsWith("e#".to_owned()),
                limit: excess,
                cursor: None,
                ascending: true,
            })
            .await?;
        let k = page.items.len() as u64;
        let mut writes: Vec<Write> = page
            .items
            .into_iter()
            .map(|i| Write::Delete {
                key: i.key,
                condition: Condition::Exists,
            })
            .collect();
        writes.push(put(
            Self::counter_key(t),
            encode(&Counter { count: count - k })?,
            Condition::at(version),
        ));
        self.table.transact(writes).await?;
        Ok(Some(k))
    }

    /// Every contribution with a timestamp in `[from_ms, to_ms)`, oldest first.
    pub(crate) async fn contributions(
        &self,
        t: &TenantId,
        (from_ms, to_ms): (u64, u64),
    ) -> Result<Vec<ContributionEntry>, StoreError> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .table
                .query(&Query {
                    pk: Self::contributions_pk(t),
                    range: time_range("e#", from_ms, to_ms),
                    limit: 1_000,
                    cursor,
                    ascending: true,
                })
                .await?;
            for item in page.items {
                out.push(item.decode()?.0);
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }
}
