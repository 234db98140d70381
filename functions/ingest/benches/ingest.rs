//! Ingest throughput on the embedded store: trajectories enqueued, then drained by the worker
//! (validation, turn rewards, anonymisation, Parquet) until the queue is empty.
//!
//! `cargo bench -p agentrl-ingest --bench ingest -- [TRAJECTORIES]` (default 2,000 of 8 turns).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use agentrl_core::privacy::Pseudonymizer;
use agentrl_http::sqs::{DrainOptions, drain};
use agentrl_ingest::{Envelope, Ingest};
use agentrl_store::Stores;
use serde_json::json;

fn trajectory(i: usize) -> Envelope {
    let turns: Vec<_> = (0..8)
        .map(|t| match t % 2 {
            0 => json!({"role": "user", "content": format!("Step {t} of task {i}: the pager skips the last page when the total is a multiple of the page size; contact ops@example.com")}),
            _ => json!({"role": "assistant", "content": format!("Looked at pager.rs line {}: the loop bound uses `pages - 1`, fixed it and reran the {} tests.", 40 + t, 12 + i % 7),
                        "tool_call": {"name": "run_tests", "arguments": {"path": "tests/pager.rs", "filter": format!("case_{t}")}},
                        "response_token_ids": (0..64).collect::<Vec<u32>>(), "loss_mask": vec![1; 64],
                        "behavior_logprobs": vec![-0.25; 64]}),
        })
        .collect();
    Envelope {
        version: agentrl_core::envelope::ENVELOPE_VERSION,
        tenant: format!("tenant-{}", i % 4),
        received_at_ms: 1_795_348_800_000,
        source: Some(agentrl_core::envelope::Source::Api),
        trajectory: serde_json::from_value(json!({
            "trajectory_id": format!("t-{i}"), "agent_id": format!("agent-{}", i % 10),
            "conversation_id": format!("c-{i}"), "group_id": format!("g-{}", i / 8),
            "turns": turns, "final_outcome": {"success": !i.is_multiple_of(3), "reward": (i % 10) as f64 / 10.0}
        }))
        .unwrap(),
    }
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2_000);
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let bodies: Vec<String> = (0..n)
        .map(|i| serde_json::to_string(&trajectory(i)).unwrap())
        .collect();
    let started = Instant::now();
    for chunk in bodies.chunks(10) {
        stores.queue.send_batch(chunk).await.unwrap();
    }
    let enqueued = started.elapsed();
    let pseudonyms = Arc::new(Pseudonymizer::new(b"a benchmark secret, long enough").unwrap());
    let ingest = Ingest::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
        pseudonyms,
        Arc::new(agentrl_judges::Provider::new(None, None)),
    );
    let options = DrainOptions {
        max_messages: 1_000,
        visibility: Duration::from_secs(300),
        wait: Duration::ZERO,
    };
    let draining = Instant::now();
    let mut done = 0;
    while done < n {
        let got = drain(&ingest, stores.queue.as_ref(), options)
            .await
            .unwrap();
        assert!(got > 0, "the queue ran dry after {done} of {n}");
        done += got;
    }
    let drained = draining.elapsed();
    let turns = (n * 8) as f64;
    let objects = stores.objects.list("trajectories/").await.unwrap();
    let bytes: u64 = objects.iter().map(|o| o.size).sum();
    println!(
        "trajectories: {n} ({turns} turns), {} Parquet objects, {:.1} MB",
        objects.len(),
        bytes as f64 / 1e6
    );
    println!(
        "enqueue: {:.2} s ({:.0} trajectories/s)",
        enqueued.as_secs_f64(),
        n as f64 / enqueued.as_secs_f64()
    );
    println!(
        "worker:  {:.2} s ({:.0} turns/s, {:.0} trajectories/s)",
        drained.as_secs_f64(),
        turns / drained.as_secs_f64(),
        n as f64 / drained.as_secs_f64()
    );
    let total = enqueued + drained;
    println!(
        "end to end: {:.2} s ({:.0} turns/s)",
        total.as_secs_f64(),
        turns / total.as_secs_f64()
    );
}
