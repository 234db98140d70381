//! Serving what training produced, against a scripted vLLM-like upstream on 127.0.0.1: a
//! promotion loads the version's adapter (`/v1/load_lora_adapter`) before any session is
//! routed to it, a refused load blocks the promotion with the upstream's reason, full weights
//! wait for a deployment that lists them, versions no longer routed are unloaded, and
//! `agentrl models sync` copies adapters where the upstream reads them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Parser;
use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_stack, trainer_output};

#[derive(Clone, Default)]
struct Upstream {
    /// Every adapter call: (path, body).
    calls: Arc<Mutex<Vec<(String, Value)>>>,
    refuse: Arc<AtomicBool>,
    /// What `/v1/models` lists besides the base model.
    deployed: Arc<Mutex<Vec<String>>>,
    /// The `model` of every chat call.
    chats: Arc<Mutex<Vec<String>>>,
}

async fn load(State(u): State<Upstream>, Json(body): Json<Value>) -> Response {
    u.calls.lock().unwrap().push(("load".into(), body.clone()));
    if u.refuse.load(Ordering::SeqCst) {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"object": "error", "message": "No adapter found for /mnt/adapters: the path does not exist"})),
        )
            .into_response();
    }
    "Success: LoRA adapter loaded successfully.".into_response()
}

async fn unload(State(u): State<Upstream>, Json(body): Json<Value>) -> Response {
    u.calls.lock().unwrap().push(("unload".into(), body));
    "Success: LoRA adapter unloaded successfully.".into_response()
}

async fn models(State(u): State<Upstream>) -> Json<Value> {
    let ids = std::iter::once("qwen-tiny".to_owned()).chain(u.deployed.lock().unwrap().clone());
    Json(json!({"object": "list", "data": ids.map(|id| json!({"id": id})).collect::<Vec<_>>()}))
}

async fn chat(State(u): State<Upstream>, Json(body): Json<Value>) -> Json<Value> {
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    u.chats.lock().unwrap().push(model.clone());
    Json(
        json!({"id": "c", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "ok"}}]}),
    )
}

async fn start_upstream() -> (String, Upstream) {
    let u = Upstream::default();
    let app = axum::Router::new()
        .route("/v1/load_lora_adapter", post(load))
        .route("/v1/unload_lora_adapter", post(unload))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .with_state(u.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), u)
}

/// A run of coder-7 that finishes with `trainer_output` (`lora`: an adapter): its version.
pub(crate) async fn finished_run(s: &Stack, seed: u64, lora: bool) -> (String, String) {
    let body = json!({"agent_id": "coder-7", "dataset_id": "2026-11-24-abc",
        "config": {"seed": seed, "grpo": {"stop": ["finish"]}}});
    let (status, run) = s.a("POST", "/v1/training-runs", Some(&body)).await;
    assert_eq!(status, 201, "{run}");
    let id = run["run_id"].as_str().unwrap().to_owned();
    trainer_output(
        &s.stores,
        run["artifacts"]["output"].as_str().unwrap(),
        lora,
    )
    .await;
    for _ in 0..200 {
        let (_, r) = s.a("GET", &format!("/v1/training-runs/{id}"), None).await;
        if r["status"] == "succeeded" {
            return (id, r["model_version"].as_str().unwrap().to_owned());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {id} never succeeded");
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    sync: agentrl::models::SyncArgs,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn promotions_load_adapters_before_routing_and_unload_what_is_no_longer_routed() {
    let s = spawn_stack().await;
    let (base_url, upstream) = start_upstream().await;
    crate::training::fixtures(&s, "tenant-a", "2026-11-24-abc").await;
    let agent = json!({"agent_id": "coder-7", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_model": "tiny"});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);
    let config = json!({"base_url": base_url, "lora_dir": "/mnt/adapters"});
    let (status, shown) = s.a("PUT", "/v1/config/gateway", Some(&config)).await;
    assert_eq!((status, &shown["lora_dir"]), (200, &json!("/mnt/adapters")));

    let (run1, v1) = finished_run(&s, 1, true).await;
    assert_eq!(v1, "v1");
    let promote = |run: String, percent: u32| {
        let body = json!({"percent": percent});
        let s = &s;
        async move {
            s.a(
                "POST",
                &format!("/v1/training-runs/{run}/promote"),
                Some(&body),
            )
            .await
        }
    };

    // A load the upstream refuses blocks the promotion with its reason: nothing is routed.
    upstream.refuse.store(true, Ordering::SeqCst);
    let (status, refused) = promote(run1.clone(), 50).await;
    assert_eq!(status, 409, "{refused}");
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains("coder-7-v1") && detail.contains("No adapter found"),
        "{detail}"
    );
    let (_, agent) = s.a("GET", "/v1/agents/coder-7", None).await;
    assert_eq!(
        (&agent["canary"], &agent["deployed_version"]),
        (&Value::Null, &Value::Null)
    );

    // Loaded, then routed: half of the sessions go to the adapter, by its served name.
    upstream.refuse.store(false, Ordering::SeqCst);
    let (status, promoted) = promote(run1.clone(), 50).await;
    assert_eq!(status, 200, "{promoted}");
    assert_eq!(
        upstream.calls.lock().unwrap().last().unwrap(),
        &(
            "load".to_owned(),
            json!({"lora_name": "coder-7-v1", "lora_path": "/mnt/adapters/tenant-a/coder-7-v1"})
        )
    );
    for i in 0..16 {
        let path = format!("/gateway/coder-7/sessions/s-{i}/v1/chat/completions");
        let body = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(s.a("POST", &path, Some(&body)).await.0, 200);
    }
    let chats = upstream.chats.lock().unwrap().clone();
    let adapter = chats.iter().filter(|m| *m == "coder-7-v1").count();
    assert!(
        adapter > 0 && adapter < 16 && chats.iter().all(|m| m == "coder-7-v1" || m == "qwen-tiny"),
        "{chats:?}"
    );

    // Full weights cannot be loaded at run time: refused until a deployment lists them.
    let (run2, v2) = finished_run(&s, 2, false).await;
    assert_eq!(v2, "v2");
    let (status, refused) = promote(run2.clone(), 100).await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["detail"].as_str().unwrap().contains("full weights"),
        "{refused}"
    );
    upstream.deployed.lock().unwrap().push("coder-7-v2".into());
    let (status, promoted) = promote(run2, 100).await;
    assert_eq!(
        (status, promoted["deployed_version"].as_str()),
        (200, Some("v2")),
        "{promoted}"
    );
    // v1's canary is over: its adapter is unloaded.
    assert_eq!(
        upstream.calls.lock().unwrap().last().unwrap(),
        &("unload".to_owned(), json!({"lora_name": "coder-7-v1"}))
    );

    // The operator's copy: the adapter versions, where the upstream's lora_dir mounts.
    let dest = tempfile::tempdir().unwrap();
    let data_dir = s.data_dir().to_owned();
    let args = Cli::parse_from([
        "sync",
        "--dest",
        dest.path().to_str().unwrap(),
        "--tenant",
        "tenant-a",
        "--data-dir",
        data_dir.to_str().unwrap(),
    ]);
    agentrl::models::sync(&args.sync).await.unwrap();
    let copied = dest.path().join("tenant-a/coder-7-v1");
    assert_eq!(
        std::fs::read_to_string(copied.join("adapter_model.safetensors")).unwrap(),
        "adapter"
    );
    assert!(copied.join("adapter_config.json").is_file());
    assert!(
        !dest.path().join("tenant-a/coder-7-v2").exists(),
        "full weights are not an adapter"
    );
}
