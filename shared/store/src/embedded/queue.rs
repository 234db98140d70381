//! [`Queue`] on SQLite: visibility timeouts, receive counts and a dead-letter table.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use rusqlite::params;
use tokio::sync::Notify;

use super::db::{Database, exec, now_ms_i64, sql};
use crate::{
    StoreError,
    ports::{DeadLetter, Message, Queue},
    validate::check_bodies,
};

/// A named queue inside the embedded database.
#[derive(Clone)]
pub struct SqliteQueue {
    db: Database,
    name: String,
    max_receives: u32,
    arrivals: Arc<Notify>,
}

/// Makes every message of every queue in `db` that was received but not acknowledged
/// visible again, and voids its receipt; returns how many. For the one process that consumes
/// the embedded queues, at start: deliveries a crash left in flight are redelivered at once
/// instead of after their visibility timeout (still at least once: the consumers are
/// idempotent).
///
/// # Errors
/// When SQLite fails.
pub async fn redeliver_in_flight(db: &Database) -> Result<usize, StoreError> {
    let now = now_ms_i64();
    db.write(move |conn| {
        exec(
            conn,
            "UPDATE queue_messages SET visible_at_ms = ?1, receipt = NULL
             WHERE receipt IS NOT NULL AND visible_at_ms > ?1",
            params![now],
        )
        .map_err(sql("redelivering in-flight messages"))
    })
    .await
}

impl SqliteQueue {
    /// The queue `name`; messages received `max_receives` times move to its dead-letter table.
    pub fn new(db: Database, name: &str, max_receives: u32) -> Self {
        Self {
            db,
            name: name.to_owned(),
            max_receives: max_receives.max(1),
            arrivals: Arc::new(Notify::new()),
        }
    }

    async fn receive_now(
        &self,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<Message>, StoreError> {
        let queue = self.name.clone();
        let max_receives = self.max_receives;
        self.db
            .write(move |conn| {
                let now = now_ms_i64();
                let due: Vec<(i64, String, String, u32)> = {
                    let mut stmt = conn
                        .prepare_cached(
                            "SELECT seq, id, body, receive_count FROM queue_messages
                             WHERE queue = ?1 AND visible_at_ms <= ?2 ORDER BY seq LIMIT ?3",
                        )
                        .map_err(sql("preparing a receive"))?;
                    stmt.query_map(params![queue, now, max as i64], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                    })
                    .map_err(sql("receiving"))?
                    .collect::<Result<_, _>>()
                    .map_err(sql("reading received rows"))?
                };
                let mut out = Vec::with_capacity(due.len());
                for (seq, id, body, count) in due {
                    if count >= max_receives {
                        let reason = format!("max receives exceeded ({max_receives})");
                        exec(
                            conn,
                            "INSERT INTO dead_letters
                                (queue, id, body, reason, receive_count, dead_at_ms)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                            params![queue, id, body, reason, count, now],
                        )
                        .map_err(sql("redriving to the dead-letter queue"))?;
                        exec(
                            conn,
                            "DELETE FROM queue_messages WHERE seq = ?1",
                            params![seq],
                        )
                        .map_err(sql("redriving to the dead-letter queue"))?;
                        continue;
                    }
                    let receipt = uuid::Uuid::new_v4().to_string();
                    exec(
                        conn,
                        "UPDATE queue_messages SET receive_count = receive_count + 1,
                            visible_at_ms = ?1, receipt = ?2 WHERE seq = ?3",
                        params![now + visibility.as_millis() as i64, receipt, seq],
                    )
                    .map_err(sql("hiding a received message"))?;
                    out.push(Message {
                        id,
                        receipt,
                        body,
                        receive_count: count + 1,
                    });
                }
                Ok(out)
            })
            .await
    }
}

#[async_trait]
impl Queue for SqliteQueue {
    async fn send_batch(&self, bodies: &[String]) -> Result<Vec<String>, StoreError> {
        check_bodies(bodies)?;
        let queue = self.name.clone();
        let bodies = bodies.to_vec();
        let ids = self
            .db
            .write(move |conn| {
                let now = now_ms_i64();
                let mut ids = Vec::with_capacity(bodies.len());
                for body in &bodies {
                    let id = uuid::Uuid::now_v7().to_string();
                    exec(
                        conn,
                        "INSERT INTO queue_messages (queue, id, body, visible_at_ms)
                         VALUES (?1, ?2, ?3, ?4)",
                        params![queue, id, body, now],
                    )
                    .map_err(sql("sending"))?;
                    ids.push(id);
                }
                Ok(ids)
            })
            .await?;
        self.arrivals.notify_waiters();
        Ok(ids)
    }

    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
        wait: Duration,
    ) -> Result<Vec<Message>, StoreError> {
        let max = max.clamp(1, 10);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.arrivals.notified();
            let got = self.receive_now(max, visibility).await?;
            let now = tokio::time::Instant::now();
            if !got.is_empty() || now >= deadline {
                return Ok(got);
            }
            // Woken by a send in this process, or by polling for visibility timeouts
            // that ran out and for senders in other processes.
            let nap = (deadline - now).min(Duration::from_millis(50));
            let _ = tokio::time::timeout(nap, notified).await;
        }
    }

    async fn delete(&self, receipt: &str) -> Result<(), StoreError> {
        let receipt = receipt.to_owned();
        self.db
            .write(move |c| {
                exec(
                    c,
                    "DELETE FROM queue_messages WHERE receipt = ?1",
                    params![receipt],
                )
                .map_err(sql("deleting a message"))
                .map(drop)
            })
            .await
    }

    async fn dead_letter(&self, message: &Message, reason: &str) -> Result<(), StoreError> {
        let (queue, m, reason) = (self.name.clone(), message.clone(), reason.to_owned());
        self.db
            .write(move |conn| {
                // Only the current delivery may park the message; a stale receipt means
                // another consumer holds it now.
                let removed = exec(
                    conn,
                    "DELETE FROM queue_messages WHERE id = ?1 AND receipt = ?2",
                    params![m.id, m.receipt],
                )
                .map_err(sql("dead-lettering"))?;
                if removed == 1 {
                    let now = now_ms_i64();
                    exec(
                        conn,
                        "INSERT INTO dead_letters
                            (queue, id, body, reason, receive_count, dead_at_ms)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![queue, m.id, m.body, reason, m.receive_count, now],
                    )
                    .map_err(sql("dead-lettering"))?;
                }
                Ok(())
            })
            .await
    }

    async fn dead_letters(&self, max: usize) -> Result<Vec<DeadLetter>, StoreError> {
        let queue = self.name.clone();
        self.db
            .read(move |c| {
                let mut stmt = c
                    .prepare_cached(
                        "SELECT id, body, reason FROM dead_letters WHERE queue = ?1 ORDER BY seq LIMIT ?2",
                    )
                    .map_err(sql("reading dead letters"))?;
                stmt.query_map(params![queue, max as i64], |r| {
                    Ok(DeadLetter {
                        id: r.get(0)?,
                        body: r.get(1)?,
                        reason: r.get(2)?,
                    })
                })
                .map_err(sql("reading dead letters"))?
                .collect::<Result<_, _>>()
                .map_err(sql("reading dead letters"))
            })
            .await
    }
}
