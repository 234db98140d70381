//! The SQLite database file shared by the embedded table and queue.
//!
//! One connection behind a mutex: SQLite has a single writer anyway, and serialising
//! in-process keeps every conditional write a plain `BEGIN IMMEDIATE` transaction with no
//! busy retries. Blocking calls run on tokio's blocking pool.

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context;
use rusqlite::Connection;

use crate::StoreError;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL,
    expires_at INTEGER,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queue_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    id TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    visible_at_ms INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt TEXT
);
CREATE INDEX IF NOT EXISTS queue_visible ON queue_messages (queue, visible_at_ms, seq);
CREATE UNIQUE INDEX IF NOT EXISTS queue_receipt ON queue_messages (receipt);
CREATE TABLE IF NOT EXISTS dead_letters (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    reason TEXT NOT NULL,
    receive_count INTEGER NOT NULL,
    dead_at_ms INTEGER NOT NULL
);
";

/// A handle on the embedded database; cheap to clone.
#[derive(Clone)]
pub struct Database {
    conn: Arc<Mutex<Connection>>,
}

impl Database {
    /// Opens (creating if needed) the database at `path`.
    ///
    /// WAL with `synchronous = FULL`: a write acknowledged to a client is on disk, so it
    /// survives a crash of the process or of the machine.
    ///
    /// # Errors
    /// When the file cannot be opened or the schema cannot be applied.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(SCHEMA).context("applying the schema")?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` with the connection on the blocking pool.
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            // A panic while holding the lock cannot leave a half-applied write: every
            // write runs inside a transaction that rolls back when dropped.
            let mut guard = conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut guard)
        })
        .await
        .context("the storage task panicked")?
    }
}

/// Wraps a SQLite error with what was being done.
pub(crate) fn sql(what: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |e| StoreError::Backend(anyhow::Error::new(e).context(what))
}

/// Now, in epoch milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
