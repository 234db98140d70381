//! Handler tests driven by the fixtures in `events/rewards/`: each API Gateway event goes
//! through the Lambda app exactly as in Lambda, over a real SQLite database.

use agentrl_http::{AppOptions, Metrics, app};
use agentrl_rewards::{MAX_BODY_BYTES, RewardState, service};
use agentrl_store::Stores;
use agentrl_testkit::with_body;
use axum::Router;
use serde_json::{Value, json};

/// The execution id the fixtures carry in their paths.
const FIXTURE_ID: &str = "0192f1a0-0000-7000-8000-000000000001";

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(&format!("rewards/{name}")).unwrap()
}

/// The fixture aimed at execution `id`.
fn at(name: &str, id: &str) -> Value {
    serde_json::from_str(&fixture(name).to_string().replace(FIXTURE_ID, id)).unwrap()
}

async fn call(app: &Router, event: &Value) -> (u16, Value) {
    agentrl_testkit::invoke_json(app, event).await.unwrap()
}

fn lambda_app(stores: &Stores) -> Router {
    let options = AppOptions {
        metrics: Metrics::Off,
        idempotency: Some(stores.table.clone()),
        body_limit: MAX_BODY_BYTES,
        ..agentrl_http::lambda::options("rewards")
    };
    app(
        vec![service(RewardState::new(
            stores.table.clone(),
            stores.objects.clone(),
            stores.evaluations.clone(),
            std::sync::Arc::new(agentrl_rewards::Provider::new(None, None)),
        ))],
        options,
    )
}

