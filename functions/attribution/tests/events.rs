//! Handler tests driven by the API Gateway fixtures in `events/attribution/`: every fixture is
//! decoded by `lambda_http` exactly as in Lambda and sent through the composed application
//! with JWT-claim authentication, over a real SQLite table.

use std::sync::Arc;

use agentrl_attribution::{AttributionState, service};
use agentrl_http::{AppOptions, Metrics, app};
use agentrl_store::embedded::{Database, SqliteTable};
use axum::Router;
use serde_json::Value;

/// The session id the fixtures carry (replaced by a real one).
const FIXTURE_SESSION: &str = "0193b7e2-7c1a-7b3e-9a44-2f1d1c0e5a02";

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(&format!("attribution/{name}")).unwrap()
}

fn with_session_id(mut event: Value, id: &str) -> Value {
    let path = event["rawPath"]
        .as_str()
        .unwrap()
        .replace(FIXTURE_SESSION, id);
    event["rawPath"] = path.clone().into();
    event["requestContext"]["http"]["path"] = path.into();
    event["pathParameters"]["id"] = id.into();
    event
}

fn with_tenant(mut event: Value, tenant: &str) -> Value {
    event["requestContext"]["authorizer"]["jwt"]["claims"]["tenant_id"] = tenant.into();
    event
}

async fn call(app: &Router, event: &Value) -> (u16, String) {
    let (status, body) = agentrl_testkit::invoke(app, &event.to_string())
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

async fn call_json(app: &Router, event: &Value) -> (u16, Value) {
    let (status, text) = call(app, event).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn lambda_app(dir: &std::path::Path) -> Router {
    let db = Database::open(&dir.join("agentrl.db")).unwrap();
    let state = AttributionState::new(Arc::new(SqliteTable::new(db)));
    let options = AppOptions {
        metrics: Metrics::Off,
        ..agentrl_http::lambda::options("attribution")
    };
    app(vec![service(state)], options)
}

#[tokio::test]
async fn every_fixture_round_trips_through_the_lambda_app() {
    let dir = tempfile::tempdir().unwrap();
    let app = lambda_app(dir.path());

    let (status, created) = call_json(&app, &fixture("create.json")).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["task_id"], "task-42");
    assert_eq!(created["method"], "exact");

    let (status, got) = call_json(&app, &fixture("get.json")).await;
    assert_eq!(
        (status, &got["contributions"]),
        (200, &created["contributions"])
    );
    let (status, _) = call_json(&app, &with_tenant(fixture("get.json"), "tenant-b")).await;
    assert_eq!(status, 404, "another tenant's attribution is not found");

    let (status, lines) = call(&app, &fixture("export.json")).await;
    assert_eq!(status, 200);
    assert_eq!(lines.lines().count(), 1, "{lines}");

    let (status, stats) = call_json(&app, &fixture("stats.json")).await;
    assert_eq!(status, 200, "{stats}");
    assert_eq!(stats["strategies"][0]["count"], 1);

    let (status, session) = call_json(&app, &fixture("create-session.json")).await;
    assert_eq!(status, 201, "{session}");
    let id = session["session_id"].as_str().unwrap().to_owned();
    assert_eq!(
        call(&app, &fixture("get-session.json")).await.0,
        404,
        "the fixture's session id does not exist"
    );
    let (status, read) = call_json(&app, &with_session_id(fixture("get-session.json"), &id)).await;
    assert_eq!((status, &read["session_id"]), (200, &session["session_id"]));
    let (status, progress) =
        call_json(&app, &with_session_id(fixture("session-values.json"), &id)).await;
    assert_eq!(status, 200, "{progress}");
    assert!(progress["progress"]["awaiting"].as_u64().unwrap() > 0);

    let (status, recorded) = call_json(&app, &fixture("contribute.json")).await;
    assert_eq!(status, 201, "{recorded}");
    // (0.9 − 0.4) × 1.5 / 0.8
    assert!((recorded["score"].as_f64().unwrap() - 0.9375).abs() < 1e-12);
    let (status, ranking) = call_json(&app, &fixture("ranking.json")).await;
    assert_eq!(status, 200);
    assert_eq!(ranking[0]["agent_id"], "coder");
    assert_eq!(ranking[0]["rank"], 1);
}

#[tokio::test]
async fn the_openapi_document_lists_every_attribution_route() {
    let dir = tempfile::tempdir().unwrap();
    let app = lambda_app(dir.path());
    let openapi = format!("{}/../../events/openapi.json", env!("CARGO_MANIFEST_DIR"));
    let event: Value = serde_json::from_str(&std::fs::read_to_string(openapi).unwrap()).unwrap();
    let (status, doc) = call_json(&app, &event).await;
    assert_eq!(status, 200);
    for path in [
        "/v1/attributions",
        "/v1/attributions/{task_id}",
        "/v1/attributions/stats",
        "/v1/attributions/sessions",
        "/v1/attributions/sessions/{id}",
        "/v1/attributions/sessions/{id}/values",
        "/v1/contributions",
        "/v1/agents/ranking",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} missing from OpenAPI"
        );
    }
}
