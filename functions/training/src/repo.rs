//! Where the registry lives in the table.
//!
//! Layout (single table):
//! - `tenant#agents#all`, `sk = AGENT`: the agents, so listing them is one query;
//! - `tenant#training-run#RUN`, `sk = run`: a run; `tenant#training-runs#AGENT` and
//!   `tenant#training-runs-all#all`, `sk = CREATED_MS#RUN`: the two listings (ids only, the
//!   run is read from its own item, so a listing never shows a stale status);
//! - `tenant#agent-versions#AGENT`, `sk = v0000000003`: the model versions, in order;
//! - `tenant#agent-arms#AGENT`, `sk = VERSION`: live outcomes reported per version;
//! - `tenant#gate-decisions#AGENT`, `sk = AT_MS#RUN`: every promotion's gate decision,
//!   refusals included, newest first (immutable: the record is the listing item);
//! - `#system#tenant-partitions`, `sk = PSEUDONYM`: which tenant a dataset's pseudonymous
//!   partition belongs to (the dataset job only knows the pseudonym);
//! - `#system#training-active`, `sk = TENANT#RUN`: unfinished runs of the local launcher, so
//!   `agentrl serve` resumes them after a restart.

use std::sync::Arc;

use agentrl_core::{
    TenantId,
    training::{ArmStats, Canary, Evaluation, GateConfig, RunStatus},
};
use agentrl_store::{
    StoreError,
    keys::partition,
    listing,
    ports::{Condition, Item, Key, Page, Put, Query, SortRange, Table, Write, encode},
    retry::Contended,
    tenant_config::TenantConfig,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An agent as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct AgentRecord {
    pub agent_id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub agent_type: String,
    pub model: ModelRef,
    pub base_prompt: String,
    /// A shared base model (under `models/` in the object store) new runs start from until a
    /// version is deployed.
    pub base_model: Option<String>,
    /// The training config of runs started by a ready dataset; `None`: datasets do not start
    /// runs for this agent.
    pub auto_train: Option<Value>,
    /// The record's revision: incremented by every change.
    pub version: u64,
    pub active: bool,
    pub deployed_version: Option<String>,
    pub canary: Option<Canary>,
    /// Every version deployed to all traffic, oldest first (promoting one again is a rollback).
    #[serde(default)]
    pub history: Vec<Deployment>,
    /// The number the next registered model version gets.
    pub next_version: u64,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
}

/// A version's deployment to all of an agent's traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct Deployment {
    pub version: String,
    /// Epoch ms.
    pub at_ms: u64,
}

/// Which model an agent calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub(crate) struct ModelRef {
    /// `openai`, `anthropic`, `bedrock`, `self-hosted`, …
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub provider: String,
    /// The provider's model name.
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
    )]
    pub name: String,
}

/// What a run starts from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub(crate) enum BaseRef {
    /// A shared base model under `models/NAME/`.
    Model(String),
    /// One of the agent's model versions.
    Version(String),
}

/// The job that executes a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JobRef {
    /// `batch` or `local`.
    pub launcher: String,
    /// The launcher's id of the job.
    pub job_id: String,
    /// What it runs on (for the cost estimate).
    pub instance_type: String,
    /// The GPU class its plan chose (Batch).
    #[serde(default)]
    pub gpu_class: Option<String>,
    /// The plan's peak on that class, GiB.
    #[serde(default)]
    pub planned_peak_gb: Option<f64>,
}

/// A run as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub run_id: String,
    pub agent_id: String,
    pub dataset_id: String,
    pub base: BaseRef,
    /// The object prefix of the base model's files.
    pub base_prefix: String,
    pub config: Value,
    pub status: RunStatus,
    /// Why it failed or was cancelled.
    pub reason: Option<String>,
    pub job: Option<JobRef>,
    /// Object prefixes of the dataset and of the run's output.
    pub dataset_prefix: String,
    pub output_prefix: String,
    /// `request` or `dataset.ready`.
    pub trigger: String,
    pub created_at_ms: u64,
    pub started_at_ms: Option<u64>,
    pub finished_at_ms: Option<u64>,
    /// The model version the run registered.
    pub model_version: Option<String>,
    /// When a request took on submitting the job (so one submit happens at a time).
    #[serde(default)]
    pub submit_claimed_at_ms: Option<u64>,
}