#[tokio::test]
async fn every_fixture_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let app = lambda_app(&stores);

    let (status, created) = call(&app, &fixture("create-execution.json")).await;
    assert_eq!(status, 201, "{created}");
    let id = created["execution_id"].as_str().unwrap().to_owned();
    let (status, execution) = call(&app, &at("get-execution.json", &id)).await;
    assert_eq!(status, 200);
    assert_eq!(
        (execution["agent_id"].as_str(), execution["output"].as_str()),
        (Some("coder-7"), Some("42"))
    );
    let (status, missing) = call(&app, &fixture("get-execution.json")).await;
    assert_eq!(status, 404, "{missing}");

    let (status, verification) = call(&app, &at("verify.json", &id)).await;
    assert_eq!(status, 201, "{verification}");
    assert_eq!(verification["method"], "answer_match");
    assert_eq!(verification["value"], 1.0);
    assert!(verification["verifier_version"].as_str().is_some());

    let (status, reward) = call(&app, &at("reward.json", &id)).await;
    assert_eq!(status, 200, "{reward}");
    assert_eq!(reward["reward"], 1.0);
    assert_eq!(reward["example_type"], "positive");
    assert_eq!(
        reward["verifications"][0]["verification_id"],
        verification["verification_id"]
    );

    let (status, page) = call(&app, &fixture("list-examples.json")).await;
    assert_eq!(status, 200);
    assert_eq!(page["examples"][0]["execution_id"], id.as_str());
    assert_eq!(
        page["examples"][0]["prompt"],
        "What is 6 * 7? Answer with a number."
    );
    let (status, lines) =
        agentrl_testkit::invoke(&app, &fixture("export-examples.json").to_string())
            .await
            .unwrap();
    assert_eq!(status, 200);
    let lines = String::from_utf8(lines.to_vec()).unwrap();
    let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(
        (first["type"].as_str(), first["reward"].as_f64()),
        (Some("positive"), Some(1.0))
    );

    let (status, defaults) = call(&app, &fixture("get-config.json")).await;
    assert_eq!(status, 200);
    assert_eq!(defaults["examples"]["positive"], 0.7);
    let (status, put) = call(&app, &fixture("put-config.json")).await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(put["business_metrics"]["revenue"]["max"], 1000.0);
    let bad = json!({"examples": {"positive": 0.2, "negative": 0.6}});
    let (status, problem) = call(&app, &with_body(fixture("put-config.json"), &bad)).await;
    assert_eq!(status, 400, "{problem}");
    assert!(
        problem["field"].as_str().unwrap().starts_with("examples"),
        "{problem}"
    );

    // Business metrics are normalised by the configuration just put.
    let metrics =
        json!({"method": "business_metrics", "metrics": {"revenue": 500.0, "conversion": 0.1}});
    let (status, v) = call(&app, &with_body(at("verify.json", &id), &metrics)).await;
    assert_eq!(status, 201, "{v}");
    assert!((v["value"].as_f64().unwrap() - 0.5).abs() < 1e-9, "{v}");
    let unknown = json!({"method": "business_metrics", "metrics": {"churn": 0.1}});
    let (status, problem) = call(&app, &with_body(at("verify.json", &id), &unknown)).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("metrics.churn")),
        "{problem}"
    );

    // Judges: the settings round-trip without a key; with no provider a gate escalates.
    let (status, judges) = call(&app, &fixture("get-judge-config.json")).await;
    assert_eq!(
        (status, judges["base_url"].clone()),
        (200, Value::Null),
        "{judges}"
    );
    let local = json!({"base_url": null, "fallback": "rules"});
    let (status, put) = call(&app, &with_body(fixture("put-judge-config.json"), &local)).await;
    assert_eq!(
        (status, put["fallback"].as_str()),
        (200, Some("rules")),
        "{put}"
    );
    let (status, put) = call(&app, &fixture("put-judge-config.json")).await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(put["prices"]["gpt-4.1"]["output_per_million"], 8.0);
    let leaky = json!({"api_key": "sk-live-1"});
    let (status, problem) = call(&app, &with_body(fixture("put-judge-config.json"), &leaky)).await;
    assert_eq!(status, 400, "{problem}");
    let ssrf = json!({"base_url": "http://169.254.169.254/latest"});
    let (status, problem) = call(&app, &with_body(fixture("put-judge-config.json"), &ssrf)).await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("base_url")),
        "{problem}"
    );
    call(&app, &with_body(fixture("put-judge-config.json"), &local)).await;
    let (status, gate) = call(&app, &fixture("check-gate.json")).await;
    assert_eq!(status, 200, "{gate}");
    assert_eq!(gate["decision"], "escalate_to_human");
    assert_eq!(gate["judgment"]["source"], "abstained");
    assert!(
        gate["reasons"]
            .as_str()
            .unwrap()
            .contains("no judge provider"),
        "{gate}"
    );
    for (artifact, why) in [
        ("\u{feff} \n\t".to_owned(), "blank"),
        ("é".repeat(100_001), "too long"),
    ] {
        let body = json!({"artifact": artifact});
        let (status, problem) = call(&app, &with_body(fixture("check-gate.json"), &body)).await;
        assert_eq!(
            (status, problem["field"].as_str()),
            (400, Some("artifact")),
            "{why}: {problem}"
        );
    }
    let (status, _) = call(
        &app,
        &with_body(
            fixture("check-gate.json"),
            &json!({"artifact": "é".repeat(100_000)}),
        ),
    )
    .await;
    assert_eq!(
        status, 200,
        "100,000 characters are within the limit, whatever their bytes"
    );

    // An evaluation is accepted for an existing execution and queued.
    let (status, accepted) = call(&app, &at("create-evaluation.json", &id)).await;
    assert_eq!(status, 202, "{accepted}");
    assert_eq!(accepted["status"], "queued");
    assert_eq!(
        accepted["progress"]["total"], 6,
        "checks, tests, diff and three judges"
    );
    let evaluation = accepted["evaluation_id"].as_str().unwrap();
    let (status, shown) = call(&app, &at("get-evaluation.json", evaluation)).await;
    assert_eq!(
        (status, shown["execution_id"].as_str()),
        (200, Some(id.as_str()))
    );
    let (status, listed) = call(&app, &fixture("list-evaluations.json")).await;
    assert_eq!(
        (status, listed["evaluations"][0]["evaluation_id"].as_str()),
        (200, Some(evaluation))
    );
    let (status, change) = call(&app, &at("get-evaluation-change.json", evaluation)).await;
    let sent: Value =
        serde_json::from_str(fixture("create-evaluation.json")["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        (status, &change["before"]),
        (200, &sent["change"]["before"])
    );
    assert_eq!(
        stores
            .evaluations
            .receive(
                10,
                std::time::Duration::from_secs(1),
                std::time::Duration::ZERO
            )
            .await
            .unwrap()
            .len(),
        1
    );
    let (status, missing) = call(&app, &fixture("create-evaluation.json")).await;
    assert_eq!(
        (status, missing["field"].as_str()),
        (404, Some("execution_id")),
        "{missing}"
    );
    let no_change = json!({"execution_id": id, "task_type": "code"});
    let (status, problem) = call(
        &app,
        &with_body(fixture("create-evaluation.json"), &no_change),
    )
    .await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("change")),
        "{problem}"
    );
    let bad_tests = json!({"execution_id": id, "task_type": "text", "tests": {"tests_passed": 3}});
    let (status, problem) = call(
        &app,
        &with_body(fixture("create-evaluation.json"), &bad_tests),
    )
    .await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (400, Some("tests.tests_total")),
        "{problem}"
    );
    let (status, usage) = call(&app, &fixture("judge-usage.json")).await;
    assert_eq!(
        (status, usage["total"]["judgments"].as_u64()),
        (200, Some(0)),
        "{usage}"
    );
}
