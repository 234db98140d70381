//! Trajectories, envelopes and readers shared by the cases.

use std::sync::Arc;

use agentrl_core::privacy::Pseudonymizer;
use agentrl_ingest::Envelope;
use agentrl_queue_worker::QueueWorker;
use agentrl_store::{Stores, ports::Message};
use agentrl_turns::{TurnRow, read_turns};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Embedded stores in a fresh directory (kept alive by the returned guard).
pub fn embedded() -> (Stores, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (Stores::embedded(dir.path()).unwrap(), dir)
}

pub fn pseudonyms() -> Arc<Pseudonymizer> {
    Arc::new(Pseudonymizer::new(b"a test secret of enough bytes").unwrap())
}

pub fn worker(stores: &Stores) -> QueueWorker {
    QueueWorker::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
        agentrl_learning::Outlets::of(stores),
        pseudonyms(),
        Arc::new(agentrl_rewards::Provider::new(None, None)),
    )
}

/// A two-turn trajectory with PII in its text and its tool arguments.
pub fn trajectory(
    id: &str,
    conversation: &str,
    agent: &str,
    group: Option<&str>,
    reward: f64,
) -> Value {
    json!({
        "trajectory_id": id,
        "agent_id": agent,
        "conversation_id": conversation,
        "group_id": group,
        "user_id": "alice@example.com",
        "tools": [{"name": "send_email", "parameters": {"type": "object", "required": ["to"],
                   "properties": {"to": {"type": "string"}}}}],
        "turns": [
            {"role": "user", "content": format!("Mail bob@example.com the report for {conversation}, call +44 20 7946 0958")},
            {"role": "assistant", "content": format!("Sending the {conversation} report (version 1.2.3) now."),
             "tool_call": {"name": "send_email", "arguments": {"to": "bob@example.com"}},
             "response_token_ids": [1, 2, 3], "loss_mask": [1, 1, 1], "behavior_logprobs": [-0.1, -0.2, -0.3]}
        ],
        "final_outcome": {"success": reward > 0.0, "reward": reward}
    })
}

pub fn envelope(tenant: &str, received_at_ms: i64, trajectory: Value) -> String {
    serde_json::to_string(&Envelope {
        version: agentrl_core::envelope::ENVELOPE_VERSION,
        tenant: tenant.to_owned(),
        received_at_ms,
        trajectory: serde_json::from_value(trajectory).unwrap(),
        source: Some(agentrl_core::envelope::Source::Api),
    })
    .unwrap()
}

/// 2026-11-22T12:00:00Z.
pub const NOON: i64 = 1_795_348_800_000;

/// Receives every message currently on the queue (hidden for `visibility` seconds).
pub async fn receive_all(stores: &Stores, expected: usize, visibility: u64) -> Vec<Message> {
    let mut got = Vec::new();
    for _ in 0..50 {
        if got.len() >= expected {
            break;
        }
        got.extend(
            stores
                .queue
                .receive(
                    10,
                    std::time::Duration::from_secs(visibility),
                    std::time::Duration::from_millis(200),
                )
                .await
                .unwrap(),
        );
    }
    assert_eq!(got.len(), expected, "messages on the queue");
    got
}

/// Every turn-table object and its rows.
pub async fn turn_table(stores: &Stores) -> Vec<(String, Vec<TurnRow>)> {
    let mut out = Vec::new();
    for meta in stores.objects.list("trajectories/").await.unwrap() {
        let bytes = stores.objects.get(&meta.path).await.unwrap().unwrap();
        let rows = read_turns(bytes)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        out.push((meta.path, rows));
    }
    out
}
