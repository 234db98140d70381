//! The SQLite database file shared by the embedded table and queue.
//!
//! Writes go to one writer thread that **group-commits**: it takes every write waiting in its
//! queue, runs each in its own savepoint inside one `BEGIN IMMEDIATE` transaction, commits once
//! (one fsync with `synchronous = FULL`) and only then answers all of them. A write is thus
//! acknowledged only once it is durable, yet concurrent writers share the cost of the fsync.
//! A write that fails (a false condition) rolls back to its savepoint without touching the
//! others. Reads run on a small pool of read-only connections, concurrently with the writer
//! (WAL), and see every write that was acknowledged before they started.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
    time::Duration,
};

use anyhow::Context;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

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

/// Read-only connections; more than the cores, so a slow read does not queue the others.
const READERS: usize = 4;
/// Most writes folded into one commit.
const MAX_BATCH: usize = 512;

/// A write waiting for the writer thread.
trait WriteJob: Send {
    /// Runs inside the job's savepoint; true when it succeeded (the savepoint is kept).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answers the caller once the batch's commit is known.
    fn deliver(self: Box<Self>, commit: Result<(), String>);
}

struct Job<T, F> {
    f: Option<F>,
    result: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> WriteJob for Job<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let Some(f) = self.f.take() else { return false };
        // A panicking job must not take the writer thread (and every later write) down.
        let result = catch_unwind(AssertUnwindSafe(|| f(conn))).unwrap_or_else(|_| {
            Err(StoreError::Backend(anyhow::anyhow!(
                "a storage write panicked"
            )))
        });
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn deliver(self: Box<Self>, commit: Result<(), String>) {
        let result = match (commit, self.result) {
            (Ok(()), Some(r)) => r,
            // A failed job's answer does not depend on the commit.
            (Err(_), Some(Err(e))) => Err(e),
            (Err(e), _) => Err(StoreError::Backend(anyhow::anyhow!("commit failed: {e}"))),
            (Ok(()), None) => Err(StoreError::Backend(anyhow::anyhow!("write never ran"))),
        };
        let _ = self.reply.send(result);
    }
}

/// A handle on the embedded database; cheap to clone.
#[derive(Clone)]
pub struct Database {
    writer: mpsc::Sender<Box<dyn WriteJob>>,
    readers: Arc<Vec<Mutex<Connection>>>,
    next_reader: Arc<AtomicUsize>,
}

fn tune(conn: &Connection) -> anyhow::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

fn configure(conn: &Connection) -> anyhow::Result<()> {
    tune(conn)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(())
}

impl Database {
    /// Opens (creating if needed) the database at `path` and starts its writer thread.
    ///
    /// WAL with `synchronous = FULL`: a write acknowledged to a caller is on disk, so it
    /// survives a crash of the process or of the machine.
    ///
    /// # Errors
    /// When the file cannot be opened or the schema cannot be applied.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        configure(&conn)?;
        conn.execute_batch(SCHEMA).context("applying the schema")?;
        let readers = (0..READERS)
            .map(|_| {
                let r = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                tune(&r)?;
                Ok(Mutex::new(r))
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .context("opening read connections")?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("agentrl-sqlite-writer".into())
            .spawn(move || write_loop(conn, rx))
            .context("starting the writer thread")?;
        Ok(Self {
            writer: tx,
            readers: Arc::new(readers),
            next_reader: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Runs `f` in its own savepoint of the next group commit; answers after the commit.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Job {
            f: Some(f),
            result: None,
            reply,
        });
        self.writer
            .send(job)
            .map_err(|_| StoreError::Backend(anyhow::anyhow!("the SQLite writer has stopped")))?;
        answer.await.map_err(|_| {
            StoreError::Backend(anyhow::anyhow!("the SQLite writer dropped a write"))
        })?
    }

    /// Runs `f` on a free read-only connection.
    ///
    /// Inline on the calling task rather than on the blocking pool: the reads are point
    /// lookups and short range scans (tens of microseconds), cheaper than a thread hand-off.
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        let n = self.readers.len();
        let free = (0..n).find_map(|k| self.readers[(start + k) % n].try_lock().ok());
        // Reads hold no transaction across calls, so a poisoned lock guards no broken state.
        let conn = match free {
            Some(conn) => conn,
            None => self.readers[start % n]
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        };
        f(&conn)
    }
}

fn write_loop(conn: Connection, jobs: mpsc::Receiver<Box<dyn WriteJob>>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let commit = run_batch(&conn, &mut batch);
        for job in batch {
            job.deliver(commit.clone());
        }
    }
}

fn run_batch(conn: &Connection, batch: &mut [Box<dyn WriteJob>]) -> Result<(), String> {
    let sql = |s: &str| exec(conn, s, []).map(drop);
    sql("BEGIN IMMEDIATE").map_err(|e| e.to_string())?;
    for job in batch.iter_mut() {
        let step = sql("SAVEPOINT job").and_then(|()| {
            if job.run(conn) {
                sql("RELEASE job")
            } else {
                sql("ROLLBACK TO job").and_then(|()| sql("RELEASE job"))
            }
        });
        if let Err(e) = step {
            let _ = sql("ROLLBACK");
            return Err(e.to_string());
        }
    }
    sql("COMMIT").map_err(|e| {
        let _ = sql("ROLLBACK");
        e.to_string()
    })
}

/// Executes `sql` through the statement cache (parsing SQL dominated the profile otherwise).
pub(crate) fn exec(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

/// Reads one row of `sql` through the statement cache.
pub(crate) fn query_row<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, f)
}

/// Wraps a SQLite error with what was being done.
pub(crate) fn sql(what: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |e| StoreError::Backend(anyhow::Error::new(e).context(what))
}

pub(crate) use crate::clock::{now_ms, now_ms_i64};

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::{
        embedded::SqliteTable,
        ports::{Condition, Key, Put, Table},
    };

    /// Many writes land in one group commit; a failed condition rolls back only its own write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_failed_write_does_not_spoil_its_batch() {
        let dir = tempfile::tempdir().unwrap();
        let table: Arc<dyn Table> = Arc::new(SqliteTable::new(
            Database::open(&dir.path().join("db")).unwrap(),
        ));
        let put = |sk: String| Put {
            key: Key::new("p", sk),
            doc: json!({}),
            expires_at: None,
            condition: Condition::Absent,
        };
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let table = table.clone();
                // Even tasks race for one key; odd tasks write keys of their own.
                let sk = if i % 2 == 0 {
                    "contended".to_owned()
                } else {
                    format!("own-{i}")
                };
                tokio::spawn(async move { table.put(put(sk)).await })
            })
            .collect();
        let mut won = 0;
        for (i, t) in tasks.into_iter().enumerate() {
            match t.await.unwrap() {
                Ok(_) if i % 2 == 0 => won += 1,
                Ok(_) => {}
                Err(e) => assert!(i % 2 == 0 && e.is_condition_failed(), "task {i}: {e}"),
            }
        }
        assert_eq!(won, 1);
        for i in (1..200).step_by(2) {
            assert!(
                table
                    .get(&Key::new("p", format!("own-{i}")))
                    .await
                    .unwrap()
                    .is_some()
            );
        }
    }
}
