//! Where the learning state lives in the table.
//!
//! Layout (single-table): everything about one agent is in partition `tenant#learning#AGENT`:
//! - `agent`: the [`AgentDoc`] (projection, settings, outbox, shadow log);
//! - `user#USER`: the relationship with one user;
//! - `reply#MESSAGE`: what is known about one reply (its placeholder or feedback reward);
//! - `event#EVENT`: the marker of an applied event (dedup; kept 30 days, longer than any
//!   queue redelivery).
//!
//! Agents with changes the policy loop has not yet seen are listed in one of
//! [`PENDING_SHARDS`] system partitions, `#system#learning-pending#N`: a key that starts with
//! `#` cannot be a tenant's (tenant ids never contain `#`).

use std::sync::Arc;

use agentrl_core::{
    TenantId,
    learning::{AgentProjection, AgentSettings, LearningConfig, Plan, Relationship, ReplyLedger},
};
use agentrl_store::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Put, Query, SortRange, Table, Write, encode},
    retry::optimistic,
    tenant_config::TenantConfig,
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};

/// How many system partitions list the agents with pending changes (spreads the writes).
pub const PENDING_SHARDS: u8 = 16;
/// How long an applied event's marker is kept: longer than SQS keeps a message (14 days).
pub const MARKER_SECONDS: u64 = 30 * 24 * 3600;
/// How long a reply's record is kept after its last change: feedback later than this is
/// applied to the agent but no longer credited to the reply.
pub const REPLY_SECONDS: u64 = 90 * 24 * 3600;
/// Most entries of the shadow log kept per agent.
pub const SHADOW_LOG_LEN: usize = 20;

/// An event the service emits on the event queue (`agent.learning.updated`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outbound {
    /// Unique per emission: consumers deduplicate by it (delivery is at least once).
    pub event_id: String,
    /// `agent.learning.updated`, `agent.learning.frozen` or `dataset.generation.requested`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The tenant.
    pub tenant: String,
    /// The agent.
    pub agent_id: String,
    /// Its learning version after the change.
    pub learning_version: u64,
    /// When (epoch ms).
    pub at_ms: i64,
    /// What changed (the plan, or the dataset trigger's figures).
    pub detail: serde_json::Value,
}

/// What a shadow-mode update would have done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShadowEntry {
    /// When (epoch ms).
    pub at_ms: i64,
    /// The plan that was not applied.
    pub plan: Plan,
    /// Whether the agent would have been queued for dataset generation.
    pub dataset_due: bool,
}

/// The agent item.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentDoc {
    /// What the events taught.
    pub projection: AgentProjection,
    /// Operator settings: trusted, shadow.
    pub settings: AgentSettings,
    /// Emitted events not yet confirmed sent.
    pub outbox: Vec<Outbound>,
    /// The last [`SHADOW_LOG_LEN`] shadow-mode plans.
    pub shadow_log: Vec<ShadowEntry>,
    /// Whether the agent is listed in a pending partition.
    pub pending: bool,
}

/// Typed access to the learning items.
#[derive(Clone)]
pub struct LearningRepo {
    pub(crate) table: Arc<dyn Table>,
    configs: TenantConfig<LearningConfig>,
}

pub(crate) fn agent_pk(t: &TenantId, agent: &str) -> String {
    partition(t, "learning", agent)
}

pub(crate) fn agent_key(t: &TenantId, agent: &str) -> Key {
    Key::new(agent_pk(t, agent), "agent")
}

pub(crate) fn user_key(t: &TenantId, agent: &str, user: &str) -> Key {
    Key::new(agent_pk(t, agent), format!("user#{user}"))
}

pub(crate) fn reply_key(t: &TenantId, agent: &str, message: &str) -> Key {
    Key::new(agent_pk(t, agent), format!("reply#{message}"))
}

pub(crate) fn marker_key(t: &TenantId, agent: &str, event: &str) -> Key {
    Key::new(agent_pk(t, agent), format!("event#{event}"))
}

fn pending_pk(shard: u8) -> String {
    format!("#system#learning-pending#{shard}")
}

/// The pending-list entry of an agent (its shard from a hash of tenant and agent).
pub(crate) fn pending_key(t: &TenantId, agent: &str) -> Key {
    let digest = Sha256::digest(format!("{t}\0{agent}").as_bytes());
    let shard = digest[0] % PENDING_SHARDS;
    Key::new(pending_pk(shard), format!("{t}#{agent}"))
}

/// Lists or unlists the agent in its pending partition, as `pending` says.
pub(crate) fn pending_entry(t: &TenantId, agent: &str, pending: bool) -> Write {
    let key = pending_key(t, agent);
    if pending {
        Write::Put(Put {
            key,
            doc: serde_json::json!({}),
            expires_at: None,
            condition: Condition::None,
        })
    } else {
        Write::Delete {
            key,
            condition: Condition::None,
        }
    }
}

/// Who is pending: the entry's sort key split back into tenant and agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAgent {
    /// The tenant.
    pub tenant: TenantId,
    /// The agent.
    pub agent_id: String,
}

/// A document with the version it was read at (`None` when absent).
pub(crate) type Versioned<T> = (T, Option<u64>);

