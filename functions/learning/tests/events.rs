//! Handler tests driven by the fixtures in `events/learning/`: the API Gateway events go
//! through the Lambda app exactly as in Lambda, the SQS batch through the batch lifter and the
//! worker, over a real SQLite database.

use std::time::Duration;

use agentrl_http::{AppOptions, Metrics, app};
use agentrl_learning::{Learner, LearningState, Outlets, service};
use agentrl_store::{Stores, clock::now_ms_i64, ports::Message};
use agentrl_testkit::with_body;
use axum::Router;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(&format!("learning/{name}")).unwrap()
}

async fn call(app: &Router, event: &Value) -> (u16, Value) {
    agentrl_testkit::invoke_json(app, event).await.unwrap()
}

fn lambda_app(stores: &Stores) -> Router {
    let options = AppOptions {
        metrics: Metrics::Off,
        idempotency: Some(stores.table.clone()),
        ..agentrl_http::lambda::options("learning")
    };
    let state = LearningState::new(
        stores.table.clone(),
        stores.queue.clone(),
        Outlets::of(stores),
    );
    app(vec![service(state)], options)
}

fn learner(stores: &Stores) -> Learner {
    Learner::new(
        stores.table.clone(),
        stores.queue.clone(),
        Outlets::of(stores),
    )
}

async fn received(stores: &Stores) -> Vec<Message> {
    stores
        .queue
        .receive(10, Duration::from_secs(30), Duration::from_millis(100))
        .await
        .unwrap()
}

#[tokio::test]
async fn every_api_fixture_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let app = lambda_app(&stores);

    let (status, missing) = call(&app, &fixture("get-learning.json")).await;
    assert_eq!(status, 404, "{missing}");
    let (status, accepted) = call(&app, &fixture("post-events.json")).await;
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["events"].as_array().unwrap().len(), 4);
    let messages = received(&stores).await;
    assert_eq!(messages.len(), 4);
    let envelope: Value = serde_json::from_str(&messages[0].body).unwrap();
    assert_eq!(
        envelope["tenant"], "tenant-a",
        "the tenant comes from the JWT claim"
    );
    assert!(learner(&stores).process(&messages).await.is_empty());

    let (status, v) = call(&app, &fixture("get-learning.json")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["agent_id"], "coder-7");
    assert_eq!(v["feedback"]["positive_count"], 1);
    assert_eq!(v["feedback"]["negative_count"], 0);
    assert!(
        v["feedback"]["avg_score"].as_f64().unwrap() > 0.9,
        "owner feedback weighs 1.5×: {v}"
    );
    assert_eq!(
        v["behaviour"]["actions"]["open_pull_request"]["successes"],
        1
    );
    assert_eq!(v["relationships"][0]["user_id"], "alice");
    assert_eq!(
        (v["replies"].as_u64(), v["sessions"].as_u64()),
        (Some(1), Some(1))
    );

    let (status, reply) = call(&app, &fixture("get-reply.json")).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["feedback"]["evt-fb-1"], reply["reward"]);

    let (status, settings) = call(&app, &fixture("put-settings.json")).await;
    assert_eq!(status, 200, "{settings}");
    assert_eq!(settings["trusted"], true);
    let (status, report) = call(&app, &fixture("update.json")).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["shadow"], false);
    let (status, _) = call(&app, &fixture("unfreeze.json")).await;
    assert_eq!(status, 200);

    let (status, defaults) = call(&app, &fixture("get-config.json")).await;
    assert_eq!(status, 200);
    assert_eq!(defaults["dataset"]["min_positive"], 100);
    let (status, put) = call(&app, &fixture("put-config.json")).await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(put["policy"]["learning_rate"], 0.2);
    let bad = json!({"policy": {"learning_rate": 7.0}});
    let (status, problem) = call(&app, &with_body(fixture("put-config.json"), &bad)).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("policy.learning_rate")),
        "{problem}"
    );

    let bad = json!({"event_id": "x", "type": "feedback.created", "agent_id": "coder-7", "user_id": "u", "value": 2.0});
    let (status, problem) = call(&app, &with_body(fixture("post-events.json"), &bad)).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("value")),
        "{problem}"
    );
    let unknown = json!({"event_id": "x", "type": "user.sneezed", "agent_id": "a", "user_id": "u"});
    let (status, _) = call(&app, &with_body(fixture("post-events.json"), &unknown)).await;
    assert_eq!(status, 400);
    assert!(
        received(&stores).await.is_empty(),
        "nothing invalid was enqueued"
    );
}

