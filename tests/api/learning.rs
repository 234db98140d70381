//! The agent-learning service over the local stack, on SQLite and on DynamoDB (moto): events
//! through the queue and the in-process worker, duplicates and out-of-order delivery, the
//! retroactive reply reward, the policy update and its event, concurrent workers on one
//! agent, and tenant isolation.

use std::time::Duration;

use agentrl_learning::Learner;
use agentrl_store::ports::Message;
use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

const T0: i64 = 1_795_348_800_000;

fn feedback(id: &str, user: &str, value: f64, source: Option<&str>, at: i64) -> Value {
    let mut e = json!({"event_id": id, "type": "feedback.created", "agent_id": "coder-7",
        "user_id": user, "occurred_at_ms": at, "value": value});
    if let Some(s) = source {
        e["source_id"] = s.into();
    }
    e
}

fn reply(id: &str, message: &str, verbosity: f64, at: i64) -> Value {
    json!({"event_id": id, "type": "ai.message.reply", "agent_id": "coder-7", "user_id": "alice",
        "occurred_at_ms": at, "message_id": message, "traits": {"verbosity": verbosity}})
}

async fn post(s: &Stack, events: &Value) {
    let (status, accepted) = s.a("POST", "/v1/events", Some(events)).await;
    assert_eq!(status, 202, "{accepted}");
}

/// The agent's learning state once `ready` holds (the worker runs in the background).
async fn learning_when(s: &Stack, ready: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let (status, v) = s.a("GET", "/v1/agents/coder-7/learning", None).await;
        if status == 200 && ready(&v) {
            return v;
        }
        last = v;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the projection never got there: {last}");
}

fn count(v: &Value, field: &str) -> u64 {
    v["feedback"][field].as_u64().unwrap_or(0)
}

