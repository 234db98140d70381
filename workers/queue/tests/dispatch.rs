//! One mixed batch through the queue worker on the embedded stores: the trajectory becomes
//! turn rows, the learning event reaches the agent's projection, the poison message is
//! dead-lettered with its reason, and nothing is left to retry.

use std::{sync::Arc, time::Duration};

use agentrl_core::{TenantId, privacy::Pseudonymizer};
use agentrl_http::sqs::{DrainOptions, drain};
use agentrl_ingest::Envelope;
use agentrl_learning::EventEnvelope;
use agentrl_queue_worker::QueueWorker;
use agentrl_store::Stores;
use serde_json::json;

/// 2026-11-22T12:00:00Z.
const NOON: i64 = 1_795_348_800_000;

#[tokio::test]
async fn a_mixed_batch_reaches_both_workers() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let trajectory = serde_json::to_string(&Envelope {
        tenant: "tenant-a".into(),
        received_at_ms: NOON,
        trajectory: serde_json::from_value(json!({
            "trajectory_id": "t-1", "agent_id": "coder-7", "conversation_id": "c-1",
            "turns": [
                {"role": "user", "content": "2 + 2?"},
                {"role": "assistant", "content": "4", "response_token_ids": [7],
                 "loss_mask": [1], "behavior_logprobs": [-0.1]}
            ],
            "final_outcome": {"success": true, "reward": 1.0}
        }))
        .unwrap(),
    })
    .unwrap();
    let event = serde_json::to_string(&EventEnvelope {
        tenant: "tenant-a".into(),
        received_at_ms: NOON,
        event: serde_json::from_value(json!({
            "event_id": "f-1", "type": "feedback.created", "agent_id": "coder-7",
            "user_id": "alice", "occurred_at_ms": NOON, "value": 0.8
        }))
        .unwrap(),
    })
    .unwrap();
    let bodies = [trajectory, event, "not json".to_owned()];
    stores.queue.send_batch(&bodies).await.unwrap();

    let worker = QueueWorker::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
        agentrl_learning::Outlets::of(&stores),
        Arc::new(Pseudonymizer::new(b"a test secret of enough bytes").unwrap()),
    );
    let options = DrainOptions {
        max_messages: 10,
        visibility: Duration::from_secs(30),
        wait: Duration::from_millis(200),
    };
    assert_eq!(
        drain(&worker, stores.queue.as_ref(), options)
            .await
            .unwrap(),
        3
    );

    let objects = stores.objects.list("trajectories/").await.unwrap();
    assert_eq!(objects.len(), 1, "one Parquet object for the trajectory");
    let tenant = TenantId::parse("tenant-a").unwrap();
    let policy =
        agentrl_learning::policy(stores.table.clone(), agentrl_learning::Outlets::of(&stores));
    assert!(
        policy.update(&tenant, "coder-7").await.unwrap().is_some(),
        "the feedback event gave the agent a learning state"
    );
    let dead = stores.queue.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert!(
        dead[0].reason.starts_with("not a trajectory message"),
        "{}",
        dead[0].reason
    );
    let left = stores
        .queue
        .receive(10, Duration::from_secs(1), Duration::from_millis(100))
        .await
        .unwrap();
    assert!(left.is_empty(), "every message acknowledged: {left:?}");
}