#[tokio::test]
async fn the_sqs_fixture_applies_each_event_once_and_dead_letters_the_poison() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let event = serde_json::from_value(fixture("sqs-batch.json")).unwrap();
    let decoded = agentrl_http::sqs::messages(event);
    assert_eq!(decoded.len(), 4);
    // The worker dead-letters through the queue the messages live on: put the fixture's bodies
    // on the embedded queue and take them back as real deliveries.
    let bodies: Vec<String> = decoded.into_iter().map(|m| m.body).collect();
    stores.queue.send_batch(&bodies).await.unwrap();
    let messages = received(&stores).await;
    assert_eq!(messages.len(), 4);
    let retry = learner(&stores).process(&messages).await;
    assert!(retry.is_empty(), "{retry:?}");
    let dead = stores.queue.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert!(dead[0].reason.contains("value"), "{}", dead[0].reason);

    let app = lambda_app(&stores);
    let (status, v) = call(&app, &fixture("get-learning.json")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["feedback"]["positive_count"], 1,
        "the duplicate counted once: {v}"
    );
    let mut reply = fixture("get-reply.json");
    reply["rawPath"] = "/v1/agents/coder-7/replies/msg-9".into();
    reply["requestContext"]["http"]["path"] = "/v1/agents/coder-7/replies/msg-9".into();
    reply["pathParameters"]["message_id"] = "msg-9".into();
    let (status, ledger) = call(&app, &reply).await;
    assert_eq!(status, 200, "{ledger}");
    assert_eq!(ledger["feedback"].as_object().unwrap().len(), 1);
    assert!(ledger["reward"].as_f64().unwrap() > 0.0, "{ledger}");

    // The whole batch again (a redelivery): no second effect.
    stores.queue.send_batch(&bodies[..3]).await.unwrap();
    let again = received(&stores).await;
    assert!(learner(&stores).process(&again).await.is_empty());
    let (_, after) = call(&app, &fixture("get-learning.json")).await;
    for field in [
        "positive_count",
        "negative_count",
        "avg_score",
        "reward_sum",
        "high_quality",
    ] {
        assert_eq!(after["feedback"][field], v["feedback"][field], "{field}");
    }
    assert_eq!(after["replies"], v["replies"]);
}

const DAY_MS: i64 = 86_400_000;

fn message(id: &str, event: Value) -> Message {
    Message {
        id: id.to_owned(),
        receipt: format!("receipt-{id}"),
        body: json!({"tenant": "tenant-a", "received_at_ms": now_ms_i64(), "event": event})
            .to_string(),
        receive_count: 1,
    }
}

/// A reply expressing `verbosity`, and feedback `value` on it, for `agent` at `at`.
fn rated_reply(agent: &str, n: usize, verbosity: f64, value: f64, at: i64) -> Vec<Message> {
    vec![
        message(
            &format!("{agent}-r{n}"),
            json!({"event_id": format!("{agent}-r{n}"), "type": "ai.message.reply", "agent_id": agent,
                   "user_id": "alice", "occurred_at_ms": at, "message_id": format!("{agent}-m{n}"),
                   "traits": {"verbosity": verbosity}}),
        ),
        message(
            &format!("{agent}-f{n}"),
            json!({"event_id": format!("{agent}-f{n}"), "type": "feedback.created", "agent_id": agent,
                   "user_id": "alice", "occurred_at_ms": at + 1, "value": value,
                   "source_id": format!("{agent}-m{n}")}),
        ),
    ]
}

async fn emitted(stores: &Stores) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let got = stores
            .events
            .receive(10, Duration::from_secs(30), Duration::from_millis(50))
            .await
            .unwrap();
        if got.is_empty() {
            return out;
        }
        out.extend(got.iter().map(|m| serde_json::from_str(&m.body).unwrap()));
    }
}

fn kinds(events: &[Value], agent: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["agent_id"] == agent)
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

fn at_agent(name: &str, agent: &str) -> Value {
    serde_json::from_str(&fixture(name).to_string().replace("coder-7", agent)).unwrap()
}

