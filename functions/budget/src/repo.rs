//! Where budgets live in the table, and the transactions that keep the ledger exact.
//!
//! Layout (single-table): partition `tenant#budget#ID` holds the budget (`sk = budget`) and
//! one item per applied report (`sk = report#REPORT_ID`); `tenant#config#budgets` holds the
//! configuration; `tenant#budget-usage#TIER` holds the adaptive history; `tenant#budgets#all`
//! lists the budgets newest first (`sk = CREATED_MS#ID`, see [`agentrl_store::listing`]).

use std::sync::Arc;

use agentrl_core::{
    TenantId,
    budget::{Budget, BudgetConfig, Complexity, Decision, UsageHistory},
};
use agentrl_store::{
    StoreError,
    keys::partition,
    listing,
    ports::{Condition, Item, Key, Put, Table, Write, encode},
    tenant_config::TenantConfig,
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

/// How long a budget and its reports are kept after their last change.
pub const RETENTION_SECONDS: u64 = 30 * 24 * 3600;

/// A report as stored: the fingerprint of its request and the answer given.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredReport {
    /// Fingerprint of the request body that produced `decision`.
    pub request: String,
    /// The answer.
    pub decision: Decision,
}

/// Typed access to the budget items of the table.
#[derive(Clone)]
pub struct BudgetRepo {
    table: Arc<dyn Table>,
    configs: TenantConfig<BudgetConfig>,
}

/// Why a write of a budget did not happen: the domain's reading of a failed condition.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The budget (or its tier's usage history) changed since it was read: read again.
    #[error("the budget changed since it was read")]
    BudgetChanged,
    /// The report id is already recorded: this is a retry of a counted report.
    #[error("the report was already counted")]
    ReportAlreadyCounted,
    /// The table failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where [`BudgetRepo::apply_report`] puts the report's write in its transaction (after the
/// budget's), so a failed condition there means the report id is taken.
const REPORT_WRITE: usize = 1;

impl SaveError {
    fn from_transaction(e: StoreError) -> Self {
        match e {
            StoreError::ConditionFailed {
                index: Some(REPORT_WRITE),
            } => Self::ReportAlreadyCounted,
            StoreError::ConditionFailed { .. } | StoreError::Conflict => Self::BudgetChanged,
            e => Self::Store(e),
        }
    }
}

/// A value with the version it was read at (`None` when absent).
pub type Versioned<T> = (T, Option<u64>);

fn expiry(now_ms: u64) -> Option<u64> {
    Some(now_ms / 1_000 + RETENTION_SECONDS)
}

