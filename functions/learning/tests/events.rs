//! Handler tests driven by the fixtures in `events/learning/`: the API Gateway events go
//! through the Lambda app exactly as in Lambda, the SQS batch through the batch lifter and the
//! worker, over a real SQLite database.

use std::time::Duration;

use agentrl_http::{AppOptions, Metrics, app};
use agentrl_learning::{Learner, LearningState, service};
use agentrl_store::{Stores, ports::Message};
use axum::Router;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../events/learning/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).expect(&path)).expect("fixture JSON")
}

fn with_body(mut event: Value, body: &Value) -> Value {
    event["body"] = body.to_string().into();
    event
}

async fn call(app: &Router, event: &Value) -> (u16, Value) {
    agentrl_http::lambda::invoke_json(app, event).await.unwrap()
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
        stores.events.clone(),
    );
    app(vec![service(state)], options)
}

fn learner(stores: &Stores) -> Learner {
    Learner::new(
        stores.table.clone(),
        stores.queue.clone(),
        stores.events.clone(),
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
