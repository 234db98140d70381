//! Handler tests driven by the fixtures in `events/training/`: each API Gateway event goes
//! through the Lambda app exactly as in Lambda, over a real SQLite database and object
//! directory; jobs are queued for a local runner that is not started (the API tests run them).

use std::sync::Arc;

use agentrl_core::privacy::{Pseudonymizer, TENANT};
use agentrl_http::{AppOptions, Metrics, app};
use agentrl_store::Stores;
use agentrl_training::{LocalLauncher, TrainingState, service};
use axum::Router;
use serde_json::{Value, json};

/// The run id the fixtures carry in their paths.
const FIXTURE_RUN: &str = "run-0123456789abcdef01234567";
const SECRET: &[u8] = b"a test secret of enough bytes";

fn fixture(name: &str) -> Value {
    agentrl_testkit::fixture(&format!("training/{name}")).unwrap()
}

/// The fixture aimed at run `id`.
fn at(name: &str, id: &str) -> Value {
    serde_json::from_str(&fixture(name).to_string().replace(FIXTURE_RUN, id)).unwrap()
}

async fn call(app: &Router, event: &Value) -> (u16, Value) {
    agentrl_testkit::invoke_json(app, event).await.unwrap()
}

#[tokio::test]
async fn every_fixture_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    // Jobs queue up for a runner this test does not start (the API tests run them).
    let (launcher, _jobs) = LocalLauncher::new(dir.path().join("training-logs"));
    let state = TrainingState::new(
        stores.table.clone(),
        stores.objects.clone(),
        Arc::new(launcher),
        Arc::new(Pseudonymizer::new(SECRET).unwrap()),
    );
    let options = AppOptions {
        metrics: Metrics::Off,
        idempotency: Some(stores.table.clone()),
        ..agentrl_http::lambda::options("training")
    };
    let app = app(vec![service(state)], options);
    let pseudonym = Pseudonymizer::new(SECRET)
        .unwrap()
        .pseudonym(TENANT, "tenant-a");
    let manifest = format!("datasets/tenant={pseudonym}/2026-11-24-0a1b2c3d4e5f/manifest.json");
    stores.objects.put(&manifest, "{}".into()).await.unwrap();
    stores
        .objects
        .put(
            "models/qwen2.5-0.5b/config.json",
            fixture("base-model-config.json").to_string().into(),
        )
        .await
        .unwrap();

    let (status, agent) = call(&app, &fixture("create-agent.json")).await;
    assert_eq!(status, 201, "{agent}");
    let (status, agent) = call(&app, &fixture("get-agent.json")).await;
    assert_eq!(
        (status, agent["base_model"].as_str()),
        (200, Some("qwen2.5-0.5b"))
    );
    let (status, page) = call(&app, &fixture("list-agents.json")).await;
    assert_eq!(
        (status, page["agents"][0]["agent_id"].as_str()),
        (200, Some("coder-7"))
    );
    let (status, patched) = call(&app, &fixture("patch-agent.json")).await;
    assert_eq!(
        (
            status,
            patched["name"].as_str(),
            patched["version"].as_u64()
        ),
        (200, Some("Coder II"), Some(2))
    );
    let (status, versions) = call(&app, &fixture("list-versions.json")).await;
    assert_eq!((status, &versions["versions"]), (200, &json!([])));
    let (status, decisions) = call(&app, &fixture("list-gate-decisions.json")).await;
    assert_eq!((status, &decisions["decisions"]), (200, &json!([])));
    let (status, route) = call(&app, &fixture("route.json")).await;
    assert_eq!(
        (status, route["arm"].as_str()),
        (200, Some("deployed")),
        "{route}"
    );
    let (status, outcomes) = call(&app, &fixture("post-outcomes.json")).await;
    assert_eq!(status, 404, "no version v1 yet: {outcomes}");

    let (status, run) = call(&app, &fixture("create-run.json")).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "queued");
    let id = run["run_id"].as_str().unwrap().to_owned();
    let (status, missing) = call(&app, &fixture("get-run.json")).await;
    assert_eq!(status, 404, "{missing}");
    let (status, read) = call(&app, &at("get-run.json", &id)).await;
    assert_eq!((status, read["run_id"].as_str()), (200, Some(id.as_str())));
    let (status, datasets) = call(&app, &fixture("list-datasets.json")).await;
    assert_eq!(
        (status, datasets["datasets"].as_array().map(Vec::len)),
        (200, Some(1)),
        "{datasets}"
    );
    let (status, manifest) = call(&app, &fixture("get-dataset.json")).await;
    assert_eq!((status, manifest), (200, serde_json::json!({})));
    let (status, tail) = call(&app, &at("get-run-logs.json", &id)).await;
    assert_eq!(
        (status, &tail["lines"]),
        (200, &serde_json::json!([])),
        "the job is queued, not started: {tail}"
    );
    let (status, curves) = call(&app, &at("get-run-metrics.json", &id)).await;
    assert_eq!(
        (
            status,
            curves["total"].as_u64(),
            curves["points"].as_array().map(Vec::len)
        ),
        (200, Some(0), Some(0)),
        "no metrics before the trainer writes any: {curves}"
    );
    let (status, runs) = call(&app, &fixture("list-runs.json")).await;
    assert_eq!(
        (status, runs["runs"][0]["run_id"].as_str()),
        (200, Some(id.as_str()))
    );
    let (status, cancelled) = call(&app, &at("cancel-run.json", &id)).await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled"))
    );
    let (status, refused) = call(&app, &at("promote-run.json", &id)).await;
    assert_eq!(status, 409, "{refused}");

    let (status, gate) = call(&app, &fixture("put-config.json")).await;
    assert_eq!(status, 200, "{gate}");
    let (status, gate) = call(&app, &fixture("get-config.json")).await;
    assert_eq!((status, gate["require_live"].as_bool()), (200, Some(true)));

    let (status, kpis) = call(&app, &fixture("get-kpis.json")).await;
    assert_eq!(status, 200, "{kpis}");
    assert_eq!(
        (kpis["from"].as_str(), kpis["to"].as_str()),
        (Some("2026-11-18"), Some("2026-11-24"))
    );
    assert_eq!(kpis["kpis"]["counts"]["trajectories"], 0);

    let (status, alarms) = call(&app, &fixture("put-kpi-alarms.json")).await;
    assert_eq!(status, 200, "{alarms}");
    let (status, alarms) = call(&app, &fixture("get-kpi-alarms.json")).await;
    assert_eq!(
        (status, alarms["alarms"][0]["name"].as_str()),
        (200, Some("completion-low"))
    );
    let (status, states) = call(&app, &fixture("get-kpi-alarm-states.json")).await;
    assert_eq!(status, 200, "{states}");
    // Nothing counted in the fixture's week: a rate has no data on any of its 7 days.
    let days = states["alarms"][0]["days"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(days.len(), 7, "{states}");
    assert!(
        days.iter().all(|d| d["state"] == "INSUFFICIENT_DATA"),
        "{states}"
    );

    let (status, opt_in) = call(&app, &fixture("get-federation.json")).await;
    assert_eq!((status, opt_in["enabled"].as_bool()), (200, Some(false)));
    let (status, opt_in) = call(&app, &fixture("put-federation.json")).await;
    assert_eq!(
        (status, opt_in["enabled"].as_bool()),
        (200, Some(true)),
        "{opt_in}"
    );
    let (status, rounds) = call(&app, &fixture("list-federation-rounds.json")).await;
    assert_eq!(
        (status, rounds["rounds"].as_array().map(Vec::len)),
        (200, Some(0))
    );
}
