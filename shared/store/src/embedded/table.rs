//! [`Table`] on SQLite: conditional writes and transactions as `BEGIN IMMEDIATE` transactions.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::db::{Database, exec, now_ms, query_row, sql};
use crate::{
    StoreError,
    ports::{Condition, Item, Key, Page, Put, Query, SortRange, Table, Write},
    validate::{check_query, check_transaction, encode_cursor},
};

/// The embedded table.
#[derive(Clone)]
pub struct SqliteTable {
    db: Database,
}

impl SqliteTable {
    /// The table inside `db`.
    pub fn new(db: Database) -> Self {
        Self { db }
    }

    /// Physically removes expired items (DynamoDB's TTL sweeper does the same, lazily).
    ///
    /// # Errors
    /// When SQLite fails.
    pub async fn purge_expired(&self) -> Result<usize, StoreError> {
        let now = now_ms() / 1_000;
        self.db
            .write(move |c| {
                exec(
                    c,
                    "DELETE FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                    params![now as i64],
                )
                .map_err(sql("purging expired items"))
            })
            .await
    }
}

fn live_version(conn: &Connection, key: &Key, now_s: u64) -> Result<Option<u64>, StoreError> {
    let row: Option<(i64, Option<i64>)> = query_row(
        conn,
        "SELECT version, expires_at FROM items WHERE pk = ?1 AND sk = ?2",
        params![key.pk, key.sk],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
    .map_err(sql("reading an item"))?;
    Ok(row
        .filter(|(_, exp)| exp.is_none_or(|e| e as u64 > now_s))
        .map(|(v, _)| v as u64))
}

fn stored_version(conn: &Connection, key: &Key) -> Result<u64, StoreError> {
    let v: Option<i64> = query_row(
        conn,
        "SELECT version FROM items WHERE pk = ?1 AND sk = ?2",
        params![key.pk, key.sk],
        |r| r.get(0),
    )
    .optional()
    .map_err(sql("reading an item"))?;
    Ok(v.map_or(0, |v| v as u64))
}

fn holds(condition: Condition, live: Option<u64>) -> bool {
    match condition {
        Condition::None => true,
        Condition::Absent => live.is_none(),
        Condition::Exists => live.is_some(),
        Condition::Version(v) => live == Some(v),
    }
}

/// Applies one write inside the current transaction; returns the new version for puts.
fn apply(
    conn: &Connection,
    write: &Write,
    now_s: u64,
    index: Option<usize>,
) -> Result<u64, StoreError> {
    let (key, condition) = match write {
        Write::Put(p) => (&p.key, p.condition),
        Write::Delete { key, condition } | Write::Check { key, condition } => (key, *condition),
    };
    if !holds(condition, live_version(conn, key, now_s)?) {
        return Err(StoreError::ConditionFailed { index });
    }
    match write {
        Write::Put(p) => {
            let version = stored_version(conn, key)? + 1;
            exec(
                conn,
                "INSERT INTO items (pk, sk, version, doc, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (pk, sk) DO UPDATE SET version = excluded.version,
                    doc = excluded.doc, expires_at = excluded.expires_at",
                params![
                    key.pk,
                    key.sk,
                    version as i64,
                    p.doc.to_string(),
                    p.expires_at.map(|e| e as i64)
                ],
            )
            .map_err(sql("writing an item"))?;
            Ok(version)
        }
        Write::Delete { .. } => {
            exec(
                conn,
                "DELETE FROM items WHERE pk = ?1 AND sk = ?2",
                params![key.pk, key.sk],
            )
            .map_err(sql("deleting an item"))?;
            Ok(0)
        }
        Write::Check { .. } => Ok(0),
    }
}

fn now_s() -> u64 {
    now_ms() / 1_000
}

/// The live item under `key` as of `now` (epoch seconds).
fn read_item(c: &Connection, key: Key, now: i64) -> Result<Option<Item>, StoreError> {
    let row: Option<(i64, String, Option<i64>)> = query_row(
        c,
        "SELECT version, doc, expires_at FROM items
             WHERE pk = ?1 AND sk = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
        params![key.pk, key.sk, now],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .optional()
    .map_err(sql("reading an item"))?;
    row.map(|(version, doc, expires_at)| to_item(key, version, &doc, expires_at))
        .transpose()
}

#[async_trait]
impl Table for SqliteTable {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let key = key.clone();
        let now = now_s() as i64;
        self.db.read(move |c| read_item(c, key, now)).await
    }

    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        let keys = keys.to_vec();
        let now = now_s() as i64;
        self.db
            .read(move |c| {
                // One read transaction for all the keys instead of one per statement; it is
                // ended whatever the reads did, so the connection never keeps a stale snapshot.
                exec(c, "BEGIN", []).map_err(sql("starting a read"))?;
                let items = keys.into_iter().map(|key| read_item(c, key, now)).collect();
                exec(c, "COMMIT", []).map_err(sql("ending a read"))?;
                items
            })
            .await
    }

    async fn put(&self, put: Put) -> Result<u64, StoreError> {
        let now = now_s();
        self.db
            .write(move |c| apply(c, &Write::Put(put), now, None))
            .await
    }

    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        let write = Write::Delete {
            key: key.clone(),
            condition,
        };
        let now = now_s();
        self.db
            .write(move |c| apply(c, &write, now, None).map(drop))
            .await
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        let after = check_query(query)?;
        let query = query.clone();
        let now = now_s() as i64;
        self.db
            .read(move |c| {
                let (lo, hi_excl, hi_incl) = match &query.range {
                    SortRange::All => (String::new(), None, None),
                    SortRange::BeginsWith(p) => (p.clone(), Some(prefix_end(p)), None),
                    SortRange::Between(a, b) => (a.clone(), None, Some(b.clone())),
                };
                let (order, cmp) = if query.ascending {
                    ("ASC", ">")
                } else {
                    ("DESC", "<")
                };
                let sql_text = format!(
                    "SELECT sk, version, doc, expires_at FROM items
                     WHERE pk = ?1 AND sk >= ?2 AND (?3 IS NULL OR sk < ?3)
                       AND (?4 IS NULL OR sk <= ?4) AND (?5 IS NULL OR sk {cmp} ?5)
                       AND (expires_at IS NULL OR expires_at > ?6)
                     ORDER BY sk {order} LIMIT ?7"
                );
                let mut stmt = c
                    .prepare_cached(&sql_text)
                    .map_err(sql("preparing a query"))?;
                let rows = stmt
                    .query_map(
                        params![
                            query.pk,
                            lo,
                            hi_excl,
                            hi_incl,
                            after,
                            now,
                            (query.limit + 1) as i64
                        ],
                        |r| {
                            Ok((
                                r.get::<_, String>(0)?,
                                r.get::<_, i64>(1)?,
                                r.get::<_, String>(2)?,
                                r.get::<_, Option<i64>>(3)?,
                            ))
                        },
                    )
                    .map_err(sql("running a query"))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(sql("reading query rows"))?;
                let mut items = Vec::with_capacity(rows.len());
                for (sk, version, doc, exp) in rows {
                    items.push(to_item(Key::new(query.pk.clone(), sk), version, &doc, exp)?);
                }
                let next = if items.len() > query.limit {
                    items.truncate(query.limit);
                    items.last().map(|i| encode_cursor(&i.key.sk))
                } else {
                    None
                };
                Ok(Page { items, next })
            })
            .await
    }

    async fn transact(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        check_transaction(&writes)?;
        let now = now_s();
        self.db
            .write(move |c| {
                for (i, w) in writes.iter().enumerate() {
                    apply(c, w, now, Some(i))?;
                }
                Ok(())
            })
            .await
    }
}

/// The smallest string greater than every string starting with `prefix`.
fn prefix_end(prefix: &str) -> String {
    format!("{prefix}\u{10FFFF}")
}

fn to_item(key: Key, version: i64, doc: &str, expires_at: Option<i64>) -> Result<Item, StoreError> {
    let doc: Value = serde_json::from_str(doc)
        .map_err(|e| StoreError::Backend(anyhow::Error::new(e).context("corrupt item document")))?;
    Ok(Item {
        key,
        version: version as u64,
        doc,
        expires_at: expires_at.map(|e| e as u64),
    })
}
