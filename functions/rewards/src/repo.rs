//! Where executions, verifications and training examples live in the table.
//!
//! Layout (single-table): partition `tenant#execution#ID` holds the execution (`sk =
//! execution`) and one item per verification (`sk = verification#ID`, UUIDv7 so oldest
//! first); `tenant#training-examples#all` holds one item per rewarded execution under
//! `sk = TYPE#AGENT#EXECUTION`, so a type, or a type and an agent, is one prefix query;
//! `tenant#config#rewards` holds the verifier configuration.
//!
//! Adding a verification is one transaction: the verification, the execution (conditioned on
//! the version its composite was computed from, so two verifications racing cannot leave a
//! stale reward) and the example moved to its new type.

use std::sync::Arc;

use agentrl_core::{
    TenantId,
    verify::{ExampleType, Method, Outcome, VerifyConfig},
};
use agentrl_store::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Put, Query, SortRange, Table, Write, encode},
    tenant_config::TenantConfig,
};

use serde::{Deserialize, Serialize};

use crate::executions::RunStatus;

/// An execution as stored: the run, and where its verification stands.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Execution {
    /// A UUIDv7: ordered by creation.
    pub execution_id: String,
    pub agent_id: String,
    pub agent_version: Option<String>,
    /// The prompt.
    pub input: String,
    /// The completion.
    pub output: String,
    pub tokens_used: Option<u64>,
    pub cost: Option<f64>,
    pub status: RunStatus,
    pub latency_ms: Option<u64>,
    /// Epoch ms.
    pub created_at_ms: u64,
    /// How many verifications it has.
    pub verifications: u32,
    /// The composite reward after the last verification (`None` until one is `ok`).
    pub reward: Option<f64>,
    /// The training example it is, if rewarded.
    pub example_type: Option<ExampleType>,
}

/// A verification as stored: the verifier's outcome with its ids and time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Verification {
    pub verification_id: String,
    pub execution_id: String,
    pub method: Method,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Epoch ms.
    pub created_at_ms: u64,
}

/// Why a verification was not recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordError {
    /// The execution changed since it was read (another verification won): read again.
    #[error("the execution changed since it was read")]
    ExecutionChanged,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A training example as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Example {
    pub execution_id: String,
    pub agent_id: String,
    pub agent_version: Option<String>,
    /// The execution's input.
    pub prompt: String,
    /// The execution's output.
    pub completion: String,
    /// The composite reward and its confidence.
    pub reward: f64,
    pub confidence: f64,
    #[serde(rename = "type")]
    pub kind: ExampleType,
    /// When it was last (re)classified (epoch ms).
    pub updated_at_ms: u64,
}

/// Most verifications one execution takes: its reward is recomputed from all of them.
pub const MAX_VERIFICATIONS: u32 = 100;

/// Typed access to the reward items of the table.
#[derive(Clone)]
pub struct RewardRepo {
    table: Arc<dyn Table>,
    configs: TenantConfig<VerifyConfig>,
}

/// Which examples a listing covers.
pub(crate) struct ExampleFilter<'a> {
    pub kind: Option<ExampleType>,
    pub agent_id: Option<&'a str>,
}

fn execution_key(t: &TenantId, id: &str) -> Key {
    Key::new(partition(t, "execution", id), "execution")
}

fn verification_key(t: &TenantId, execution: &str, id: &str) -> Key {
    Key::new(
        partition(t, "execution", execution),
        format!("verification#{id}"),
    )
}

fn examples_pk(t: &TenantId) -> String {
    partition(t, "training-examples", "all")
}

fn example_key(t: &TenantId, kind: ExampleType, agent: &str, execution: &str) -> Key {
    Key::new(
        examples_pk(t),
        format!("{}#{agent}#{execution}", kind.as_str()),
    )
}

