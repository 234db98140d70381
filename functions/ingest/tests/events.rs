//! Handler tests driven by the fixtures in `events/trajectories/`: the API Gateway events go
//! through the Lambda app exactly as in Lambda, the SQS batch through the batch lifter and the
//! worker, over a real SQLite database and a real directory; what the worker wrote is then
//! listed and read back through the Lambda app.

use std::sync::Arc;

use agentrl_core::privacy::Pseudonymizer;
use agentrl_http::{AppOptions, Metrics, app};
use agentrl_ingest::{Ingest, TrajectoryState, service};
use agentrl_store::Stores;
use agentrl_testkit::with_body;
use axum::Router;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(&format!("trajectories/{name}")).unwrap()
}

async fn call(app: &Router, event: &Value) -> (u16, Value) {
    agentrl_testkit::invoke_json(app, event).await.unwrap()
}

fn lambda_app(stores: &Stores) -> Router {
    let options = AppOptions {
        metrics: Metrics::Off,
        idempotency: Some(stores.table.clone()),
        ..agentrl_http::lambda::options("trajectories")
    };
    app(
        vec![service(TrajectoryState::new(
            stores.queue.clone(),
            stores.objects.clone(),
            stores.table.clone(),
        ))],
        options,
    )
}

#[tokio::test]
async fn every_api_fixture_round_trips_and_enqueues_only_valid_trajectories() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let app = lambda_app(&stores);

    let (status, accepted) = call(&app, &fixture("post.json")).await;
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["trajectory_id"], "traj-0001");
    assert_eq!(accepted["status"], "queued");

    let mut invalid: Value =
        serde_json::from_str(fixture("post.json")["body"].as_str().unwrap()).unwrap();
    invalid["turns"][1]["loss_mask"] = json!([1, 1]);
    let (status, problem) = call(&app, &with_body(fixture("post.json"), &invalid)).await;
    assert_eq!(status, 400);
    assert_eq!(problem["field"], "turns[1].loss_mask");
    invalid["turns"] = json!([]);
    let (status, problem) = call(&app, &with_body(fixture("post.json"), &invalid)).await;
    assert_eq!((status, problem["field"].as_str()), (400, Some("turns")));

    let queued = stores
        .queue
        .receive(
            10,
            std::time::Duration::from_secs(30),
            std::time::Duration::from_millis(100),
        )
        .await
        .unwrap();
    assert_eq!(queued.len(), 1, "only the valid trajectory was enqueued");
    let envelope: Value = serde_json::from_str(&queued[0].body).unwrap();
    assert_eq!(
        envelope["tenant"], "tenant-a",
        "the tenant comes from the JWT claim"
    );

    let (status, defaults) = call(&app, &fixture("get-config.json")).await;
    assert_eq!(status, 200);
    assert_eq!(defaults["differential_privacy"], Value::Null);
    let (status, put) = call(&app, &fixture("put-config.json")).await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(put["differential_privacy"]["epsilon"], 1.0);
    let bad = json!({"rewards": {"information_gain": 0.9, "format": 0.3, "progress": 0.3}});
    let (status, problem) = call(&app, &with_body(fixture("put-config.json"), &bad)).await;
    assert_eq!(status, 400);
    assert!(
        problem["field"].as_str().unwrap().starts_with("rewards"),
        "{problem}"
    );

    let (status, budget) = call(&app, &fixture("privacy-budget.json")).await;
    assert_eq!(status, 200);
    assert_eq!(
        budget,
        json!({"spent": 0.0, "budget": 100.0, "remaining": 100.0,
               "federation": {"enabled": false, "epsilon_budget": 0.0, "delta": 0.0,
                              "rounds": 0, "epsilon_spent": 0.0}})
    );
}

#[tokio::test]
async fn the_sqs_fixture_writes_rows_and_dead_letters_the_poison() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let pseudonyms = Arc::new(Pseudonymizer::new(b"a test secret of enough bytes").unwrap());
    let ingest = Ingest::new(
        stores.table.clone(),
        stores.objects.clone(),
        stores.queue.clone(),
        pseudonyms,
        Arc::new(agentrl_judges::Provider::new(None, None)),
    );
    let event = serde_json::from_value(fixture("sqs-batch.json")).unwrap();
    let decoded = agentrl_http::sqs::messages(event);
    assert_eq!(decoded.len(), 2);
    assert_eq!(decoded[0].id, "6f3a2f8e-1c2b-4a5d-9e7f-000000000001");
    // The worker dead-letters through the queue the messages live on: put the fixture's bodies
    // on the embedded queue and take them back as real deliveries.
    let bodies: Vec<String> = decoded.into_iter().map(|m| m.body).collect();
    stores.queue.send_batch(&bodies).await.unwrap();
    let messages = stores
        .queue
        .receive(
            10,
            std::time::Duration::from_secs(30),
            std::time::Duration::from_millis(100),
        )
        .await
        .unwrap();
    assert_eq!(messages.len(), 2);
    let retry = ingest.process(&messages).await;
    assert!(retry.is_empty(), "{retry:?}");
    let response = serde_json::to_value(agentrl_http::sqs::response(retry)).unwrap();
    assert_eq!(response["batchItemFailures"], json!([]));
    let dead = stores.queue.dead_letters(10).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert!(
        dead[0].reason.starts_with("not a trajectory message"),
        "{}",
        dead[0].reason
    );
    let objects = stores.objects.list("trajectories/").await.unwrap();
    assert_eq!(objects.len(), 1);
    assert!(
        objects[0].path.contains("/date=2026-11-22/"),
        "{}",
        objects[0].path
    );

    let app = lambda_app(&stores);
    let (status, page) = call(&app, &fixture("list.json")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["trajectories"][0]["trajectory_id"], "traj-0001");
    assert_eq!(page["trajectories"][0]["objects"], json!([objects[0].path]));
    assert_eq!(page["next_cursor"], Value::Null);
    let (status, trajectory) = call(&app, &fixture("get.json")).await;
    assert_eq!(status, 200, "{trajectory}");
    let rows: Vec<_> =
        agentrl_turns::read_turns(stores.objects.get(&objects[0].path).await.unwrap().unwrap())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let turns = trajectory["turns"].as_array().unwrap();
    assert_eq!(turns.len(), rows.len());
    for (turn, row) in turns.iter().zip(&rows) {
        assert_eq!(turn["role"], row.role.as_str());
        assert_eq!(turn["content"], row.content.as_str());
        let names: Vec<&str> = row.tool_calls.iter().map(|c| c.name.as_str()).collect();
        let shown: Vec<&str> = turn["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(shown, names);
    }
}
