//! Handler tests driven by the API Gateway fixtures in `events/diffs/`: every fixture is decoded
//! by `lambda_http` exactly as in Lambda and sent through the application with JWT-claim
//! authentication, over a real SQLite table.

use std::sync::Arc;

use agentrl_diff::{Limits, score::MAX_PATH_CHARS};
use agentrl_diff_score::{DiffState, MAX_BODY_BYTES, service};
use agentrl_http::{AppOptions, Metrics, app};
use agentrl_store::embedded::{Database, SqliteTable};
use agentrl_testkit::with_body;
use axum::Router;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(name).unwrap()
}

fn with_tenant(mut event: Value, tenant: &str) -> Value {
    event["requestContext"]["authorizer"]["jwt"]["claims"]["tenant_id"] = tenant.into();
    event
}

async fn call(app: &Router, event: &Value) -> (u16, Value) {
    agentrl_testkit::invoke_json(app, event).await.unwrap()
}

fn lambda_app(dir: &std::path::Path) -> Router {
    let db = Database::open(&dir.join("agentrl.db")).unwrap();
    let state = DiffState::new(Arc::new(SqliteTable::new(db)));
    let options = AppOptions {
        metrics: Metrics::Off,
        body_limit: MAX_BODY_BYTES,
        ..agentrl_http::lambda::options("diff-score")
    };
    app(vec![service(state)], options)
}

#[tokio::test]
async fn every_fixture_round_trips_through_the_lambda_app() {
    let dir = tempfile::tempdir().unwrap();
    let app = lambda_app(dir.path());

    let (status, report) = call(&app, &fixture("diffs/score.json")).await;
    assert_eq!(status, 200, "{report}");
    // The fixture is a real bug fix (a zero-length guard on a value): one file, one `if`.
    assert_eq!(report["files_touched"], 1);
    assert_eq!(report["exact"], true);
    assert_eq!(report["flags"], json!([]));
    assert_eq!(report["scaffolding_penalty"], 0.0);
    let similarity = report["ast_similarity"].as_f64().unwrap();
    assert!(similarity > 0.6 && similarity < 1.0, "{similarity}");
    let file = &report["files"][0];
    assert_eq!(file["path"], "src/stats.py");
    assert_eq!(file["language"], "python");
    assert_eq!(file["lines_added"], 2);
    assert!(report["files"][1]["status"] == "unchanged");
    assert!(report["reward_multiplier"].as_f64().unwrap() > 0.1);

    let (status, defaults) = call(&app, &fixture("diffs/get-config.json")).await;
    assert_eq!(status, 200);
    assert_eq!(defaults["floor"], 0.1);
    let (status, put) = call(&app, &fixture("diffs/put-config.json")).await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(put, defaults, "the fixture puts the defaults back");
}

#[tokio::test]
async fn weights_are_per_tenant_and_drive_the_multiplier() {
    let dir = tempfile::tempdir().unwrap();
    let app = lambda_app(dir.path());
    let strict = json!({"floor": 0.25, "scaffolding_weight": 1.0});
    let (status, _) = call(&app, &with_body(fixture("diffs/put-config.json"), &strict)).await;
    assert_eq!(status, 200);

    let (_, a) = call(&app, &fixture("diffs/get-config.json")).await;
    assert_eq!(a["floor"], 0.25);
    let (_, b) = call(
        &app,
        &with_tenant(fixture("diffs/get-config.json"), "tenant-b"),
    )
    .await;
    assert_eq!(b["floor"], 0.1, "another tenant keeps the defaults");

    let mut failing: Value =
        serde_json::from_str(fixture("diffs/score.json")["body"].as_str().unwrap()).unwrap();
    failing["tests_passed"] = false.into();
    let (_, scored) = call(&app, &with_body(fixture("diffs/score.json"), &failing)).await;
    assert_eq!(scored["reward_multiplier"], 0.25, "tenant-a's floor");
    let (_, scored) = call(
        &app,
        &with_tenant(with_body(fixture("diffs/score.json"), &failing), "tenant-b"),
    )
    .await;
    assert_eq!(scored["reward_multiplier"], 0.1);
}

