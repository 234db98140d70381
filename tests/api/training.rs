//! The training service over the local stack, on SQLite and on DynamoDB (moto): the agents
//! registry, training runs (created once, launched as child processes, cancelled, failed),
//! promotion refusals, routing, outcomes and tenant isolation. The jobs run a stand-in
//! trainer (see `helpers::stand_in_trainer`); `cli/tests/training.rs` trains for real.

use std::time::Duration;

use agentrl_core::privacy::{Pseudonymizer, TENANT};
use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack, spawn_stack_in};

/// A dataset and a base model where the training service looks for them (the dataset job and
/// an operator put them there in production).
pub(crate) async fn fixtures(s: &Stack, tenant: &str, dataset: &str) {
    let p = Pseudonymizer::new(b"a test secret of enough bytes").unwrap();
    let manifest = json!({"schema_version": 1, "dataset_id": dataset, "agents": [
        {"agent_id": "coder-7", "selected": true}
    ]});
    let path = format!(
        "datasets/tenant={}/{dataset}/manifest.json",
        p.pseudonym(TENANT, tenant)
    );
    s.stores
        .objects
        .put(&path, manifest.to_string().into())
        .await
        .unwrap();
    crate::helpers::put_base_model(&s.stores, "tiny").await;
}

async fn wait_for(s: &Stack, run: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let (code, v) = s.a("GET", &format!("/v1/training-runs/{run}"), None).await;
        assert_eq!(code, 200, "{v}");
        if v["status"] == status {
            return v;
        }
        last = v;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {run} never became {status}: {last}");
}

async fn registry(s: &Stack) {
    let agent = json!({"agent_id": "coder-7", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_prompt": "You fix bugs.",
        "base_model": "tiny"});
    let (status, created) = s.a("POST", "/v1/agents", Some(&agent)).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        (
            created["version"].as_u64(),
            created["active"].as_bool(),
            &created["deployed_version"]
        ),
        (Some(1), Some(true), &Value::Null)
    );
    let (status, again) = s.a("POST", "/v1/agents", Some(&agent)).await;
    assert_eq!(
        (status, again["field"].as_str()),
        (409, Some("agent_id")),
        "{again}"
    );
    let (status, bad) = s
        .a(
            "POST",
            "/v1/agents",
            Some(&json!({"agent_id": "a b", "name": "x", "type": "t",
            "model": {"provider": "p", "name": "n"}})),
        )
        .await;
    assert_eq!(
        (status, bad["field"].as_str()),
        (400, Some("agent_id")),
        "{bad}"
    );
    let (status, bad) = s
        .a(
            "POST",
            "/v1/agents",
            Some(&json!({"name": "x", "type": "t",
            "model": {"provider": "p", "name": "n"}, "base_model": "../secrets"})),
        )
        .await;
    assert_eq!(
        (status, bad["field"].as_str()),
        (400, Some("base_model")),
        "{bad}"
    );
    let (status, generated) = s
        .a(
            "POST",
            "/v1/agents",
            Some(&json!({"name": "Helper", "type": "support",
            "model": {"provider": "openai", "name": "gpt-4o-mini"}})),
        )
        .await;
    assert_eq!(status, 201, "{generated}");
    assert_eq!(
        generated["agent_id"].as_str().unwrap().len(),
        36,
        "a UUID is assigned"
    );

    let (status, page) = s.a("GET", "/v1/agents?limit=1", None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["agents"].as_array().unwrap().len(), 1);
    let cursor = page["next_cursor"].as_str().expect("a second page");
    let (_, rest) = s
        .a("GET", &format!("/v1/agents?limit=1&cursor={cursor}"), None)
        .await;
    assert_eq!(rest["agents"].as_array().unwrap().len(), 1, "{rest}");
    let (status, bad) = s.a("GET", "/v1/agents?cursor=zz", None).await;
    assert_eq!((status, bad["field"].as_str()), (400, Some("cursor")));

    let (status, patched) = s
        .a(
            "PATCH",
            "/v1/agents/coder-7",
            Some(&json!({"name": "Coder II", "base_prompt": "Fix bugs well."})),
        )
        .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(
        (patched["name"].as_str(), patched["version"].as_u64()),
        (Some("Coder II"), Some(2))
    );
    assert_eq!(patched["base_model"], "tiny", "absent fields stay");
    let (status, bad) = s
        .a(
            "PATCH",
            "/v1/agents/coder-7",
            Some(&json!({"deployed_version": "v9"})),
        )
        .await;
    assert_eq!(
        status, 400,
        "the deployed version changes by promotion only: {bad}"
    );

    let (status, _, _) = s
        .send("GET", "/v1/agents/coder-7", Some(&s.key_b), None)
        .await;
    assert_eq!(status, 404, "another tenant's agent");
    let (status, _, _) = s
        .send(
            "PATCH",
            "/v1/agents/coder-7",
            Some(&s.key_b),
            Some(&json!({"name": "x"})),
        )
        .await;
    assert_eq!(status, 404);
}