/// The document of a read item, or the default with no version when there is none.
pub(crate) fn versioned<T: DeserializeOwned + Default>(
    item: Option<Item>,
) -> Result<Versioned<T>, StoreError> {
    Ok(match item {
        Some(item) => {
            let (doc, version) = item.decode()?;
            (doc, Some(version))
        }
        None => (T::default(), None),
    })
}

impl LearningRepo {
    /// A repository over `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            configs: TenantConfig::new(table.clone(), "learning"),
            table,
        }
    }

    /// The configuration documents, for the config routes (they share the cache).
    pub(crate) fn configs(&self) -> TenantConfig<LearningConfig> {
        self.configs.clone()
    }

    /// The tenant's learning configuration, or the defaults.
    pub(crate) async fn config(&self, t: &TenantId) -> Result<LearningConfig, StoreError> {
        self.configs.get(t).await
    }

    async fn read<T: DeserializeOwned + Default>(
        &self,
        key: &Key,
    ) -> Result<Versioned<T>, StoreError> {
        versioned(self.table.get(key).await?)
    }

    /// The agent item (default when the agent has no events yet).
    pub(crate) async fn agent(
        &self,
        t: &TenantId,
        agent: &str,
    ) -> Result<Versioned<AgentDoc>, StoreError> {
        self.read(&agent_key(t, agent)).await
    }

    /// Whether the agent is in the tenant's registry (the training function's agents).
    pub(crate) async fn registered(&self, t: &TenantId, agent: &str) -> Result<bool, StoreError> {
        let key = Key::new(agentrl_store::keys::agents(t), agent);
        Ok(self.table.get(&key).await?.is_some())
    }

    /// Writes the agent item back, conditioned on the `version` it was read at, with its
    /// pending-list entry in step with `doc.pending`.
    ///
    /// # Errors
    /// [`StoreError::ConditionFailed`] when the item changed since `version`.
    pub(crate) async fn save_agent(
        &self,
        t: &TenantId,
        agent: &str,
        doc: &AgentDoc,
        version: u64,
    ) -> Result<(), StoreError> {
        let put = Write::Put(Put {
            key: agent_key(t, agent),
            doc: encode(doc)?,
            expires_at: None,
            condition: Condition::Version(version),
        });
        self.table
            .transact(vec![put, pending_entry(t, agent, doc.pending)])
            .await
    }

    /// Changes the agent item with `change` under optimistic concurrency; creates it when
    /// absent if `create`. Returns the item as written (`None`: absent and not created).
    ///
    /// # Errors
    /// When a store fails or the agent stays contended.
    pub(crate) async fn modify_agent(
        &self,
        t: &TenantId,
        agent: &str,
        create: bool,
        change: impl Fn(&mut AgentDoc),
    ) -> Result<Option<AgentDoc>, StoreError> {
        let change = &change;
        optimistic(move || async move {
            let (mut doc, version) = self.agent(t, agent).await?;
            if version.is_none() && !create {
                return Ok(None);
            }
            change(&mut doc);
            let put = Put {
                key: agent_key(t, agent),
                doc: encode(&doc)?,
                expires_at: None,
                condition: Condition::at(version),
            };
            self.table.put(put).await?;
            Ok(Some(doc))
        })
        .await
    }

    /// What is known about a reply.
    pub(crate) async fn reply(
        &self,
        t: &TenantId,
        agent: &str,
        message: &str,
    ) -> Result<Versioned<ReplyLedger>, StoreError> {
        self.read(&reply_key(t, agent, message)).await
    }

    /// Up to `limit` relationships of the agent, strongest first.
    pub(crate) async fn relationships(
        &self,
        t: &TenantId,
        agent: &str,
        limit: usize,
    ) -> Result<Vec<(String, Relationship)>, StoreError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .table
                .query(&Query {
                    pk: agent_pk(t, agent),
                    range: SortRange::BeginsWith("user#".to_owned()),
                    limit: 1_000,
                    cursor,
                    ascending: true,
                })
                .await?;
            for item in page.items {
                let user = item.key.sk.trim_start_matches("user#").to_owned();
                let (r, _): (Relationship, _) = item.decode()?;
                all.push((user, r));
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        all.sort_by(|a, b| b.1.strength.total_cmp(&a.1.strength).then(a.0.cmp(&b.0)));
        all.truncate(limit);
        Ok(all)
    }

    /// One page of one pending partition.
    pub(crate) async fn pending(
        &self,
        shard: u8,
        cursor: Option<String>,
    ) -> Result<(Vec<PendingAgent>, Option<String>), StoreError> {
        let page = self
            .table
            .query(&Query {
                pk: pending_pk(shard),
                range: SortRange::All,
                limit: 1_000,
                cursor,
                ascending: true,
            })
            .await?;
        let agents = page
            .items
            .iter()
            .filter_map(|item: &Item| {
                let (tenant, agent) = item.key.sk.split_once('#')?;
                Some(PendingAgent {
                    tenant: TenantId::parse(tenant).ok()?,
                    agent_id: agent.to_owned(),
                })
            })
            .collect();
        Ok((agents, page.next))
    }
}
