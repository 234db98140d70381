//! A key-value table: items under a partition and sort key, versioned, with TTL.

use async_trait::async_trait;
use serde_json::Value;

use crate::StoreError;

/// The primary key of an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Partition key: always starts with the tenant (see [`crate::keys`]).
    pub pk: String,
    /// Sort key within the partition.
    pub sk: String,
}

impl Key {
    /// A key from its two parts.
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
        }
    }
}

/// A stored item.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Its key.
    pub key: Key,
    /// Incremented by every write; 1 after the first.
    pub version: u64,
    /// The item's document (a JSON object).
    pub doc: Value,
    /// Epoch seconds after which the item is treated as absent, if any.
    pub expires_at: Option<u64>,
}

impl Item {
    /// The document as `T`, with the version it was read at.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the stored document does not have `T`'s shape.
    pub fn decode<T: serde::de::DeserializeOwned>(self) -> Result<(T, u64), StoreError> {
        let value = serde_json::from_value(self.doc).map_err(|e| {
            StoreError::Backend(
                anyhow::Error::new(e)
                    .context(format!("corrupt item {} {}", self.key.pk, self.key.sk)),
            )
        })?;
        Ok((value, self.version))
    }
}

/// `value` as a storable document.
///
/// # Errors
/// [`StoreError::Backend`] when `value` does not serialise to JSON.
pub fn encode<T: serde::Serialize>(value: &T) -> Result<Value, StoreError> {
    serde_json::to_value(value).map_err(|e| StoreError::Backend(e.into()))
}

impl Condition {
    /// `Version(v)` when a version was read, `Absent` when nothing was.
    pub fn at(version: Option<u64>) -> Self {
        version.map_or(Self::Absent, Self::Version)
    }
}

/// When a write may happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Always.
    None,
    /// Only if no live item has the key (an expired one counts as absent).
    Absent,
    /// Only if a live item has the key with exactly this version.
    Version(u64),
    /// Only if a live item has the key, whatever its version.
    Exists,
}

/// A write of a whole item.
#[derive(Debug, Clone, PartialEq)]
pub struct Put {
    /// Where.
    pub key: Key,
    /// The new document (a JSON object).
    pub doc: Value,
    /// Epoch seconds after which it expires, if it does.
    pub expires_at: Option<u64>,
    /// When the write may happen.
    pub condition: Condition,
}

/// One write of a transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Put an item.
    Put(Put),
    /// Delete an item.
    Delete {
        /// Which.
        key: Key,
        /// When.
        condition: Condition,
    },
    /// Write nothing, but require the condition to hold.
    Check {
        /// Which.
        key: Key,
        /// What must hold.
        condition: Condition,
    },
}

/// Which sort keys a query covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortRange {
    /// Every item of the partition.
    All,
    /// Sort keys starting with this prefix.
    BeginsWith(String),
    /// Sort keys between the two bounds, both inclusive.
    Between(String, String),
}

/// A query over one partition, in sort-key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The partition.
    pub pk: String,
    /// The sort-key range.
    pub range: SortRange,
    /// At most this many items per page (1 to 1000).
    pub limit: usize,
    /// Continue after this cursor (from [`Page::next`]).
    pub cursor: Option<String>,
    /// Ascending sort-key order when true.
    pub ascending: bool,
}

impl Query {
    /// The first page of the whole partition, ascending, 100 items a page.
    pub fn partition(pk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            range: SortRange::All,
            limit: 100,
            cursor: None,
            ascending: true,
        }
    }
}

/// One page of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// At most `limit` live items.
    pub items: Vec<Item>,
    /// Present while more items may follow: pass it as the next query's cursor.
    pub next: Option<String>,
}

/// The table port.
///
/// Contract shared by every adapter (checked by the conformance suite):
/// an expired item is invisible to `get` and `query` and counts as absent for conditions;
/// every successful write increments the version by one; `transact` applies all its
/// writes or none.
#[async_trait]
pub trait Table: Send + Sync + 'static {
    /// The live item under `key`, if any.
    ///
    /// # Errors
    /// MUST return [`StoreError::Backend`] only when the backend fails.
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError>;

    /// The live items under `keys`, one entry per key in the same order. Adapters read them in
    /// as few round trips as the backend allows; the result is not a snapshot across keys
    /// (a conditional write is what makes a read-modify-write safe).
    ///
    /// # Errors
    /// MUST return [`StoreError::Backend`] only when the backend fails.
    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        let mut items = Vec::with_capacity(keys.len());
        for key in keys {
            items.push(self.get(key).await?);
        }
        Ok(items)
    }

    /// Writes `put.doc` under `put.key` if `put.condition` holds; returns the new version.
    ///
    /// # Errors
    /// MUST return [`StoreError::ConditionFailed`] (and write nothing) when the condition is false.
    async fn put(&self, put: Put) -> Result<u64, StoreError>;

    /// Deletes the item under `key` if `condition` holds (deleting nothing is not an error).
    ///
    /// # Errors
    /// MUST return [`StoreError::ConditionFailed`] when the condition is false.
    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError>;

    /// One page of a partition, in sort-key order.
    ///
    /// # Errors
    /// MUST return [`StoreError::Invalid`] for a limit outside 1..=1000 or a foreign cursor.
    async fn query(&self, query: &Query) -> Result<Page, StoreError>;

    /// Applies up to 100 writes atomically: all of them, or none.
    ///
    /// # Errors
    /// MUST return [`StoreError::ConditionFailed`] with the index of a failing write when a
    /// condition is false, [`StoreError::Conflict`] when a concurrent transaction interfered,
    /// and [`StoreError::Invalid`] for more than 100 writes or two writes on one key.
    async fn transact(&self, writes: Vec<Write>) -> Result<(), StoreError>;
}