impl BudgetRepo {
    /// A repository over `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            configs: TenantConfig::new(table.clone(), "budgets"),
            table,
        }
    }

    fn budget_key(t: &TenantId, id: &str) -> Key {
        Key::new(partition(t, "budget", id), "budget")
    }

    fn report_key(t: &TenantId, id: &str, report_id: &str) -> Key {
        Key::new(partition(t, "budget", id), format!("report#{report_id}"))
    }

    fn usage_key(t: &TenantId, c: Complexity) -> Key {
        Key::new(partition(t, "budget-usage", c.as_str()), "history")
    }

    async fn read<T: DeserializeOwned>(&self, key: &Key) -> Result<Option<(T, u64)>, StoreError> {
        self.table.get(key).await?.map(Item::decode).transpose()
    }

    /// The configuration documents, for the config routes (they share the cache).
    pub(crate) fn configs(&self) -> TenantConfig<BudgetConfig> {
        self.configs.clone()
    }

    /// The tenant's configuration, or the defaults.
    pub async fn config(&self, t: &TenantId) -> Result<BudgetConfig, StoreError> {
        self.configs.get(t).await
    }

    /// The adaptive history of a tier.
    pub async fn usage(
        &self,
        t: &TenantId,
        c: Complexity,
    ) -> Result<Versioned<UsageHistory>, StoreError> {
        Ok(match self.read(&Self::usage_key(t, c)).await? {
            Some((h, v)) => (h, Some(v)),
            None => (UsageHistory::default(), None),
        })
    }

    /// A budget with its version.
    pub async fn budget(
        &self,
        t: &TenantId,
        id: &str,
    ) -> Result<Option<(Budget, u64)>, StoreError> {
        self.read(&Self::budget_key(t, id)).await
    }

    /// Stores a new budget.
    pub async fn create(&self, t: &TenantId, budget: &Budget) -> Result<(), StoreError> {
        let expires_at = expiry(budget.updated_at_ms);
        self.table
            .transact(vec![
                Write::Put(Put {
                    key: Self::budget_key(t, &budget.budget_id),
                    doc: encode(budget)?,
                    expires_at,
                    condition: Condition::Absent,
                }),
                // The entry expires with the budget as created; one kept alive by later
                // reports outlives it and is then only reachable by id.
                Write::Put(listing::entry(
                    Self::listing_pk(t),
                    budget.created_at_ms,
                    &budget.budget_id,
                    expires_at,
                )),
            ])
            .await
    }

    fn listing_pk(t: &TenantId) -> String {
        partition(t, "budgets", "all")
    }

    /// A page of the tenant's budgets, newest first, and the next page's cursor.
    pub async fn list(
        &self,
        t: &TenantId,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<Budget>, Option<String>), StoreError> {
        let (ids, next) =
            listing::newest_first(self.table.as_ref(), Self::listing_pk(t), limit, cursor).await?;
        let keys: Vec<Key> = ids.iter().map(|id| Self::budget_key(t, id)).collect();
        let budgets = self
            .table
            .get_many(&keys)
            .await?
            .into_iter()
            .flatten()
            .map(|item| item.decode().map(|(b, _)| b))
            .collect::<Result<_, _>>()?;
        Ok((budgets, next))
    }

    /// A report already applied to the budget, if any.
    pub async fn report(
        &self,
        t: &TenantId,
        id: &str,
        report_id: &str,
    ) -> Result<Option<StoredReport>, StoreError> {
        Ok(self
            .read(&Self::report_key(t, id, report_id))
            .await?
            .map(|(r, _)| r))
    }

    /// Saves the budget (if still at `version`) and the report (if not yet recorded), atomically.
    ///
    /// # Errors
    /// [`SaveError::BudgetChanged`] when another write won the budget,
    /// [`SaveError::ReportAlreadyCounted`] when the report id is recorded.
    pub async fn apply_report(
        &self,
        t: &TenantId,
        budget: &Budget,
        version: u64,
        report_id: &str,
        report: &StoredReport,
    ) -> Result<(), SaveError> {
        let expires_at = expiry(budget.updated_at_ms);
        let writes = vec![
            Write::Put(Put {
                key: Self::budget_key(t, &budget.budget_id),
                doc: encode(budget)?,
                expires_at,
                condition: Condition::Version(version),
            }),
            Write::Put(Put {
                key: Self::report_key(t, &budget.budget_id, report_id),
                doc: encode(report)?,
                expires_at,
                condition: Condition::Absent,
            }),
        ];
        self.table
            .transact(writes)
            .await
            .map_err(SaveError::from_transaction)
    }

    /// Saves a completed budget (if still at `version`) and, for a success, the tier's
    /// updated usage history (if still at its version), atomically.
    pub async fn complete(
        &self,
        t: &TenantId,
        budget: &Budget,
        version: u64,
        usage: Option<Versioned<UsageHistory>>,
    ) -> Result<(), SaveError> {
        let mut writes = vec![Write::Put(Put {
            key: Self::budget_key(t, &budget.budget_id),
            doc: encode(budget)?,
            expires_at: expiry(budget.updated_at_ms),
            condition: Condition::Version(version),
        })];
        if let Some((history, v)) = usage {
            writes.push(Write::Put(Put {
                key: Self::usage_key(t, budget.complexity()),
                doc: encode(&history)?,
                expires_at: None,
                condition: Condition::at(v),
            }));
        }
        self.table
            .transact(writes)
            .await
            .map_err(SaveError::from_transaction)
    }
}