async fn runs(s: &Stack) {
    fixtures(s, "tenant-a", "2026-11-24-abc").await;
    let run = |config: Value| json!({"agent_id": "coder-7", "dataset_id": "2026-11-24-abc", "config": config});
    let (status, missing) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(&json!({"agent_id": "nobody", "dataset_id": "2026-11-24-abc"})),
        )
        .await;
    assert_eq!(status, 404, "{missing}");
    let (status, missing) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(&json!({"agent_id": "coder-7", "dataset_id": "2026-01-01-none"})),
        )
        .await;
    assert_eq!(
        (status, missing["detail"].as_str()),
        (404, Some("dataset not found"))
    );
    let (status, missing) = s
        .a("POST", "/v1/training-runs", Some(&json!({"agent_id": "coder-7", "dataset_id": "2026-11-24-abc", "base_model": "nope"})))
        .await;
    assert_eq!(
        (status, missing["detail"].as_str()),
        (404, Some("base model not found"))
    );
    let (status, bad) = s
        .a("POST", "/v1/training-runs", Some(&run(json!([1]))))
        .await;
    assert_eq!((status, bad["field"].as_str()), (400, Some("config")));

    let traversal = json!({"agent_id": "coder-7", "dataset_id": "../tenant=someone-else"});
    let (status, bad) = s.a("POST", "/v1/training-runs", Some(&traversal)).await;
    assert_eq!(
        (status, bad["field"].as_str()),
        (400, Some("dataset_id")),
        "{bad}"
    );

    // Another tenant with an agent of the same id cannot reach this tenant's dataset.
    let agent_b = json!({"agent_id": "coder-7", "name": "B", "type": "coding",
        "model": {"provider": "p", "name": "n"}, "base_model": "tiny"});
    let (status, _, _) = s
        .send("POST", "/v1/agents", Some(&s.key_b), Some(&agent_b))
        .await;
    assert_eq!(status, 201);
    let (status, other, _) = s
        .send(
            "POST",
            "/v1/training-runs",
            Some(&s.key_b),
            Some(&run(json!({}))),
        )
        .await;
    assert_eq!(
        (status, other["detail"].as_str()),
        (404, Some("dataset not found")),
        "{other}"
    );

    let (status, created) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(&run(
                json!({"seed": 1, "grpo": {"steps": 5, "group_size": 4}}),
            )),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["run_id"].as_str().unwrap().to_owned();
    assert_eq!(created["base"], json!({"kind": "model", "name": "tiny"}));
    assert_eq!(created["job"]["launcher"], "local");
    let (status, same) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(&run(
                json!({"grpo": {"group_size": 4, "steps": 5}, "seed": 1}),
            )),
        )
        .await;
    assert_eq!(
        (status, same["run_id"].as_str()),
        (200, Some(id.as_str())),
        "one run per inputs"
    );

    let running = wait_for(s, &id, "running").await;
    assert!(running["started_at_ms"].as_u64().is_some(), "{running}");
    assert_eq!(running["progress"]["steps_total"], 5);
    assert_eq!(running["cost_estimate_usd"], 0.0, "local runs cost nothing");
    let (status, _, _) = s
        .send(
            "GET",
            &format!("/v1/training-runs/{id}"),
            Some(&s.key_b),
            None,
        )
        .await;
    assert_eq!(status, 404, "another tenant's run");
    // No body and a JSON `null` are the same request: a promotion with the defaults.
    for body in [None, Some(&Value::Null)] {
        let (status, refused) = s
            .a("POST", &format!("/v1/training-runs/{id}/promote"), body)
            .await;
        assert_eq!(status, 409, "{body:?}: {refused}");
    }

    let (status, listed) = s.a("GET", "/v1/training-runs?agent_id=coder-7", None).await;
    assert_eq!(status, 200);
    assert!(
        listed["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["run_id"] == id.as_str()),
        "{listed}"
    );
    let (_, others, _) = s
        .send("GET", "/v1/training-runs", Some(&s.key_b), None)
        .await;
    assert_eq!(others["runs"], json!([]));

    let (status, cancelled) = s
        .a("POST", &format!("/v1/training-runs/{id}/cancel"), None)
        .await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled")),
        "{cancelled}"
    );
    let (status, again) = s
        .a("POST", &format!("/v1/training-runs/{id}/cancel"), None)
        .await;
    assert_eq!(status, 409, "{again}");

    // A job that fails: the run is failed with the trainer's words, and has nothing to promote.
    let (status, created) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(&run(json!({"grpo": {"stop": ["fail"]}}))),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let failing = created["run_id"].as_str().unwrap();
    let failed = wait_for(s, failing, "failed").await;
    assert!(
        failed["reason"]
            .as_str()
            .unwrap()
            .contains("stand-in trainer failed as asked"),
        "{failed}"
    );
    let (status, refused) = s
        .a(
            "POST",
            &format!("/v1/training-runs/{failing}/promote"),
            None,
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    let (status, _) = s
        .a("POST", &format!("/v1/training-runs/{failing}/cancel"), None)
        .await;
    assert_eq!(status, 409, "a finished run cannot be cancelled");

    // Its log's end, as the trainer wrote it; bounded; the tenant's own only.
    let logs = format!("/v1/training-runs/{failing}/logs");
    let (status, tail) = s.a("GET", &logs, None).await;
    assert_eq!(status, 200, "{tail}");
    assert_eq!(
        (&tail["lines"], &tail["location"]),
        (&json!(["stand-in trainer failed as asked"]), &Value::Null)
    );
    for bad in ["0", "2001", "x"] {
        let (status, problem) = s.a("GET", &format!("{logs}?lines={bad}"), None).await;
        assert_eq!(status, 400, "{bad}: {problem}");
    }
    let (status, ..) = s.send("GET", &logs, Some(&s.key_b), None).await;
    assert_eq!(status, 404, "another tenant's run");
}

