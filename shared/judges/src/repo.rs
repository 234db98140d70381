//! Where judgments, claims on them and provider usage live in the table.
//!
//! Layout: `tenant#judgment#KEY` (`sk = judgment`) caches a model's judgment until its TTL,
//! where KEY hashes the artifact, the rubric version, the provider and the model; `tenant#judgment-claim#KEY`
//! is held (with a short TTL) by the one worker calling the provider for KEY, so a redelivered
//! or concurrent evaluation waits for that judgment instead of paying for it twice;
//! `tenant#judge-usage#all` holds one item per judgment that reached the provider (`sk =
//! MS#UUID`, MS zero-padded to 20 digits), so a usage report is one range query; `tenant#config#judges` the settings.

use std::{collections::BTreeMap, sync::Arc};

use agentrl_core::{
    TenantId,
    judge::{JudgeConfig, Judgment, Purpose, Usage},
};
use agentrl_store::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Put, Query, SortRange, Table, encode},
    tenant_config::TenantConfig,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How long usage records are kept.
const USAGE_TTL_SECONDS: u64 = 400 * 24 * 3600;

/// One judgment's provider usage, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UsageRecord {
    pub at_ms: u64,
    pub model: String,
    pub kind: String,
    pub calls: u32,
    #[serde(flatten)]
    pub usage: Usage,
    /// At the tenant's prices when it was recorded; `None` for an unpriced model.
    pub cost: Option<f64>,
}

/// Usage of one model over a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct ModelUsage {
    /// Judgments that reached the provider (answered or not).
    pub judgments: u64,
    /// Provider calls (retries and repairs included).
    pub calls: u64,
    /// Prompt tokens the provider reported.
    pub prompt_tokens: u64,
    /// Completion tokens the provider reported.
    pub completion_tokens: u64,
    /// Sum of the priced judgments' costs; null when none was priced.
    pub cost: Option<f64>,
    /// Judgments recorded without a price for the model.
    pub unpriced_judgments: u64,
}

impl ModelUsage {
    fn of(r: &UsageRecord) -> Self {
        Self {
            judgments: 1,
            calls: u64::from(r.calls),
            prompt_tokens: r.usage.prompt_tokens,
            completion_tokens: r.usage.completion_tokens,
            cost: r.cost,
            unpriced_judgments: u64::from(r.cost.is_none()),
        }
    }

    /// Adds `other`'s counts; the cost stays null only while neither side has one.
    pub fn add(&mut self, other: &Self) {
        self.judgments += other.judgments;
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.unpriced_judgments += other.unpriced_judgments;
        self.cost = match (self.cost, other.cost) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

/// Usage over a window, by model and by purpose.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageTotals {
    /// By model.
    pub models: BTreeMap<String, ModelUsage>,
    /// By what the judgments were for ([`Purpose`]'s wire names), found from each record's
    /// rubric name; `unknown` for a rubric this build does not have.
    pub purposes: BTreeMap<String, ModelUsage>,
}

/// Typed access to the judge items of the table.
#[derive(Clone)]
pub(crate) struct JudgeRepo {
    table: Arc<dyn Table>,
    configs: TenantConfig<JudgeConfig>,
}

fn cached_key(t: &TenantId, key: &str) -> Key {
    Key::new(partition(t, "judgment", key), "judgment")
}

fn claim_key(t: &TenantId, key: &str) -> Key {
    Key::new(partition(t, "judgment-claim", key), "claim")
}

fn usage_pk(t: &TenantId) -> String {
    partition(t, "judge-usage", "all")
}

impl JudgeRepo {
    pub(crate) fn new(table: Arc<dyn Table>) -> Self {
        Self {
            configs: TenantConfig::new(table.clone(), "judges"),
            table,
        }
    }

    pub(crate) fn configs(&self) -> TenantConfig<JudgeConfig> {
        self.configs.clone()
    }

    pub(crate) async fn config(&self, t: &TenantId) -> Result<JudgeConfig, StoreError> {
        self.configs.get(t).await
    }

    /// The cached judgment under `key`, if it is live.
    pub(crate) async fn cached(
        &self,
        t: &TenantId,
        key: &str,
    ) -> Result<Option<Judgment>, StoreError> {
        self.table
            .get(&cached_key(t, key))
            .await?
            .map(|i| Item::decode(i).map(|(j, _)| j))
            .transpose()
    }

    /// Caches `judgment` under `key` until `expires_at` (epoch seconds).
    pub(crate) async fn cache(
        &self,
        t: &TenantId,
        key: &str,
        judgment: &Judgment,
        expires_at: u64,
    ) -> Result<(), StoreError> {
        self.table
            .put(Put {
                key: cached_key(t, key),
                doc: encode(judgment)?,
                expires_at: Some(expires_at),
                condition: Condition::None,
            })
            .await
            .map(drop)
    }

    /// Takes the claim on `key` until `expires_at`; false when another worker holds it.
    pub(crate) async fn claim(
        &self,
        t: &TenantId,
        key: &str,
        expires_at: u64,
    ) -> Result<bool, StoreError> {
        let put = Put {
            key: claim_key(t, key),
            doc: serde_json::json!({"claimed": true}),
            expires_at: Some(expires_at),
            condition: Condition::Absent,
        };
        match self.table.put(put).await {
            Ok(_) => Ok(true),
            Err(StoreError::ConditionFailed { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the claim on `key` up.
    pub(crate) async fn release(&self, t: &TenantId, key: &str) -> Result<(), StoreError> {
        self.table.delete(&claim_key(t, key), Condition::None).await
    }

    /// Records one judgment's usage.
    pub(crate) async fn record_usage(
        &self,
        t: &TenantId,
        record: &UsageRecord,
    ) -> Result<(), StoreError> {
        self.table
            .put(Put {
                key: Key::new(
                    usage_pk(t),
                    format!("{:020}#{}", record.at_ms, uuid::Uuid::now_v7()),
                ),
                doc: encode(record)?,
                expires_at: Some(record.at_ms / 1000 + USAGE_TTL_SECONDS),
                condition: Condition::Absent,
            })
            .await
            .map(drop)
    }

    /// Usage by model and by purpose over `[from, to)` (epoch ms).
    pub(crate) async fn usage(
        &self,
        t: &TenantId,
        from: u64,
        to: u64,
    ) -> Result<UsageTotals, StoreError> {
        let mut totals = UsageTotals::default();
        let mut query = Query {
            pk: usage_pk(t),
            // Sort keys are `MS#UUID` with MS zero-padded to u64's 20 digits, so any bound
            // compares as a number: `MS#` sorts before `MS#uuid`, and `TO-1#~` after every
            // uuid of the last included millisecond.
            range: SortRange::Between(
                format!("{from:020}#"),
                format!("{:020}#~", to.saturating_sub(1)),
            ),
            limit: 1000,
            cursor: None,
            ascending: true,
        };
        if from >= to {
            return Ok(totals);
        }
        loop {
            let page = self.table.query(&query).await?;
            for item in page.items {
                let (r, _): (UsageRecord, _) = item.decode()?;
                let usage = ModelUsage::of(&r);
                totals
                    .models
                    .entry(r.model.clone())
                    .or_default()
                    .add(&usage);
                let purpose = Purpose::of_rubric(&r.kind).map_or("unknown", Purpose::as_str);
                totals
                    .purposes
                    .entry(purpose.to_owned())
                    .or_default()
                    .add(&usage);
            }
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => return Ok(totals),
            }
        }
    }
}
