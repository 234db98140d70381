//! The API on DynamoDB, SQS and S3 (moto) behind a fault proxy that throttles, fails and
//! loses the answers of some requests (`agentrl_tests::fault_proxy`): concurrent budget
//! reports, learning events and trajectories, each accounted for afterwards on moto directly.
//! Nothing is lost (every acknowledged write is there) and nothing is doubled (every report
//! and event counts once, even when its write was applied and its answer lost).

use std::{collections::BTreeSet, time::Duration};

use agentrl_tests::fault_proxy::{FaultProxy, Service};
use serde_json::{Value, json};

use crate::{
    concurrency::hammer,
    helpers::{Stack, spawn_on},
};

/// Every fifth request of each service fails (one in ten refused, one in ten applied with
/// its answer lost).
const PERIOD: u64 = 5;
const TRAJECTORIES: usize = 12;
const EVENTS: u64 = 12;

async fn post(s: &Stack, path: &str, body: Value) {
    let (status, answer) = s.a("POST", path, Some(&body)).await;
    assert_eq!(status, 202, "{path}: {answer}");
}

/// The trajectory ids in the turn table.
async fn turn_table(stores: &agentrl_store::Stores) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for meta in stores.objects.list("trajectories/").await.unwrap() {
        let bytes = stores.objects.get(&meta.path).await.unwrap().unwrap();
        for row in agentrl_turns::read_turns(bytes).unwrap() {
            ids.insert(row.unwrap().trajectory_id);
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_is_lost_or_doubled_through_throttling_errors_and_lost_answers() {
    let proxy = FaultProxy::start(&agentrl_tests::moto_endpoint(), PERIOD).await;
    let (stores, direct) = agentrl_tests::aws_stores_through(&proxy.endpoint).await;
    let s = spawn_on(stores).await;

    // Reports sent twice each by 12 concurrent reporters: one answer per report, the sum of the
    // accepted tokens consumed, the ceiling reached exactly and never passed.
    hammer(&s, 12, 6).await;

    // One trajectory at a time, each waited for in the turn table (read from moto directly):
    // every one becomes an object of its own, so S3 sees enough writes to meet its faults
    // (a burst could be batched into as few objects as the proxy's period, and then S3's
    // faults never came).
    for i in 0..TRAJECTORIES {
        let id = format!("t-{i}");
        post(
            &s,
            "/v1/trajectories",
            json!({"trajectory_id": id, "agent_id": "coder-7",
            "conversation_id": id,
            "turns": [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}],
            "final_outcome": {"success": true, "reward": 1.0}}),
        )
        .await;
        let mut ingested = false;
        for _ in 0..600 {
            ingested = turn_table(&direct).await.contains(&id);
            if ingested {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ingested, "acknowledged but not ingested: {id}");
    }
    for i in 0..EVENTS {
        post(
            &s,
            "/v1/events",
            json!({"event_id": format!("e-{i}"), "type": "feedback.created",
            "agent_id": "coder-7", "user_id": "alice", "value": 0.5}),
        )
        .await;
    }

    // Every event counted once, even those delivered twice after a lost answer.
    let mut positives = 0;
    for _ in 0..600 {
        let (_, v) = s.a("GET", "/v1/agents/coder-7/learning", None).await;
        positives = v["feedback"]["positive_count"].as_u64().unwrap_or(0);
        if positives >= EVENTS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, v) = s.a("GET", "/v1/agents/coder-7/learning", None).await;
    assert_eq!(
        (positives, v["feedback"]["positive_count"].as_u64()),
        (EVENTS, Some(EVENTS)),
        "{v}"
    );
    for queue in [&direct.queue, &direct.events] {
        let parked = queue.dead_letters(100).await.unwrap();
        assert!(parked.is_empty(), "nothing needs a dead letter: {parked:?}");
    }

    // The faults happened, of both kinds, on every service.
    let (dynamodb, sqs, s3) = (
        proxy.tally(Service::DynamoDb),
        proxy.tally(Service::Sqs),
        proxy.tally(Service::S3),
    );
    assert!(dynamodb.refused > 0 && dynamodb.lost > 0, "{dynamodb:?}");
    assert!(sqs.refused > 0 && sqs.lost > 0, "{sqs:?}");
    assert!(s3.refused + s3.lost > 0, "{s3:?}");
    eprintln!("faults: DynamoDB {dynamodb:?}, SQS {sqs:?}, S3 {s3:?}");
    s.stop().await;
}