async fn routing_and_outcomes(s: &Stack) {
    let (status, route) = s
        .a("GET", "/v1/agents/coder-7/route?key=user-1", None)
        .await;
    assert_eq!(status, 200, "{route}");
    assert_eq!(
        (&route["version"], route["arm"].as_str()),
        (&Value::Null, Some("deployed"))
    );
    let (status, bad) = s.a("GET", "/v1/agents/coder-7/route", None).await;
    assert_eq!((status, bad["field"].as_str()), (400, Some("key")));
    let (status, _) = s.a("GET", "/v1/agents/nobody/route?key=k", None).await;
    assert_eq!(status, 404);
    let (status, bad) = s
        .a(
            "POST",
            "/v1/agents/coder-7/outcomes",
            Some(&json!({"outcomes": [{"version": "v1", "reward": 3.0}]})),
        )
        .await;
    assert_eq!(
        (status, bad["field"].as_str()),
        (400, Some("outcomes[0].reward"))
    );
    let (status, missing) = s
        .a(
            "POST",
            "/v1/agents/coder-7/outcomes",
            Some(&json!({"outcomes": [{"version": "v1", "reward": 0.5}]})),
        )
        .await;
    assert_eq!(
        (status, missing["detail"].as_str()),
        (404, Some("model version not found"))
    );
    let (status, versions) = s.a("GET", "/v1/agents/coder-7/versions", None).await;
    assert_eq!((status, &versions["versions"]), (200, &json!([])));

    let (status, gate) = s.a("GET", "/v1/config/promotion-gate", None).await;
    assert_eq!(
        (status, gate["min_live_outcomes"].as_u64()),
        (200, Some(50)),
        "{gate}"
    );
    let (status, bad) = s
        .a(
            "PUT",
            "/v1/config/promotion-gate",
            Some(&json!({"min_reward_gain": 5.0})),
        )
        .await;
    assert_eq!(
        (status, bad["field"].as_str()),
        (400, Some("min_reward_gain")),
        "{bad}"
    );
}