#[tokio::test]
async fn the_policy_loop_shadows_applies_freezes_and_requests_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let app = lambda_app(&stores);
    let config = json!({"policy": {"update_threshold": 1000},
        "dataset": {"min_positive": 3, "min_high_quality": 2}});
    let (status, _) = call(&app, &with_body(fixture("put-config.json"), &config)).await;
    assert_eq!(status, 200);
    let now = now_ms_i64();
    let batch: Vec<Message> = (0..3)
        .flat_map(|n| rated_reply("tuned", n, 0.9, 0.9, now - 60_000 + n as i64))
        .collect();
    assert!(learner(&stores).process(&batch).await.is_empty());

    // Shadow mode: planned and logged, not applied.
    let shadow = json!({"trusted": false, "shadow": true});
    let (status, _) = call(
        &app,
        &with_body(at_agent("put-settings.json", "tuned"), &shadow),
    )
    .await;
    assert_eq!(status, 200);
    let (_, report) = call(&app, &at_agent("update.json", "tuned")).await;
    assert_eq!(
        (report["shadow"].as_bool(), report["applied"].as_bool()),
        (Some(true), Some(false)),
        "{report}"
    );
    assert!(
        report["plan"]["deltas"]["verbosity"]["to"]
            .as_f64()
            .unwrap()
            > 0.5,
        "{report}"
    );
    let (_, v) = call(&app, &at_agent("get-learning.json", "tuned")).await;
    assert_eq!(
        (
            v["learning_version"].as_u64(),
            v["shadow_log"].as_array().unwrap().len()
        ),
        (Some(0), 1),
        "{v}"
    );
    assert_eq!(v["summary"]["traits"].get("verbosity"), None, "{v}");

    // Applied: the version moves, verbosity rises toward the well-received replies, and the
    // update and the dataset request are announced.
    let live = json!({"trusted": false, "shadow": false});
    call(
        &app,
        &with_body(at_agent("put-settings.json", "tuned"), &live),
    )
    .await;
    let (_, report) = call(&app, &at_agent("update.json", "tuned")).await;
    assert_eq!(
        (
            report["applied"].as_bool(),
            report["learning_version"].as_u64()
        ),
        (Some(true), Some(1)),
        "{report}"
    );
    assert_eq!(report["dataset_requested"], true);
    let (_, v) = call(&app, &at_agent("get-learning.json", "tuned")).await;
    assert!(
        v["summary"]["traits"]["verbosity"].as_f64().unwrap() > 0.5,
        "{v}"
    );
    let sent = emitted(&stores).await;
    assert_eq!(
        kinds(&sent, "tuned"),
        ["agent.learning.updated", "dataset.generation.requested"]
    );
    let for_datasets: Vec<Value> = stores
        .datasets
        .receive(10, Duration::from_secs(30), Duration::from_millis(50))
        .await
        .unwrap()
        .iter()
        .map(|m| serde_json::from_str(&m.body).unwrap())
        .collect();
    assert_eq!(
        for_datasets,
        [sent[1].clone()],
        "the dataset job gets the request on its own queue"
    );
    let updated = &sent[0];
    assert_eq!(
        (
            updated["tenant"].as_str(),
            updated["learning_version"].as_u64()
        ),
        (Some("tenant-a"), Some(1))
    );
    // The cooldown: no second request right away.
    let (_, report) = call(&app, &at_agent("update.json", "tuned")).await;
    assert_eq!(report["dataset_requested"], false, "{report}");

    // A week of bad days freezes the agent for review.
    let grumpy: Vec<Message> = (0..7)
        .flat_map(|d| rated_reply("grumpy", d, 0.2, -0.9, now - d as i64 * DAY_MS - 1_000))
        .collect();
    assert!(learner(&stores).process(&grumpy).await.is_empty());
    let (_, report) = call(&app, &at_agent("update.json", "grumpy")).await;
    assert_eq!(
        (report["frozen"].as_bool(), report["applied"].as_bool()),
        (Some(true), Some(false)),
        "{report}"
    );
    let (_, v) = call(&app, &at_agent("get-learning.json", "grumpy")).await;
    assert_eq!(
        (v["frozen"].as_bool(), v["needs_review"].as_bool()),
        (Some(true), Some(true)),
        "{v}"
    );
    assert_eq!(
        kinds(&emitted(&stores).await, "grumpy"),
        ["agent.learning.frozen"]
    );
    let (status, _) = call(&app, &at_agent("unfreeze.json", "grumpy")).await;
    assert_eq!(status, 200);
    let (_, v) = call(&app, &at_agent("get-learning.json", "grumpy")).await;
    assert_eq!(v["frozen"], false);
}

#[tokio::test]
async fn the_threshold_and_the_schedule_run_the_update() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let app = lambda_app(&stores);
    let config = json!({"policy": {"update_threshold": 2}});
    call(&app, &with_body(fixture("put-config.json"), &config)).await;
    let now = now_ms_i64();
    // Two rated replies cross the threshold inside the worker.
    let batch: Vec<Message> = (0..2)
        .flat_map(|n| rated_reply("eager", n, 0.9, 0.9, now - 1_000 + n as i64))
        .collect();
    assert!(learner(&stores).process(&batch).await.is_empty());
    let (_, v) = call(&app, &at_agent("get-learning.json", "eager")).await;
    assert_eq!(v["learning_version"], 1, "{v}");
    assert_eq!(v["pending"], false, "{v}");

    // One rated reply stays below it: the agent waits on the pending list for the schedule.
    let batch = rated_reply("patient", 0, 0.9, 0.9, now - 1_000);
    assert!(learner(&stores).process(&batch).await.is_empty());
    let (_, v) = call(&app, &at_agent("get-learning.json", "patient")).await;
    assert_eq!(
        (v["learning_version"].as_u64(), v["pending"].as_bool()),
        (Some(0), Some(true)),
        "{v}"
    );
    let policy = agentrl_learning::policy(stores.table.clone(), Outlets::of(&stores));
    let run = policy.run_pending().await.unwrap();
    assert_eq!((run.visited, run.failed), (1, 0), "{run:?}");
    let (_, v) = call(&app, &at_agent("get-learning.json", "patient")).await;
    assert_eq!(v["pending"], false, "{v}");
    assert_eq!(policy.run_pending().await.unwrap().visited, 0);
}
