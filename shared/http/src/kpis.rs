//! The KPI ledger: every service adds what it counts (a closed budget, a scored change, an
//! accepted trajectory) to its tenant's counts of the day, and emits the same counts as EMF
//! metrics; `GET /v1/kpis` sums a range of days, `GET /v1/kpis/alarms` reads it day by day.
//!
//! Layout: partition `tenant#kpis#all`, one item per (day, shard) under `sk = YYYY-MM-DD#N`,
//! so a range of days is one query. Eight shards per day spread concurrent writers: each
//! write is a read-modify-write of one shard, conditioned on the version it read.
//!
//! The counts are monitoring figures, written after the event they count succeeded and never
//! failing it: a crash in between loses a count (at most once), a retried request without an
//! `Idempotency-Key` counts again.

use std::{collections::BTreeMap, sync::Arc};

use agentrl_core::{TenantId, calendar::utc_date, kpi::KpiCounts};
use agentrl_store::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Put, Query, SortRange, Table, encode},
    retry::optimistic,
};

use crate::Metrics;

/// Shards per tenant and day.
const SHARDS: u32 = 8;

/// Adds and sums a tenant's KPI counts.
#[derive(Clone)]
pub struct KpiLedger {
    table: Arc<dyn Table>,
    metrics: Metrics,
}

fn pk(t: &TenantId) -> String {
    partition(t, "kpis", "all")
}

impl KpiLedger {
    /// A ledger over `table` that emits no metrics.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            table,
            metrics: Metrics::Off,
        }
    }

    /// The same ledger, also emitting every count it records in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Adds `delta` to `t`'s counts of the UTC day of `at_ms`. Never fails: a store error is
    /// logged (the event it counts has already happened).
    pub async fn record(&self, t: &TenantId, at_ms: u64, delta: &KpiCounts) {
        for (name, value) in delta.fields() {
            if value > 0 {
                self.metrics.count(&format!("kpi_{name}"), value);
            }
        }
        let day = utc_date(i64::try_from(at_ms).unwrap_or(i64::MAX));
        // Spreads concurrent writers of a tenant's day over the shards.
        let shard = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
            % SHARDS;
        let key = Key::new(pk(t), format!("{day}#{shard}"));
        let added = optimistic(|| {
            let key = key.clone();
            async move {
                let (mut counts, version) = match self.table.get(&key).await? {
                    Some(item) => {
                        let (c, v) = item.decode::<KpiCounts>()?;
                        (c, Some(v))
                    }
                    None => (KpiCounts::default(), None),
                };
                counts.add(delta);
                self.table
                    .put(Put {
                        key,
                        doc: encode(&counts)?,
                        expires_at: None,
                        condition: Condition::at(version),
                    })
                    .await
                    .map(drop)
            }
        })
        .await;
        if let Err(e) = added {
            tracing::warn!(tenant = %t, error = %e, "a KPI count was lost");
        }
    }

    /// `t`'s counts from day `from` to day `to` (`YYYY-MM-DD`, both included); nothing when
    /// `to` comes before `from`, as an empty window reads elsewhere.
    ///
    /// # Errors
    /// A failing store.
    pub async fn sum(&self, t: &TenantId, from: &str, to: &str) -> Result<KpiCounts, StoreError> {
        let mut total = KpiCounts::default();
        for counts in self.daily(t, from, to).await?.values() {
            total.add(counts);
        }
        Ok(total)
    }

    /// `t`'s counts of each day from `from` to `to` (both included) that has any, by day
    /// (`YYYY-MM-DD`), from one range query: the shards of a day are added together.
    ///
    /// # Errors
    /// A failing store.
    pub async fn daily(
        &self,
        t: &TenantId,
        from: &str,
        to: &str,
    ) -> Result<BTreeMap<String, KpiCounts>, StoreError> {
        let mut days = BTreeMap::new();
        if from > to {
            // Not asked of the store: DynamoDB refuses a BETWEEN with reversed bounds.
            return Ok(days);
        }
        let mut cursor = None;
        loop {
            let page = self
                .table
                .query(&Query {
                    pk: pk(t),
                    range: SortRange::Between(format!("{from}#"), format!("{to}#~")),
                    limit: 1000,
                    cursor,
                    ascending: true,
                })
                .await?;
            for item in page.items {
                // `sk = YYYY-MM-DD#shard`.
                let day = item.key.sk.split('#').next().unwrap_or_default().to_owned();
                let (counts, _) = Item::decode::<KpiCounts>(item)?;
                days.entry(day)
                    .or_insert_with(KpiCounts::default)
                    .add(&counts);
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(days),
            }
        }
    }
}
