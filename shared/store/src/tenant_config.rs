//! A per-tenant configuration document with a short in-memory cache.

use std::{
    collections::HashMap,
    marker::PhantomData,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use agentrl_core::TenantId;
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Put, Table, encode},
};

/// How long a tenant's configuration is served from memory. A change made through this
/// process is seen at once; other processes (Lambda instances) see it within this time,
/// as with Powertools' parameter caching.
pub const CONFIG_CACHE_TTL: Duration = Duration::from_secs(1);

/// One kind of configuration (`name`), one document per tenant at `tenant#config#name`;
/// tenants without one get `T::default()`.
pub struct TenantConfig<T> {
    table: Arc<dyn Table>,
    name: &'static str,
    cache: Arc<Mutex<HashMap<TenantId, (Instant, T)>>>,
    _doc: PhantomData<fn() -> T>,
}

impl<T> Clone for TenantConfig<T> {
    fn clone(&self) -> Self {
        Self {
            table: self.table.clone(),
            name: self.name,
            cache: self.cache.clone(),
            _doc: PhantomData,
        }
    }
}

impl<T: Clone + Default + Serialize + DeserializeOwned> TenantConfig<T> {
    /// The `name` configuration documents of `table`.
    pub fn new(table: Arc<dyn Table>, name: &'static str) -> Self {
        Self {
            table,
            name,
            cache: Arc::default(),
            _doc: PhantomData,
        }
    }

    fn key(&self, t: &TenantId) -> Key {
        Key::new(partition(t, "config", self.name), "current")
    }

    fn remember(&self, t: &TenantId, config: &T) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.insert(t.clone(), (Instant::now(), config.clone()));
    }

    /// The tenant's configuration, or the defaults.
    ///
    /// # Errors
    /// When the table fails or holds a document that no longer decodes.
    pub async fn get(&self, t: &TenantId) -> Result<T, StoreError> {
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, config)) = cache
                .get(t)
                .filter(|(at, _)| at.elapsed() < CONFIG_CACHE_TTL)
            {
                return Ok(config.clone());
            }
        }
        let config = match self.table.get(&self.key(t)).await? {
            Some(item) => Item::decode::<T>(item)?.0,
            None => T::default(),
        };
        self.remember(t, &config);
        Ok(config)
    }

    /// Replaces the tenant's configuration.
    ///
    /// # Errors
    /// When the table fails.
    pub async fn put(&self, t: &TenantId, config: &T) -> Result<(), StoreError> {
        self.table
            .put(Put {
                key: self.key(t),
                doc: encode(config)?,
                expires_at: None,
                condition: Condition::None,
            })
            .await?;
        self.remember(t, config);
        Ok(())
    }
}