async fn learning_end_to_end(s: &Stack) {
    // A high threshold: updates here run on demand only.
    let (status, _) = s
        .a(
            "PUT",
            "/v1/config/learning",
            Some(&json!({"policy": {"update_threshold": 1000}})),
        )
        .await;
    assert_eq!(status, 200);
    // Feedback for msg-2 arrives before its reply, and is delivered twice.
    post(
        s,
        &json!([
            reply("r-1", "msg-1", 0.9, T0),
            feedback("f-1", "alice", 0.8, Some("msg-1"), T0 + 1_000),
            feedback("f-2", "bob", -0.6, Some("msg-2"), T0 + 2_000),
            {"event_id": "a-1", "type": "ai.action", "agent_id": "coder-7", "user_id": "alice",
             "occurred_at_ms": T0 + 3_000, "action": "open_pull_request", "success": true},
        ]),
    )
    .await;
    post(
        s,
        &json!([
            reply("r-2", "msg-2", 0.2, T0 + 500),
            feedback("f-2", "bob", -0.6, Some("msg-2"), T0 + 2_000)
        ]),
    )
    .await;
    let v = learning_when(s, |v| {
        count(v, "positive_count") + count(v, "negative_count") >= 2 && v["replies"] == 2
    })
    .await;
    // Let a late duplicate land, then check nothing counted twice.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, v2) = s.a("GET", "/v1/agents/coder-7/learning", None).await;
    for field in [
        "positive_count",
        "negative_count",
        "reward_sum",
        "high_quality",
    ] {
        assert_eq!(
            v["feedback"][field], v2["feedback"][field],
            "a duplicate changed {field}"
        );
    }
    assert_eq!(
        (count(&v2, "positive_count"), count(&v2, "negative_count")),
        (1, 1),
        "{v2}"
    );
    let avg = v2["feedback"]["avg_score"].as_f64().unwrap();
    assert!(avg < 0.8 && avg > -0.6, "{v2}");
    assert_eq!(
        v2["behaviour"]["actions"]["open_pull_request"]["attempts"],
        1
    );
    let users: Vec<&str> = v2["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["user_id"].as_str().unwrap())
        .collect();
    assert!(users.contains(&"alice") && users.contains(&"bob"), "{v2}");

    // Each reply's reward is its feedback's, whichever arrived first.
    for (message, positive) in [("msg-1", true), ("msg-2", false)] {
        let (status, r) = s
            .a(
                "GET",
                &format!("/v1/agents/coder-7/replies/{message}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{r}");
        assert_eq!(r["feedback"].as_object().unwrap().len(), 1, "{r}");
        assert_eq!(r["reward"].as_f64().unwrap() > 0.0, positive, "{r}");
    }

    // The update moves verbosity toward the well-received reply and announces it.
    let (status, report) = s
        .a("POST", "/v1/agents/coder-7/learning/update", None)
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        (
            report["applied"].as_bool(),
            report["learning_version"].as_u64()
        ),
        (Some(true), Some(1)),
        "{report}"
    );
    let (_, projection) = s.a("GET", "/v1/agents/coder-7/learning", None).await;
    let days = projection["feedback"]["daily"].as_object().unwrap();
    let (sum, count) = days.values().fold((0.0, 0), |(s, n), d| {
        (
            s + d["sum"].as_f64().unwrap(),
            n + d["count"].as_u64().unwrap(),
        )
    });
    assert_eq!(
        report["sentiment_7d"].as_f64(),
        Some(sum / count as f64),
        "{report}"
    );
    let (_, v3) = s.a("GET", "/v1/agents/coder-7/learning", None).await;
    assert!(
        v3["summary"]["traits"]["verbosity"].as_f64().unwrap() > 0.5,
        "{v3}"
    );
    let emitted = s
        .stores
        .events
        .receive(10, Duration::from_secs(30), Duration::from_millis(200))
        .await
        .unwrap();
    let kinds: Vec<Value> = emitted
        .iter()
        .map(|m| serde_json::from_str::<Value>(&m.body).unwrap())
        .filter(|e| e["agent_id"] == "coder-7")
        .collect();
    assert!(
        kinds.iter().any(|e| e["type"] == "agent.learning.updated"
            && e["learning_version"] == 1
            && e["tenant"] == "tenant-a"),
        "{kinds:?}"
    );

    // Another tenant: nothing there, and its events do not touch tenant-a's agent.
    let (status, _, _) = s
        .send("GET", "/v1/agents/coder-7/learning", Some(&s.key_b), None)
        .await;
    assert_eq!(status, 404);
    let (status, _, _) = s
        .send(
            "GET",
            "/v1/agents/coder-7/replies/msg-1",
            Some(&s.key_b),
            None,
        )
        .await;
    assert_eq!(status, 404);
    // Bad input is a 400 naming the field, and nothing is enqueued.
    let (status, p) = s
        .a(
            "POST",
            "/v1/events",
            Some(&json!([
                feedback("f-9", "alice", 0.5, None, T0),
                feedback("f-10", "alice", 3.0, None, T0)
            ])),
        )
        .await;
    assert_eq!(
        (status, p["field"].as_str()),
        (400, Some("[1].value")),
        "{p}"
    );
}

fn message(i: usize, body: &Value) -> Message {
    Message {
        id: format!("m-{i}"),
        receipt: format!("receipt-{i}"),
        body: json!({"tenant": "tenant-a", "received_at_ms": T0, "event": body}).to_string(),
        receive_count: 1,
    }
}

/// Four workers apply disjoint events of one agent at once; a fifth redelivers them all.
async fn concurrent_workers(s: &Stack) {
    let events: Vec<Value> = (0..80)
        .map(|i| {
            let mut e = feedback(
                &format!("c-{i}"),
                &format!("u-{}", i % 13),
                0.5,
                None,
                T0 + i as i64,
            );
            e["agent_id"] = "busy".into();
            e
        })
        .collect();
    let messages: Vec<Message> = events
        .iter()
        .enumerate()
        .map(|(i, e)| message(i, e))
        .collect();
    let learner = || {
        Learner::new(
            s.stores.table.clone(),
            s.stores.queue.clone(),
            agentrl_learning::Outlets::of(&s.stores),
        )
    };
    let tasks: Vec<_> = messages
        .chunks(20)
        .map(|chunk| {
            let (learner, chunk) = (learner(), chunk.to_vec());
            tokio::spawn(async move { learner.process(&chunk).await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), Vec::<String>::new());
    }
    assert!(learner().process(&messages).await.is_empty());
    let (status, v) = s.a("GET", "/v1/agents/busy/learning", None).await;
    assert_eq!(status, 200);
    assert_eq!(count(&v, "positive_count"), 80, "{v}");
    let interactions: u64 = v["relationships"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["interactions"].as_u64().unwrap())
        .sum();
    assert_eq!(interactions, 80, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learning_on_sqlite() {
    let s = spawn_stack().await;
    learning_end_to_end(&s).await;
    concurrent_workers(&s).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learning_on_dynamodb() {
    let s = spawn_aws_stack().await;
    learning_end_to_end(&s).await;
    concurrent_workers(&s).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_registered_agent_with_no_events_shows_its_empty_projection() {
    let s = spawn_stack().await;
    let (status, _) = s.a("GET", "/v1/agents/fresh/learning", None).await;
    assert_eq!(status, 404, "neither registered nor taught");
    let agent = json!({"agent_id": "fresh", "name": "Fresh", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);
    let (status, v) = s.a("GET", "/v1/agents/fresh/learning", None).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (count(&v, "positive_count"), &v["pending"]),
        (0, &json!(false))
    );
    // Registered for tenant-a only.
    let (status, ..) = s
        .send("GET", "/v1/agents/fresh/learning", Some(&s.key_b), None)
        .await;
    assert_eq!(status, 404);
    s.stop().await;
}

/// Lifting a freeze of a registered agent with no learning state yet is a no-op (it was never
/// frozen); an agent neither registered nor learning is a 404.
#[tokio::test]
async fn unfreezing_an_agent_that_never_learned_changes_nothing() {
    let s = crate::helpers::spawn_stack().await;
    let agent = serde_json::json!({"agent_id": "fresh-1", "name": "Fresh", "type": "coding",
        "model": {"provider": "p", "name": "n"}});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);
    let (status, settings) = s
        .a("POST", "/v1/agents/fresh-1/learning/unfreeze", None)
        .await;
    assert_eq!(status, 200, "{settings}");
    let (status, ..) = s
        .a("POST", "/v1/agents/nobody/learning/unfreeze", None)
        .await;
    assert_eq!(status, 404);
    let (status, ..) = s
        .send(
            "POST",
            "/v1/agents/fresh-1/learning/unfreeze",
            Some(&s.key_b),
            None,
        )
        .await;
    assert_eq!(status, 404, "another tenant's agent");
    s.stop().await;
}
