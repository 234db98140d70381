//! Tenant API keys kept in the table, for callers that send a static bearer key where no JWT
//! authorizer stands in front (the gateway's function URL on AWS: agent SDKs send their
//! `api_key` as `Authorization: Bearer …`). An operator creates, lists and revokes them
//! (`agentrl keys`); a key is shown once, at creation, and only its SHA-256 is stored (the key
//! is 32 random bytes, so a fast hash is enough: nothing can be guessed from it).
//!
//! Layout: `#system#api-key` / `{sha256 hex}` → the tenant and key id (what a request looks
//! up; a key starting with `#` cannot be a tenant's); `{tenant}#api-keys#all` / `{key id}` →
//! the key's name, creation time and first characters (what an operator lists). Both are
//! written and deleted together.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentrl_core::TenantId;
use agentrl_store::{
    StoreError,
    clock::now_ms,
    keys::partition,
    ports::{Condition, Item, Key, Put, Query, Table, Write, encode},
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What every key starts with, so a leaked one is recognisable (secret scanners, logs).
pub const KEY_PREFIX: &str = "arl_";

/// How long a lookup is remembered: a revoked key stops working within this long.
pub const CACHE_FOR: Duration = Duration::from_secs(30);

const LOOKUP_PK: &str = "#system#api-key";

/// A key as an operator sees it (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// Names the key in `list` and `revoke`.
    pub key_id: String,
    /// The tenant the key authenticates as.
    pub tenant: String,
    /// The operator's label.
    pub name: String,
    /// The key's first characters, to tell keys apart.
    pub starts_with: String,
    /// When it was created (epoch ms).
    pub created_at_ms: u64,
    /// SHA-256 of the key, hex.
    pub sha256: String,
}

/// The lookup item.
#[derive(Serialize, Deserialize)]
struct Lookup {
    tenant: String,
    key_id: String,
}

/// Remembered lookups: a key's digest, the tenant it named (or none), when it was read.
type Lookups = HashMap<[u8; 32], (Option<TenantId>, Instant)>;

/// The tenants' keys in `table`, with a short cache of lookups.
#[derive(Clone)]
pub struct ApiKeys {
    table: Arc<dyn Table>,
    cache: Arc<Mutex<Lookups>>,
}

fn lookup_key(sha256: &str) -> Key {
    Key::new(LOOKUP_PK, sha256)
}

fn record_key(t: &TenantId, key_id: &str) -> Key {
    Key::new(partition(t, "api-keys", "all"), key_id)
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

impl ApiKeys {
    /// The keys in `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            table,
            cache: Arc::default(),
        }
    }

    /// Creates a key for `t`: its record, and the key itself, which is not kept.
    ///
    /// # Errors
    /// The table failed.
    pub async fn create(
        &self,
        t: &TenantId,
        name: &str,
    ) -> Result<(KeyRecord, String), StoreError> {
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        let key = format!("{KEY_PREFIX}{}", hex(&secret));
        let record = KeyRecord {
            key_id: uuid::Uuid::now_v7().to_string(),
            tenant: t.to_string(),
            name: name.to_owned(),
            starts_with: key[..KEY_PREFIX.len() + 6].to_owned(),
            created_at_ms: now_ms(),
            sha256: hex(&Sha256::digest(key.as_bytes())),
        };
        let lookup = Lookup {
            tenant: record.tenant.clone(),
            key_id: record.key_id.clone(),
        };
        self.table
            .transact(vec![
                Write::Put(Put {
                    key: lookup_key(&record.sha256),
                    doc: encode(&lookup)?,
                    expires_at: None,
                    condition: Condition::Absent,
                }),
                Write::Put(Put {
                    key: record_key(t, &record.key_id),
                    doc: encode(&record)?,
                    expires_at: None,
                    condition: Condition::Absent,
                }),
            ])
            .await?;
        Ok((record, key))
    }

    /// The tenant's keys, oldest first.
    ///
    /// # Errors
    /// The table failed.
    pub async fn list(&self, t: &TenantId) -> Result<Vec<KeyRecord>, StoreError> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .table
                .query(&Query {
                    limit: 1_000,
                    cursor,
                    ..Query::partition(partition(t, "api-keys", "all"))
                })
                .await?;
            for item in page.items {
                out.push(Item::decode::<KeyRecord>(item)?.0);
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// Revokes the tenant's key `key_id`: `false` when the tenant has no such key.
    ///
    /// # Errors
    /// The table failed.
    pub async fn revoke(&self, t: &TenantId, key_id: &str) -> Result<bool, StoreError> {
        let Some(item) = self.table.get(&record_key(t, key_id)).await? else {
            return Ok(false);
        };
        let (record, _) = item.decode::<KeyRecord>()?;
        self.table
            .transact(vec![
                Write::Delete {
                    key: lookup_key(&record.sha256),
                    condition: Condition::None,
                },
                Write::Delete {
                    key: record_key(t, key_id),
                    condition: Condition::None,
                },
            ])
            .await?;
        Ok(true)
    }

    /// The tenant `presented` authenticates as, if it is a live key (remembered for
    /// [`CACHE_FOR`], a miss included).
    ///
    /// # Errors
    /// The table failed.
    pub async fn tenant(&self, presented: &str) -> Result<Option<TenantId>, StoreError> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let now = Instant::now();
        if let Some((tenant, at)) = self.cache().get(&digest)
            && now.duration_since(*at) < CACHE_FOR
        {
            return Ok(tenant.clone());
        }
        let tenant = match self.table.get(&lookup_key(&hex(&digest))).await? {
            Some(item) => TenantId::parse(&item.decode::<Lookup>()?.0.tenant).ok(),
            None => None,
        };
        let mut cache = self.cache();
        // Misses are remembered too (a flood of bad keys costs no reads), within a bound.
        if cache.len() >= 10_000 {
            cache.retain(|_, (_, at)| now.duration_since(*at) < CACHE_FOR);
            if cache.len() >= 10_000 {
                cache.clear();
            }
        }
        cache.insert(digest, (tenant.clone(), now));
        Ok(tenant)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Lookups> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