async fn training_end_to_end(s: Stack) {
    registry(&s).await;
    runs(&s).await;
    routing_and_outcomes(&s).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn training_on_sqlite() {
    training_end_to_end(spawn_stack().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn training_on_dynamodb() {
    training_end_to_end(spawn_aws_stack().await).await;
}

/// The starts the stand-in trainer noted for a run's output prefix.
fn starts(dir: &std::path::Path, output: &str) -> usize {
    std::fs::read_to_string(dir.join("objects").join(output).join("starts"))
        .map_or(0, |text| text.lines().count())
}

/// Waits (10 s at most) until the stand-in trainer noted `n` starts of the run.
async fn wait_for_starts(dir: &std::path::Path, output: &str, n: usize) {
    for _ in 0..100 {
        if starts(dir, output) >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(starts(dir, output), n);
}

/// Stopping the local stack mid-run leaves the run `running`; the next start launches it
/// again (the trainer resumes from its newest checkpoint), so no run stays `running` with
/// nothing behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_local_run_is_launched_again_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = spawn_stack_in(dir.path()).await;
    registry(&s).await;
    fixtures(&s, "tenant-a", "2026-11-24-abc").await;
    let body =
        json!({"agent_id": "coder-7", "dataset_id": "2026-11-24-abc", "config": {"seed": 9}});
    let (status, run) = s.a("POST", "/v1/training-runs", Some(&body)).await;
    assert_eq!(status, 201, "{run}");
    let id = run["run_id"].as_str().unwrap().to_owned();
    let output = run["artifacts"]["output"].as_str().unwrap().to_owned();
    wait_for(&s, &id, "running").await;
    wait_for_starts(dir.path(), &output, 1).await;
    s.stop().await;

    let s = spawn_stack_in(dir.path()).await;
    wait_for_starts(dir.path(), &output, 2).await;
    let (_, resumed) = s.a("GET", &format!("/v1/training-runs/{id}"), None).await;
    assert_eq!(resumed["status"], "running", "{resumed}");
    let (status, cancelled) = s
        .a("POST", &format!("/v1/training-runs/{id}/cancel"), None)
        .await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled"))
    );
    s.stop().await;
}

/// The loop closed by the learning signal on the local stack: trajectories, then feedback
/// that qualifies the agent; the on-demand update asks for a dataset, `serve`'s dataset
/// consumer builds it on the projection's counts, and the ready dataset starts the agent's
/// auto-train run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_request_from_learning_starts_a_run() {
    let s = spawn_stack().await;
    crate::helpers::put_base_model(&s.stores, "tiny").await;
    let agent = json!({"agent_id": "coder-7", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_model": "tiny",
        "auto_train": {"seed": 5}});
    let (status, created) = s.a("POST", "/v1/agents", Some(&agent)).await;
    assert_eq!(status, 201, "{created}");
    for i in 0..4 {
        let trajectory = json!({"trajectory_id": format!("t-{i}"), "agent_id": "coder-7",
            "conversation_id": format!("c-{i}"),
            "turns": [{"role": "user", "content": format!("fix bug {i} in the pager")},
                      {"role": "assistant", "content": format!("fixed bug {i}: off by one")}],
            "final_outcome": {"success": true, "reward": 0.9}});
        let (status, _) = s.a("POST", "/v1/trajectories", Some(&trajectory)).await;
        assert_eq!(status, 202);
    }
    let thresholds = json!({"dataset": {"min_positive": 1, "min_high_quality": 1},
        "policy": {"update_threshold": 1000}});
    let (status, _) = s.a("PUT", "/v1/config/learning", Some(&thresholds)).await;
    assert_eq!(status, 200);
    let now = agentrl_store::clock::now_ms_i64();
    let events = json!([
        {"event_id": "r-1", "type": "ai.message.reply", "agent_id": "coder-7", "user_id": "alice",
         "occurred_at_ms": now - 2_000, "message_id": "m-1", "traits": {"verbosity": 0.6}},
        {"event_id": "f-1", "type": "feedback.created", "agent_id": "coder-7", "user_id": "alice",
         "occurred_at_ms": now - 1_000, "value": 0.9, "source_id": "m-1"},
    ]);
    let (status, _) = s.a("POST", "/v1/events", Some(&events)).await;
    assert_eq!(status, 202);

    let mut requested = Value::Null;
    for _ in 0..100 {
        let (_, report) = s
            .a("POST", "/v1/agents/coder-7/learning/update", None)
            .await;
        if report["dataset_requested"] == true {
            requested = report;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(requested["dataset_requested"], true, "never requested");

    let mut runs = Value::Null;
    for _ in 0..150 {
        let (_, page) = s.a("GET", "/v1/training-runs?agent_id=coder-7", None).await;
        if page["runs"].as_array().is_some_and(|r| !r.is_empty()) {
            runs = page;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let run = &runs["runs"][0];
    assert_eq!(run["config"]["seed"], 5, "the auto-train run: {runs}");
    let dataset = run["dataset_id"].as_str().unwrap();
    let partition = Pseudonymizer::new(b"a test secret of enough bytes")
        .unwrap()
        .pseudonym(TENANT, "tenant-a");
    let manifest = s
        .stores
        .objects
        .get(&format!(
            "datasets/tenant={partition}/{dataset}/manifest.json"
        ))
        .await
        .unwrap()
        .unwrap();
    let manifest: Value = serde_json::from_slice(&manifest).unwrap();
    assert_eq!(
        manifest["agents"],
        json!([{"agent_id": "coder-7", "episodes": 4, "positive_feedback": 1,
                "high_quality_interactions": 1, "counts_from": "learning", "selected": true}])
    );
    s.stop().await;
}

/// The tenant's datasets, listed newest first from their manifests and read one by one; only
/// its own.
async fn datasets_are_listed(s: Stack) {
    let p = Pseudonymizer::new(b"a test secret of enough bytes").unwrap();
    let put = |tenant: &str, id: &str, rows: u64| {
        let manifest = json!({"schema_version": 4, "dataset_id": id, "created_at_ms": rows,
            "counts": {"train_rows": rows, "validation_rows": 1},
            "files": {"train": {"path": "x", "bytes": 100, "sha256": "a"},
                      "validation": {"path": "y", "bytes": 20, "sha256": "b"}},
            "content_hash": format!("hash-{id}")});
        let path = format!(
            "datasets/tenant={}/{id}/manifest.json",
            p.pseudonym(TENANT, tenant)
        );
        (path, manifest)
    };
    let mut written = Vec::new();
    for (tenant, id, rows) in [
        ("tenant-a", "2026-11-20-aaa", 10),
        ("tenant-a", "2026-11-27-bbb", 20),
        ("tenant-a", "2026-11-28-ccc", 30),
        ("tenant-b", "2026-11-28-ddd", 40),
    ] {
        let (path, manifest) = put(tenant, id, rows);
        s.stores
            .objects
            .put(&path, manifest.to_string().into())
            .await
            .unwrap();
        // A data file beside it is not a dataset of its own.
        s.stores
            .objects
            .put(&path.replace("manifest.json", "train.parquet"), "p".into())
            .await
            .unwrap();
        written.push(manifest);
    }
    let listed = s.pages("/v1/datasets", "datasets", &s.key_a, 2).await;
    let ids: Vec<&str> = listed
        .iter()
        .map(|d| d["dataset_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["2026-11-28-ccc", "2026-11-27-bbb", "2026-11-20-aaa"]);
    assert_eq!(
        (
            &listed[0]["counts"]["train_rows"],
            &listed[0]["bytes"],
            &listed[0]["files"]
        ),
        (&json!(30), &json!(120), &json!(["train", "validation"]))
    );
    let (status, manifest) = s.a("GET", "/v1/datasets/2026-11-27-bbb", None).await;
    assert_eq!((status, &manifest), (200, &written[1]));

    let theirs = s.pages("/v1/datasets", "datasets", &s.key_b, 100).await;
    assert_eq!(theirs.len(), 1);
    for (id, key) in [
        ("2026-11-28-ddd", &s.key_a),
        ("2026-11-28-ccc", &s.key_b),
        ("..", &s.key_a),
        ("nope", &s.key_a),
    ] {
        let (status, ..) = s
            .send("GET", &format!("/v1/datasets/{id}"), Some(key), None)
            .await;
        assert_eq!(status, 404, "{id}");
    }
    s.stop().await;
}

#[tokio::test]
async fn datasets_on_sqlite() {
    datasets_are_listed(spawn_stack().await).await;
}

#[tokio::test]
async fn datasets_on_dynamodb() {
    datasets_are_listed(spawn_aws_stack().await).await;
}