/// A model version as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct VersionRecord {
    pub version: String,
    pub agent_id: String,
    pub run_id: String,
    pub dataset_id: String,
    /// `content_hash` of the dataset's manifest.
    pub dataset_hash: Option<String>,
    pub base: BaseRef,
    /// SHA-256 of the base model's weights, from the run's report.
    pub base_model_sha256: Option<String>,
    /// The object prefix of a loadable model (full weights, or LoRA merged); `None` when the
    /// run wrote an adapter only.
    pub model_prefix: Option<String>,
    /// Every file the run wrote.
    pub artifacts: Vec<String>,
    /// The run's final training metrics.
    pub metrics: Value,
    /// The version's scores on its run's validation set.
    pub evaluation: Option<Evaluation>,
    /// The base model's scores on the same set, measured by the same run.
    pub base_evaluation: Option<Evaluation>,
    pub created_at_ms: u64,
}

fn agent_key(t: &TenantId, agent: &str) -> Key {
    Key::new(agentrl_store::keys::agents(t), agent)
}

fn run_key(t: &TenantId, run: &str) -> Key {
    Key::new(partition(t, "training-run", run), "run")
}

fn agent_runs_pk(t: &TenantId, agent: &str) -> String {
    partition(t, "training-runs", agent)
}

fn gate_decisions_pk(t: &TenantId, agent: &str) -> String {
    partition(t, "gate-decisions", agent)
}

fn all_runs_pk(t: &TenantId) -> String {
    partition(t, "training-runs-all", "all")
}

fn versions_pk(t: &TenantId, agent: &str) -> String {
    partition(t, "agent-versions", agent)
}

/// Versions sort by number: `v3` is `v0000000003`.
fn version_sk(number: u64) -> String {
    format!("v{number:010}")
}