impl RewardRepo {
    /// A repository over `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            configs: TenantConfig::new(table.clone(), "rewards"),
            table,
        }
    }

    /// The configuration documents, for the config routes (they share the cache).
    pub(crate) fn configs(&self) -> TenantConfig<VerifyConfig> {
        self.configs.clone()
    }

    /// The tenant's verifier configuration, or the defaults.
    pub(crate) async fn config(&self, t: &TenantId) -> Result<VerifyConfig, StoreError> {
        self.configs.get(t).await
    }

    /// Records a new execution.
    pub(crate) async fn create(&self, t: &TenantId, e: &Execution) -> Result<(), StoreError> {
        self.table
            .put(Put {
                key: execution_key(t, &e.execution_id),
                doc: encode(e)?,
                expires_at: None,
                condition: Condition::Absent,
            })
            .await
            .map(drop)
    }

    /// An execution with the version it was read at.
    pub(crate) async fn execution(
        &self,
        t: &TenantId,
        id: &str,
    ) -> Result<Option<(Execution, u64)>, StoreError> {
        self.table
            .get(&execution_key(t, id))
            .await?
            .map(Item::decode)
            .transpose()
    }

    /// Every verification of an execution, oldest first.
    pub(crate) async fn verifications(
        &self,
        t: &TenantId,
        id: &str,
    ) -> Result<Vec<Verification>, StoreError> {
        let page = self
            .table
            .query(&Query {
                pk: partition(t, "execution", id),
                range: SortRange::BeginsWith("verification#".to_owned()),
                limit: MAX_VERIFICATIONS as usize,
                cursor: None,
                ascending: true,
            })
            .await?;
        page.items
            .into_iter()
            .map(|i| i.decode().map(|(v, _)| v))
            .collect()
    }

    /// Stores `verification` and `updated` (the execution it was computed on, at `version`),
    /// moving the execution's training example from `previous` to `example`.
    ///
    /// # Errors
    /// [`RecordError::ExecutionChanged`] when the execution changed since `version`.
    pub(crate) async fn record(
        &self,
        t: &TenantId,
        (updated, version): (&Execution, u64),
        previous: Option<ExampleType>,
        verification: &Verification,
        example: Option<&Example>,
    ) -> Result<(), RecordError> {
        let id = &updated.execution_id;
        let mut writes = vec![
            Write::Put(Put {
                key: verification_key(t, id, &verification.verification_id),
                doc: encode(verification)?,
                expires_at: None,
                condition: Condition::Absent,
            }),
            Write::Put(Put {
                key: execution_key(t, id),
                doc: encode(updated)?,
                expires_at: None,
                condition: Condition::Version(version),
            }),
        ];
        if let Some(old) = previous
            && example.is_none_or(|e| e.kind != old)
        {
            writes.push(Write::Delete {
                key: example_key(t, old, &updated.agent_id, id),
                condition: Condition::None,
            });
        }
        if let Some(example) = example {
            writes.push(Write::Put(Put {
                key: example_key(t, example.kind, &updated.agent_id, id),
                doc: encode(example)?,
                expires_at: None,
                condition: Condition::None,
            }));
        }
        self.table.transact(writes).await.map_err(|e| match e {
            StoreError::ConditionFailed { .. } | StoreError::Conflict => {
                RecordError::ExecutionChanged
            }
            e => RecordError::Store(e),
        })
    }

    /// One page of training examples and the next cursor.
    pub(crate) async fn examples(
        &self,
        t: &TenantId,
        filter: &ExampleFilter<'_>,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<Example>, Option<String>), StoreError> {
        let range = match (filter.kind, filter.agent_id) {
            (None, _) => SortRange::All,
            (Some(kind), None) => SortRange::BeginsWith(format!("{}#", kind.as_str())),
            (Some(kind), Some(agent)) => {
                SortRange::BeginsWith(format!("{}#{agent}#", kind.as_str()))
            }
        };
        let page = self
            .table
            .query(&Query {
                pk: examples_pk(t),
                range,
                limit,
                cursor,
                ascending: true,
            })
            .await?;
        let mut examples: Vec<Example> = page
            .items
            .into_iter()
            .map(|i| i.decode().map(|(e, _)| e))
            .collect::<Result<_, _>>()?;
        // Keys lead with the type, so one agent's examples of every type are not one key
        // range: they are filtered from the page read, which can then hold fewer than `limit`
        // (a DynamoDB filter expression reads the same way), while the cursor still moves on.
        if let (None, Some(agent)) = (filter.kind, filter.agent_id) {
            examples.retain(|e| e.agent_id == agent);
        }
        Ok((examples, page.next))
    }
}
