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

/// One drain of the work queue by the queue worker, as the SQS trigger would hand it a batch;
/// how many messages it took.
async fn drain_once(stores: &Stores) -> usize {
    let worker = QueueWorker::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
        agentrl_learning::Outlets::of(stores),
        Arc::new(Pseudonymizer::new(b"a test secret of enough bytes").unwrap()),
        Arc::new(agentrl_judges::Provider::new(None, None)),
    );
    let options = DrainOptions {
        max_messages: 10,
        visibility: Duration::from_secs(30),
        wait: Duration::from_millis(200),
    };
    drain(&worker, stores.queue.as_ref(), options)
        .await
        .unwrap()
}

/// The trajectory ids in the turn table, in order.
async fn turn_table_ids(stores: &Stores) -> Vec<String> {
    let mut ids = std::collections::BTreeSet::new();
    for meta in stores.objects.list("trajectories/").await.unwrap() {
        let bytes = stores.objects.get(&meta.path).await.unwrap().unwrap();
        for row in agentrl_turns::read_turns(bytes).unwrap() {
            ids.insert(row.unwrap().trajectory_id);
        }
    }
    ids.into_iter().collect()
}

#[tokio::test]
async fn a_mixed_batch_reaches_both_workers() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let trajectory = serde_json::to_string(&Envelope {
        version: agentrl_core::envelope::ENVELOPE_VERSION,
        tenant: "tenant-a".into(),
        received_at_ms: NOON,
        source: None,
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
        version: agentrl_core::envelope::ENVELOPE_VERSION,
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

    assert_eq!(drain_once(&stores).await, 3);

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

/// Envelope versions on the queue: a message without a version (v0, before versions), a v1
/// and a v2 message (a trajectory's naming its source) are taken, by both consumers; a newer
/// version is dead-lettered, naming it.
#[tokio::test]
async fn every_envelope_version_is_read_or_parked_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let trajectory = |id: &str| {
        json!({"trajectory_id": id, "agent_id": "coder-7", "conversation_id": id,
               "turns": [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}],
               "final_outcome": {"success": true, "reward": 1.0}})
    };
    let event = |id: &str| {
        json!({"event_id": id, "type": "feedback.created", "agent_id": "coder-7",
               "user_id": "alice", "occurred_at_ms": NOON, "value": 0.8})
    };
    let mut bodies = Vec::new();
    for (version, suffix) in [
        (None, "v0"),
        (Some(1), "v1"),
        (Some(2), "v2"),
        (Some(3), "v3"),
    ] {
        let mut t = json!({"tenant": "tenant-a", "received_at_ms": NOON, "trajectory": trajectory(&format!("t-{suffix}"))});
        let mut e = json!({"tenant": "tenant-a", "received_at_ms": NOON, "event": event(&format!("f-{suffix}"))});
        if let Some(v) = version {
            t["version"] = v.into();
            e["version"] = v.into();
        }
        if version == Some(2) {
            t["source"] = "gateway".into();
        }
        if version == Some(3) {
            // What a newer writer might add: named as a newer version, not as malformed.
            t["priority"] = "high".into();
            e["priority"] = "high".into();
        }
        bodies.push(t.to_string());
        bodies.push(e.to_string());
    }
    stores.queue.send_batch(&bodies).await.unwrap();
    assert_eq!(drain_once(&stores).await, 8);

    assert_eq!(turn_table_ids(&stores).await, ["t-v0", "t-v1", "t-v2"]);
    let tenant = TenantId::parse("tenant-a").unwrap();
    let policy =
        agentrl_learning::policy(stores.table.clone(), agentrl_learning::Outlets::of(&stores));
    assert!(policy.update(&tenant, "coder-7").await.unwrap().is_some());
    let dead = stores.queue.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");
    for d in &dead {
        assert!(d.body.contains("\"version\":3"), "{d:?}");
        assert!(
            d.reason.contains("envelope version 3 is not supported"),
            "{}",
            d.reason
        );
    }
}

#[tokio::test]
async fn every_body_schema_version_is_read_or_parked_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let mut bodies = Vec::new();
    for version in [0, 1, 2] {
        let trajectory = json!({"schema_version": version, "trajectory_id": format!("t-s{version}"),
            "agent_id": "coder-7", "conversation_id": "c",
            "turns": [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}]});
        let event = json!({"schema_version": version, "event_id": format!("f-s{version}"),
            "type": "feedback.created", "agent_id": "coder-7", "user_id": "alice",
            "occurred_at_ms": NOON, "value": 0.8});
        bodies.push(json!({"version": 1, "tenant": "tenant-a", "received_at_ms": NOON, "trajectory": trajectory}).to_string());
        bodies.push(
            json!({"version": 1, "tenant": "tenant-a", "received_at_ms": NOON, "event": event})
                .to_string(),
        );
    }
    stores.queue.send_batch(&bodies).await.unwrap();
    assert_eq!(drain_once(&stores).await, 6);

    assert_eq!(turn_table_ids(&stores).await, ["t-s0", "t-s1"]);
    let tenant = TenantId::parse("tenant-a").unwrap();
    let policy =
        agentrl_learning::policy(stores.table.clone(), agentrl_learning::Outlets::of(&stores));
    let update = policy.update(&tenant, "coder-7").await.unwrap();
    assert!(
        update.is_some(),
        "the two readable events reached the projection"
    );
    let dead = stores.queue.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");
    for d in &dead {
        assert!(d.body.contains("\"schema_version\":2"), "{d:?}");
        assert!(
            d.reason.contains("schema_version 2 is not supported"),
            "{}",
            d.reason
        );
    }
}
