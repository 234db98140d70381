//! Where federations live in the table: each tenant's opt-in and the index of tenants that
//! opted in (so an operator's round can find them), the operator's federations and their
//! rounds, and each tenant's own part of the rounds it took part in (its audit trail).
//! The per-tenant privacy ledger is `agentrl_store::federation`'s (the privacy route reads it).

use std::sync::Arc;

use agentrl_core::TenantId;
use agentrl_core::federation::FederationOptIn;
use agentrl_store::{
    StoreError,
    federation::OPT_IN,
    keys::partition,
    ports::{Condition, Item, Key, Put, Query, Table, Write, encode},
    tenant_config::TenantConfig,
};
use serde::{Serialize, de::DeserializeOwned};

use super::{Federation, RoundRecord, TenantRound};
use crate::repo::decode_page;

/// The index of tenants that opted in: one item per tenant, its sort key the tenant id.
const MEMBERS: &str = "#system#federation#members";
/// The operator's federations, one item per federation id.
const FEDERATIONS: &str = "#system#federation#all";

fn rounds_pk(federation_id: &str) -> String {
    format!("#system#federation#rounds#{federation_id}")
}

fn tenant_rounds_pk(t: &TenantId) -> String {
    partition(t, "federation", "rounds")
}

/// The federation tables.
#[derive(Clone)]
pub struct FederationRepo {
    table: Arc<dyn Table>,
    opt_in: TenantConfig<FederationOptIn>,
}

impl FederationRepo {
    /// A repository over `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            opt_in: TenantConfig::new(table.clone(), OPT_IN),
            table,
        }
    }

    /// The tenant's opt-in (not taking part when it never set one).
    ///
    /// # Errors
    /// The table fails.
    pub async fn opt_in(&self, t: &TenantId) -> Result<FederationOptIn, StoreError> {
        self.opt_in.get(t).await
    }

    /// Replaces the tenant's opt-in. The index entry is written first: a round re-reads the
    /// opt-in of every indexed tenant, so an entry without an enabled opt-in is harmless,
    /// while an opt-in without its entry would be silently left out.
    ///
    /// # Errors
    /// The table fails.
    pub async fn set_opt_in(&self, t: &TenantId, o: &FederationOptIn) -> Result<(), StoreError> {
        let key = Key::new(MEMBERS, t.as_str());
        if o.enabled {
            self.put(
                key,
                &serde_json::json!({ "tenant": t.as_str() }),
                Condition::None,
            )
            .await?;
            self.opt_in.put(t, o).await
        } else {
            self.opt_in.put(t, o).await?;
            self.table.delete(&key, Condition::None).await
        }
    }

    /// Every tenant that opted in, in id order.
    ///
    /// # Errors
    /// The table fails.
    pub async fn members(&self) -> Result<Vec<TenantId>, StoreError> {
        let mut out = Vec::new();
        let mut query = Query::partition(MEMBERS);
        loop {
            let page = self.table.query(&query).await?;
            out.extend(
                page.items
                    .iter()
                    .filter_map(|item| TenantId::parse(&item.key.sk).ok()),
            );
            match page.next {
                Some(next) => query.cursor = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// Creates a federation; `false` when one has its id.
    ///
    /// # Errors
    /// The table fails.
    pub async fn create(&self, f: &Federation) -> Result<bool, StoreError> {
        match self
            .put(
                Key::new(FEDERATIONS, &f.federation_id),
                f,
                Condition::Absent,
            )
            .await
        {
            Ok(()) => Ok(true),
            Err(e) if e.is_condition_failed() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// A federation and the version it was read at.
    ///
    /// # Errors
    /// The table fails or holds a record that no longer decodes.
    pub async fn federation(&self, id: &str) -> Result<Option<(Federation, u64)>, StoreError> {
        self.get(Key::new(FEDERATIONS, id)).await
    }

    /// Records a finished round and moves the federation to it in one transaction, only over
    /// the version read (a second operator running the same round concurrently loses).
    ///
    /// # Errors
    /// The table fails; a condition failure when the federation changed.
    pub async fn finish_round(
        &self,
        f: &Federation,
        at: u64,
        round: &RoundRecord,
    ) -> Result<(), StoreError> {
        let put = |key, doc, condition| {
            Write::Put(Put {
                key,
                doc,
                expires_at: None,
                condition,
            })
        };
        self.table
            .transact(vec![
                put(
                    Key::new(rounds_pk(&f.federation_id), format!("{:010}", round.round)),
                    encode(round)?,
                    Condition::Absent,
                ),
                put(
                    Key::new(FEDERATIONS, &f.federation_id),
                    encode(f)?,
                    Condition::Version(at),
                ),
            ])
            .await
    }

    /// The federation's rounds, oldest first.
    ///
    /// # Errors
    /// The table fails.
    pub async fn rounds(&self, federation_id: &str) -> Result<Vec<RoundRecord>, StoreError> {
        let mut out = Vec::new();
        let mut query = Query {
            limit: 1000,
            ..Query::partition(rounds_pk(federation_id))
        };
        loop {
            let (rounds, next) = decode_page(self.table.query(&query).await?)?;
            out.extend(rounds);
            match next {
                Some(next) => query.cursor = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// Writes the tenant's own part of a round (idempotent: the same round, the same key).
    ///
    /// # Errors
    /// The table fails.
    pub async fn record_part(&self, t: &TenantId, part: &TenantRound) -> Result<(), StoreError> {
        self.put(
            Key::new(tenant_rounds_pk(t), &part.round_id),
            part,
            Condition::None,
        )
        .await
    }

    /// A page of the tenant's parts of rounds, newest round id first.
    ///
    /// # Errors
    /// The table fails, or `cursor` is not one it gave.
    pub async fn parts(
        &self,
        t: &TenantId,
        limit: usize,
        cursor: Option<String>,
    ) -> Result<(Vec<TenantRound>, Option<String>), StoreError> {
        let page = self
            .table
            .query(&Query {
                limit,
                cursor,
                ascending: false,
                ..Query::partition(tenant_rounds_pk(t))
            })
            .await?;
        decode_page(page)
    }

    async fn put<T: Serialize>(
        &self,
        key: Key,
        value: &T,
        condition: Condition,
    ) -> Result<(), StoreError> {
        self.table
            .put(Put {
                key,
                doc: encode(value)?,
                expires_at: None,
                condition,
            })
            .await
            .map(|_| ())
    }

    async fn get<T: DeserializeOwned>(&self, key: Key) -> Result<Option<(T, u64)>, StoreError> {
        self.table.get(&key).await?.map(Item::decode).transpose()
    }
}
