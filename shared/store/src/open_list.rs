//! Lists of open work (the gateway's sessions, traced conversations) kept in system
//! partitions, `#system#{name}#{shard}` (a key that starts with `#` cannot be a tenant's),
//! spread over [`SHARDS`] partitions for the writes, so a sweep finds what is open without
//! reading every tenant.

use crate::StoreError;
use crate::ports::{Item, Key, Query, Table};

/// How many partitions one list spreads over.
pub const SHARDS: u8 = 16;

/// One list, by name.
#[derive(Debug, Clone, Copy)]
pub struct OpenList(&'static str);

impl OpenList {
    /// The list called `name`.
    #[must_use]
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    /// The key of `entry` in shard `shard` (taken modulo [`SHARDS`]).
    #[must_use]
    pub fn key(&self, shard: u8, entry: impl Into<String>) -> Key {
        Key::new(self.partition(shard), entry)
    }

    fn partition(&self, shard: u8) -> String {
        format!("#system#{}#{}", self.0, shard % SHARDS)
    }

    /// A page of shard `shard`'s entries, and the cursor of the next.
    ///
    /// # Errors
    /// The table failed.
    pub async fn page(
        &self,
        table: &dyn Table,
        shard: u8,
        cursor: Option<String>,
    ) -> Result<(Vec<Item>, Option<String>), StoreError> {
        let page = table
            .query(&Query {
                limit: 1_000,
                cursor,
                ..Query::partition(self.partition(shard))
            })
            .await?;
        Ok((page.items, page.next))
    }
}