/// The number of a version id (`v3` → 3): `v` and 1 to 19 digits, nothing else (no sign),
/// so the document's pattern `^v[0-9]{1,19}$` is the whole rule; 19 digits always fit a u64.
pub(crate) fn version_number(version: &str) -> Option<u64> {
    let digits = version.strip_prefix('v')?;
    if (1..=19).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

fn arm_key(t: &TenantId, agent: &str, version: &str) -> Key {
    Key::new(partition(t, "agent-arms", agent), version)
}

const PARTITIONS_PK: &str = "#system#tenant-partitions";
const ACTIVE_PK: &str = "#system#training-active";

fn active_key(t: &TenantId, run: &str) -> Key {
    Key::new(ACTIVE_PK, format!("{t}#{run}"))
}

/// Typed access to the registry items of the table.
#[derive(Clone)]
pub struct TrainingRepo {
    table: Arc<dyn Table>,
    gates: TenantConfig<GateConfig>,
}

/// Why a version could not be registered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegisterError {
    /// The agent or the run changed since they were read: read again.
    #[error("the agent or the run changed since they were read")]
    Changed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl TrainingRepo {
    /// A repository over `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            gates: TenantConfig::new(table.clone(), "promotion-gate"),
            table,
        }
    }

    pub(crate) fn gates(&self) -> TenantConfig<GateConfig> {
        self.gates.clone()
    }

    /// Writes `value` under `key`: created when `at` is `None`, else only over the version read.
    async fn write<T: Serialize>(
        &self,
        key: Key,
        value: &T,
        at: Option<u64>,
    ) -> Result<(), StoreError> {
        self.table
            .put(Put {
                key,
                doc: encode(value)?,
                expires_at: None,
                condition: Condition::at(at),
            })
            .await
            .map(drop)
    }

    async fn read<T: serde::de::DeserializeOwned>(
        &self,
        key: &Key,
    ) -> Result<Option<(T, u64)>, StoreError> {
        self.table.get(key).await?.map(Item::decode).transpose()
    }

    pub(crate) async fn agent(
        &self,
        t: &TenantId,
        id: &str,
    ) -> Result<Option<(AgentRecord, u64)>, StoreError> {
        self.read(&agent_key(t, id)).await
    }

    /// Writes an agent: created when `at` is `None`, else only over the revision read.
    pub(crate) async fn put_agent(
        &self,
        t: &TenantId,
        agent: &AgentRecord,
        at: Option<u64>,
    ) -> Result<(), StoreError> {
        self.write(agent_key(t, &agent.agent_id), agent, at).await
    }

    /// A page of the tenant's agents, in id order.
    pub(crate) async fn agents(
        &self,
        t: &TenantId,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<AgentRecord>, Option<String>), StoreError> {
        let page = self
            .table
            .query(&Query {
                pk: agentrl_store::keys::agents(t),
                range: SortRange::All,
                limit,
                cursor,
                ascending: true,
            })
            .await?;
        decode_page(page)
    }

    /// Remembers that the pseudonymous partition `pseudonym` is `t`'s (idempotent).
    pub(crate) async fn remember_partition(
        &self,
        t: &TenantId,
        pseudonym: &str,
    ) -> Result<(), StoreError> {
        let put = Put {
            key: Key::new(PARTITIONS_PK, pseudonym),
            doc: serde_json::json!({ "tenant": t.as_str() }),
            expires_at: None,
            condition: Condition::Absent,
        };
        match self.table.put(put).await {
            Ok(_) | Err(StoreError::ConditionFailed { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The tenant of a pseudonymous partition, if one registered an agent.
    pub(crate) async fn partition_tenant(
        &self,
        pseudonym: &str,
    ) -> Result<Option<TenantId>, StoreError> {
        let item = self.table.get(&Key::new(PARTITIONS_PK, pseudonym)).await?;
        Ok(item
            .and_then(|i| {
                i.doc
                    .get("tenant")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .and_then(|t| TenantId::parse(&t).ok()))
    }

    pub(crate) async fn run(
        &self,
        t: &TenantId,
        id: &str,
    ) -> Result<Option<(RunRecord, u64)>, StoreError> {
        self.read(&run_key(t, id)).await
    }

    /// Creates a run with its two listing entries, and its entry in the active list when the
    /// launcher is local; fails with `ConditionFailed` when the run exists.
    pub(crate) async fn create_run(
        &self,
        t: &TenantId,
        run: &RunRecord,
        track_active: bool,
    ) -> Result<(), StoreError> {
        let mut writes = vec![
            put(run_key(t, &run.run_id), encode(run)?, Condition::Absent),
            Write::Put(listing::entry(
                agent_runs_pk(t, &run.agent_id),
                run.created_at_ms,
                &run.run_id,
                None,
            )),
            Write::Put(listing::entry(
                all_runs_pk(t),
                run.created_at_ms,
                &run.run_id,
                None,
            )),
        ];
        if track_active {
            writes.push(put(
                active_key(t, &run.run_id),
                serde_json::json!({}),
                Condition::None,
            ));
        }
        self.table.transact(writes).await
    }

    /// Writes a run over the version read; a finished run leaves the active list.
    pub(crate) async fn update_run(
        &self,
        t: &TenantId,
        run: &RunRecord,
        at: u64,
    ) -> Result<(), StoreError> {
        if !run.status.is_finished() {
            return self.write(run_key(t, &run.run_id), run, Some(at)).await;
        }
        let writes = vec![
            put(
                run_key(t, &run.run_id),
                encode(run)?,
                Condition::Version(at),
            ),
            Write::Delete {
                key: active_key(t, &run.run_id),
                condition: Condition::None,
            },
        ];
        self.table.transact(writes).await
    }

    /// A page of run ids, newest first: of one agent, or of the tenant.
    pub(crate) async fn run_ids(
        &self,
        t: &TenantId,
        agent: Option<&str>,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), StoreError> {
        let pk = agent.map_or_else(|| all_runs_pk(t), |a| agent_runs_pk(t, a));
        listing::newest_first(self.table.as_ref(), pk, limit, cursor).await
    }

    /// The runs under `ids`, in order (an id without a run is skipped).
    pub(crate) async fn runs(
        &self,
        t: &TenantId,
        ids: &[String],
    ) -> Result<Vec<RunRecord>, StoreError> {
        let keys: Vec<Key> = ids.iter().map(|id| run_key(t, id)).collect();
        self.table
            .get_many(&keys)
            .await?
            .into_iter()
            .flatten()
            .map(|i| i.decode().map(|(r, _)| r))
            .collect()
    }

    /// Keeps a promotion's gate decision.
    pub(crate) async fn record_gate(&self, t: &TenantId, r: &GateRecord) -> Result<(), StoreError> {
        self.table
            .put(Put {
                key: Key::new(
                    gate_decisions_pk(t, &r.agent_id),
                    format!("{:013}#{}", r.at_ms, r.run_id),
                ),
                doc: encode(r)?,
                expires_at: None,
                condition: Condition::None,
            })
            .await
            .map(drop)
    }

    /// A page of an agent's gate decisions, newest first.
    pub(crate) async fn gate_decisions(
        &self,
        t: &TenantId,
        agent: &str,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<GateRecord>, Option<String>), StoreError> {
        self.newest_first(gate_decisions_pk(t, agent), limit, cursor)
            .await
    }

    /// A page of the items of partition `pk`, newest (highest sort key) first.
    async fn newest_first<T: serde::de::DeserializeOwned>(
        &self,
        pk: String,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<T>, Option<String>), StoreError> {
        let page = self
            .table
            .query(&Query {
                pk,
                range: SortRange::All,
                limit,
                cursor,
                ascending: false,
            })
            .await?;
        decode_page(page)
    }

    /// Every unfinished run of the local launcher, of every tenant.
    pub(crate) async fn active_runs(&self) -> Result<Vec<(TenantId, String)>, StoreError> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .table
                .query(&Query {
                    cursor,
                    ..Query::partition(ACTIVE_PK)
                })
                .await?;
            for item in &page.items {
                if let Some((tenant, run)) = item.key.sk.split_once('#')
                    && let Ok(tenant) = TenantId::parse(tenant)
                {
                    out.push((tenant, run.to_owned()));
                }
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// Registers `version` for the run: the version item, the run (over `run_at`) and the agent's
    /// next version number (over `agent_at`), all or nothing.
    pub(crate) async fn register_version(
        &self,
        t: &TenantId,
        version: &VersionRecord,
        run: (&RunRecord, u64),
        agent: (&AgentRecord, u64),
    ) -> Result<(), RegisterError> {
        let number = version_number(&version.version).unwrap_or_default();
        let writes = vec![
            put(
                Key::new(versions_pk(t, &version.agent_id), version_sk(number)),
                encode(version)?,
                Condition::Absent,
            ),
            put(
                run_key(t, &run.0.run_id),
                encode(run.0)?,
                Condition::Version(run.1),
            ),
            put(
                agent_key(t, &agent.0.agent_id),
                encode(agent.0)?,
                Condition::Version(agent.1),
            ),
        ];
        match self.table.transact(writes).await {
            Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => {
                Err(RegisterError::Changed)
            }
            other => Ok(other?),
        }
    }

    pub(crate) async fn version(
        &self,
        t: &TenantId,
        agent: &str,
        version: &str,
    ) -> Result<Option<VersionRecord>, StoreError> {
        let Some(number) = version_number(version) else {
            return Ok(None);
        };
        let key = Key::new(versions_pk(t, agent), version_sk(number));
        Ok(self.read(&key).await?.map(|(v, _)| v))
    }

    /// A page of the agent's versions, newest first.
    pub(crate) async fn versions(
        &self,
        t: &TenantId,
        agent: &str,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<VersionRecord>, Option<String>), StoreError> {
        self.newest_first(versions_pk(t, agent), limit, cursor)
            .await
    }

    /// Live outcomes of a version.
    pub(crate) async fn arm(
        &self,
        t: &TenantId,
        agent: &str,
        version: &str,
    ) -> Result<Option<(ArmStats, u64)>, StoreError> {
        self.read(&arm_key(t, agent, version)).await
    }

    pub(crate) async fn put_arm(
        &self,
        t: &TenantId,
        agent: &str,
        version: &str,
        stats: &ArmStats,
        at: Option<u64>,
    ) -> Result<(), StoreError> {
        self.write(arm_key(t, agent, version), stats, at).await
    }
}

/// A failed conditional write as `contended` (read again and retry), any other store error
/// as itself.
pub(crate) fn lost_race<E: From<StoreError>>(e: StoreError, contended: E) -> E {
    if e.is_contended() {
        contended
    } else {
        e.into()
    }
}

/// The transaction write of a whole item.
/// A promotion's gate decision as kept: what was asked, what the gate found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct GateRecord {
    pub agent_id: String,
    pub run_id: String,
    pub version: String,
    /// The share of traffic asked for.
    pub percent: f64,
    /// A version deployed before: not gated.
    pub rollback: bool,
    /// Passed: the version was promoted; refused: nothing changed.
    pub decision: agentrl_core::training::GateDecision,
    pub at_ms: u64,
}

fn put(key: Key, doc: Value, condition: Condition) -> Write {
    Write::Put(Put {
        key,
        doc,
        expires_at: None,
        condition,
    })
}

pub(crate) fn decode_page<T: serde::de::DeserializeOwned>(
    page: Page,
) -> Result<(Vec<T>, Option<String>), StoreError> {
    let items = page
        .items
        .into_iter()
        .map(|i| i.decode().map(|(v, _)| v))
        .collect::<Result<_, _>>()?;
    Ok((items, page.next))
}
