//! Handler tests driven by the API Gateway fixtures in `events/`: every fixture is decoded by
//! `lambda_http` exactly as in Lambda and sent through the composed application with JWT-claim
//! authentication, over a real SQLite table.

use std::sync::Arc;

use agentrl_budget::{BudgetState, service};
use agentrl_http::{AppOptions, Metrics, app};
use agentrl_store::embedded::{Database, SqliteTable};
use axum::Router;
use serde_json::Value;

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(name).unwrap()
}

fn with_budget_id(mut event: Value, id: &str) -> Value {
    let path = event["rawPath"]
        .as_str()
        .unwrap()
        .replace("0193b7e2-7c1a-7b3e-9a44-2f1d1c0e5a01", id);
    event["rawPath"] = path.clone().into();
    event["requestContext"]["http"]["path"] = path.into();
    event["pathParameters"]["id"] = id.into();
    event
}

fn with_tenant(mut event: Value, tenant: Option<&str>) -> Value {
    let claims = &mut event["requestContext"]["authorizer"]["jwt"]["claims"];
    match tenant {
        Some(t) => claims["tenant_id"] = t.into(),
        None => {
            claims.as_object_mut().unwrap().remove("tenant_id");
        }
    }
    event
}

async fn call(app: &Router, event: &Value) -> (u16, Value) {
    agentrl_testkit::invoke_json(app, event).await.unwrap()
}

fn lambda_app(dir: &std::path::Path) -> Router {
    let db = Database::open(&dir.join("agentrl.db")).unwrap();
    let state = BudgetState::new(Arc::new(SqliteTable::new(db)));
    let options = AppOptions {
        metrics: Metrics::Off,
        ..agentrl_http::lambda::options("budget")
    };
    app(vec![service(state)], options)
}

#[tokio::test]
async fn every_fixture_round_trips_through_the_lambda_app() {
    let dir = tempfile::tempdir().unwrap();
    let app = lambda_app(dir.path());

    assert_eq!(call(&app, &fixture("health.json")).await.0, 200);
    let (status, doc) = call(&app, &fixture("openapi.json")).await;
    assert_eq!(status, 200);
    assert!(doc["paths"]["/v1/budgets"].is_object());

    let (status, created) = call(&app, &fixture("budget/create.json")).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["task_id"], "task-42");
    let id = created["budget_id"].as_str().unwrap().to_owned();

    assert_eq!(
        call(&app, &fixture("budget/get.json")).await.0,
        404,
        "the fixture's id does not exist"
    );
    let (status, got) = call(&app, &with_budget_id(fixture("budget/get.json"), &id)).await;
    assert_eq!((status, &got["budget_id"]), (200, &created["budget_id"]));
    let (status, listed) = call(&app, &fixture("budget/list.json")).await;
    assert_eq!(
        (status, &listed["budgets"][0]["budget_id"]),
        (200, &created["budget_id"])
    );

    let (status, decision) = call(
        &app,
        &with_budget_id(fixture("budget/consumption.json"), &id),
    )
    .await;
    assert_eq!(
        (status, decision["action"].as_str()),
        (200, Some("CONTINUE")),
        "{decision}"
    );
    let (status, done) = call(&app, &with_budget_id(fixture("budget/complete.json"), &id)).await;
    assert_eq!((status, done["status"].as_str()), (200, Some("completed")));

    let (status, config) = call(&app, &fixture("budget/put-config.json")).await;
    assert_eq!(
        (status, config["tiers"]["complex"]["base_tokens"].as_u64()),
        (200, Some(8_000))
    );
    assert_eq!(call(&app, &fixture("budget/get-config.json")).await.0, 200);
}

#[tokio::test]
async fn the_tenant_comes_only_from_the_authorizer_claim() {
    let dir = tempfile::tempdir().unwrap();
    let app = lambda_app(dir.path());
    let (status, problem) = call(&app, &with_tenant(fixture("budget/create.json"), None)).await;
    assert_eq!((status, problem["status"].as_u64()), (401, Some(401)));

    let (_, created) = call(&app, &fixture("budget/create.json")).await;
    let id = created["budget_id"].as_str().unwrap();
    let as_b = with_tenant(
        with_budget_id(fixture("budget/get.json"), id),
        Some("tenant-b"),
    );
    assert_eq!(call(&app, &as_b).await.0, 404);

    // A client-chosen header naming a tenant changes nothing.
    let mut spoofed = with_tenant(
        with_budget_id(fixture("budget/get.json"), id),
        Some("tenant-b"),
    );
    spoofed["headers"]["x-tenant-id"] = "tenant-a".into();
    assert_eq!(call(&app, &spoofed).await.0, 404);
}