#[tokio::test]
async fn bad_input_is_a_problem_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let app = lambda_app(dir.path());
    let score = fixture("diffs/score.json");

    let many: serde_json::Map<String, Value> = (0..501)
        .map(|i| (format!("f{i}.py"), Value::from("x = 1\n")))
        .collect();
    let body = json!({"before": {"files": {}}, "after": {"files": many}});
    let (status, problem) = call(&app, &with_body(score.clone(), &body)).await;
    assert_eq!(status, 400);
    assert_eq!(problem["field"], "files");
    assert!(problem["detail"].as_str().unwrap().contains("501 files"));

    // Only the documented names: aliases and other cases are refused as the schema says.
    for language in ["cobol", "py", "Python"] {
        let body = json!({
            "before": {"files": {}},
            "after": {"files": {"a.py": "x"}},
            "language": language,
        });
        let (status, problem) = call(&app, &with_body(score.clone(), &body)).await;
        assert_eq!((status, problem["field"].as_str()), (400, Some("language")));
    }

    // A path's limit is in characters, as the schema's `maxLength` counts.
    let longest = "é".repeat(MAX_PATH_CHARS);
    let body = json!({"before": {"files": {}}, "after": {"files": {longest.clone(): "x"}}});
    let (status, report) = call(&app, &with_body(score.clone(), &body)).await;
    assert_eq!(status, 200, "{report}");
    let body = json!({"before": {"files": {}}, "after": {"files": {longest + "é": "x"}}});
    let (status, problem) = call(&app, &with_body(score.clone(), &body)).await;
    assert_eq!((status, problem["field"].as_str()), (400, Some("files")));

    let body = json!({"before": {"files": {"a.py": 1}}, "after": {"files": {}}});
    let (status, problem) = call(&app, &with_body(score.clone(), &body)).await;
    assert_eq!(status, 400);
    assert!(
        problem["field"]
            .as_str()
            .unwrap()
            .starts_with("before.files")
    );

    let body = json!({"before": {"files": {"": "x"}}, "after": {"files": {}}});
    let (status, problem) = call(&app, &with_body(score.clone(), &body)).await;
    assert_eq!((status, problem["field"].as_str()), (400, Some("files")));

    let weights = json!({"line_ratio_weight": -1.0});
    let (status, problem) =
        call(&app, &with_body(fixture("diffs/put-config.json"), &weights)).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("line_ratio_weight"))
    );
    let weights = json!({"hard_flags": ["not_a_flag"]});
    let (status, _) = call(&app, &with_body(fixture("diffs/put-config.json"), &weights)).await;
    assert_eq!(status, 400);

    let huge = "x = 1\n".repeat(MAX_BODY_BYTES / 6 + 1);
    let body = json!({"before": {"files": {}}, "after": {"files": {"a.py": huge}}});
    let (status, _) = call(&app, &with_body(score, &body)).await;
    assert_eq!(status, 413);
}

#[tokio::test]
async fn the_openapi_document_lists_every_diff_route() {
    let dir = tempfile::tempdir().unwrap();
    let app = lambda_app(dir.path());
    let (status, doc) = call(&app, &fixture("openapi.json")).await;
    assert_eq!(status, 200);
    for path in ["/v1/diffs/score", "/v1/config/diffs"] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} missing from OpenAPI"
        );
    }
    assert!(doc["components"]["schemas"]["Report"].is_object());

    // The request schema states what the scorer checks.
    let schemas = &doc["components"]["schemas"];
    let files = &schemas["SnapshotBody"]["properties"]["files"];
    assert_eq!(files["propertyNames"]["minLength"], 1);
    assert_eq!(files["propertyNames"]["maxLength"], MAX_PATH_CHARS);
    assert_eq!(files["maxProperties"], Limits::default().max_files);
    assert_eq!(
        schemas["ScoreRequest"]["properties"]["language"]["oneOf"][1]["$ref"],
        "#/components/schemas/Lang"
    );
}
