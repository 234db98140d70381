//! Learning-event throughput of the queue worker on the embedded store: batches of 1,000
//! messages (as the SQS trigger hands them over) applied by `Learner::process` — rewards,
//! projections, relationships, reply ledgers and dedup markers, written in transactions —
//! then the same batches redelivered (every event a duplicate).
//!
//! `cargo bench -p agentrl-learning --bench events -- [EVENTS] [AGENTS]` (default 50,000 events
//! over 200 agents and 5,000 users).

use std::time::Instant;

use agentrl_learning::Learner;
use agentrl_store::{Stores, ports::Message};
use serde_json::{Value, json};

const T0: i64 = 1_795_348_800_000;

/// Event `i`: 40% feedback (half of it on a reply), 30% replies, 20% actions, 10% sessions.
fn event(i: usize, agents: usize) -> Value {
    let agent = format!("agent-{}", i % agents);
    let user = format!("user-{}", (i * 7919) % 5_000);
    let at = T0 + i as i64 * 10;
    let id = format!("e-{i}");
    match i % 10 {
        0..=3 => {
            let mut e = json!({"event_id": id, "type": "feedback.created", "agent_id": agent,
                "user_id": user, "occurred_at_ms": at, "value": ((i % 21) as f64 - 10.0) / 10.0,
                "rating": 1 + i % 5});
            if i.is_multiple_of(2) {
                e["source_id"] = format!("msg-{}", i.saturating_sub(10)).into();
            }
            e
        }
        4..=6 => json!({"event_id": id, "type": "ai.message.reply", "agent_id": agent,
            "user_id": user, "occurred_at_ms": at, "message_id": format!("msg-{i}"),
            "traits": {"verbosity": (i % 10) as f64 / 10.0, "formality": 0.5}}),
        7 | 8 => json!({"event_id": id, "type": "ai.action", "agent_id": agent, "user_id": user,
            "occurred_at_ms": at, "action": format!("tool-{}", i % 12), "success": !i.is_multiple_of(3),
            "suggestion_followed": i.is_multiple_of(4)}),
        _ => json!({"event_id": id, "type": "session.ended", "agent_id": agent, "user_id": user,
            "occurred_at_ms": at, "session_id": format!("s-{i}"),
            "duration_seconds": (i % 600) as f64, "message_count": 1 + i % 30}),
    }
}

fn arg(position: usize, default: usize) -> usize {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .nth(position)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = arg(0, 50_000);
    let agents = arg(1, 200);
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let messages: Vec<Message> = (0..n)
        .map(|i| Message {
            id: format!("m-{i}"),
            receipt: format!("r-{i}"),
            body: json!({"tenant": "tenant-a", "received_at_ms": T0, "event": event(i, agents)})
                .to_string(),
            receive_count: 1,
        })
        .collect();
    let learner = Learner::new(
        stores.table.clone(),
        stores.queue.clone(),
        agentrl_learning::Outlets::of(&stores),
    );
    let started = Instant::now();
    for batch in messages.chunks(1_000) {
        let retry = learner.process(batch).await;
        assert!(retry.is_empty(), "{} to retry", retry.len());
    }
    let first = started.elapsed();
    let started = Instant::now();
    for batch in messages.chunks(1_000) {
        assert!(learner.process(batch).await.is_empty());
    }
    let again = started.elapsed();
    println!(
        "events: {n}, agents: {agents}, batch: 1000, cores: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("| pass | seconds | events/s |");
    println!("|---|---|---|");
    println!(
        "| first delivery | {:.2} | {:.0} |",
        first.as_secs_f64(),
        n as f64 / first.as_secs_f64()
    );
    println!(
        "| redelivery (all duplicates) | {:.2} | {:.0} |",
        again.as_secs_f64(),
        n as f64 / again.as_secs_f64()
    );
}
