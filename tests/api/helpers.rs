//! `spawn_stack()`: the local stack on a random port over a fresh store, with two tenants.

use agentrl::stack::{self, Running};
use agentrl_core::TenantId;
use agentrl_core::training::{
    Evaluation, GateCounts, Metrics as RunMetrics, ModelSummary, RunOutcome, RunReport, SftCounts,
    Validation,
};
use agentrl_http::{Auth, Metrics};
use agentrl_store::Stores;
use std::path::Path;

use serde_json::{Value, json};
use tempfile::TempDir;

pub struct Stack {
    pub base: String,
    pub key_a: String,
    pub key_b: String,
    pub http: reqwest::Client,
    /// The stores the stack runs on, for tests that look behind the API.
    pub stores: Stores,
    running: Option<Running>,
    dir: Option<TempDir>,
}

pub async fn spawn_stack() -> Stack {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::embedded(dir.path()).unwrap();
    let launch = stand_in_trainer(dir.path());
    spawn_launching(stores, Some(dir), launch).await
}

/// The stack on the embedded store in `dir` (kept after the stack stops, for a restart).
pub async fn spawn_stack_in(dir: &Path) -> Stack {
    let stores = Stores::embedded(dir).unwrap();
    spawn_launching(stores, None, stand_in_trainer(dir)).await
}

pub async fn spawn_aws_stack() -> Stack {
    spawn_on(agentrl_tests::aws_stores().await).await
}

/// The stack on `stores` (AWS adapters through a fault proxy, say).
pub async fn spawn_on(stores: Stores) -> Stack {
    let dir = tempfile::tempdir().unwrap();
    let launch = stand_in_trainer(dir.path());
    spawn_launching(stores, Some(dir), launch).await
}

/// The stack on `stores`, its training jobs started by `launcher`.
pub async fn spawn_with_launcher(
    stores: Stores,
    launcher: std::sync::Arc<dyn agentrl_training::Launcher>,
) -> Stack {
    spawn_launching(stores, None, stack::Launch::Remote(launcher)).await
}

async fn spawn_launching(stores: Stores, dir: Option<TempDir>, launch: stack::Launch) -> Stack {
    let key_a = format!("key-a-{}", uuid::Uuid::new_v4());
    let key_b = format!("key-b-{}", uuid::Uuid::new_v4());
    let auth = Auth::api_keys([
        (TenantId::parse("tenant-a").unwrap(), key_a.clone()),
        (TenantId::parse("tenant-b").unwrap(), key_b.clone()),
    ]);
    let pseudonyms = std::sync::Arc::new(
        agentrl_core::privacy::Pseudonymizer::new(b"a test secret of enough bytes").unwrap(),
    );
    let running = stack::start(
        "127.0.0.1:0".parse().unwrap(),
        stores.clone(),
        auth,
        Metrics::Off,
        pseudonyms,
        launch,
    )
    .await
    .unwrap();
    Stack {
        base: format!("http://{}", running.addr),
        key_a,
        key_b,
        http: reqwest::Client::new(),
        stores,
        running: Some(running),
        dir,
    }
}

/// Training jobs of the API tests: a stand-in for `agentrl train run` (the demo trains for
/// real; only it finds the `agentrl` binary). It notes each start in a `starts` file of the
/// run's output directory (under `root/objects`, as the trainer writes there), then runs
/// until stopped, or exits 3 at once when the job's config holds `"fail"`, or exits 0 once the
/// test wrote the run's output ([`trainer_output`]) when it holds `"finish"`: the service's run
/// life cycle (queued, running, cancelled, failed, resumed after a restart) is tested
/// against a real child process.
fn stand_in_trainer(root: &Path) -> stack::Launch {
    let script = r#"all="$*"
while [ $# -gt 0 ]; do [ "$1" = "--out" ] && out="$2"; shift; done
mkdir -p "$out" && echo started >> "$out/starts"
case "$all" in *fail*) echo "stand-in trainer failed as asked" >&2; exit 3;; esac
case "$all" in *finish*) while [ ! -f "$out/run.json" ]; do sleep 0.05; done; exit 0;; esac
exec sleep 120"#;
    stack::Launch::Local {
        command: (
            "sh".into(),
            vec!["-c".into(), script.into(), "stand-in-trainer".into()],
        ),
        storage: agentrl_training::launch::Storage::Dir(root.join("objects")),
        logs: root.join("training-logs"),
    }
}

impl Stack {
    /// The data directory of a stack on a fresh embedded store.
    pub fn data_dir(&self) -> &Path {
        self.dir
            .as_ref()
            .expect("a stack on a fresh embedded store")
            .path()
    }

    pub async fn send(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, Value, reqwest::header::HeaderMap) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value, headers)
    }

    pub async fn a(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let (s, v, _) = self.send(method, path, Some(&self.key_a), body).await;
        (s, v)
    }

    /// The same as tenant B.
    pub async fn b(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let (s, v, _) = self.send(method, path, Some(&self.key_b), body).await;
        (s, v)
    }

    /// Every item of the listing at `path` (items under `field`), as `key` sees it, read
    /// `limit` at a time by following `next_cursor`.
    pub async fn pages(&self, path: &str, field: &str, key: &str, limit: usize) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{path}?limit={limit}");
            if let Some(c) = &cursor {
                url.push_str(&format!(
                    "&cursor={}",
                    agentrl_http::query::encode_component(c)
                ));
            }
            let (status, page, _) = self.send("GET", &url, Some(key), None).await;
            assert_eq!(status, 200, "{page}");
            items.extend(page[field].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return items,
            }
        }
    }

    pub async fn create(&self, description: &str, complexity: Option<&str>) -> Value {
        let mut body = serde_json::json!({"task_id": "t-1", "task": {"description": description}});
        if let Some(c) = complexity {
            body["complexity"] = Value::from(c);
        }
        let (s, v) = self.a("POST", "/v1/budgets", Some(&body)).await;
        assert_eq!(s, 201, "{v}");
        v
    }

    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.stop().await.unwrap();
        }
    }
}

/// Puts a shared base model's `config.json` under `models/<name>/`: Qwen2.5-0.5B's, as its
/// repository has it (the service reads it to plan the run).
pub async fn put_base_model(stores: &Stores, name: &str) {
    let config = agentrl_testkit::fixture("training/base-model-config.json").unwrap();
    stores
        .objects
        .put(
            &format!("models/{name}/config.json"),
            config.to_string().into(),
        )
        .await
        .unwrap();
}

/// What a finished trainer leaves under the run's output prefix (its contract, tested with the
/// trainer itself in `cli/tests/training.rs`): full weights, or with `lora` a PEFT adapter.
pub async fn trainer_output(stores: &Stores, output: &str, lora: bool) {
    let eval = |reward: f64| Evaluation {
        validation_set: "vs-1".into(),
        reward,
        safety_violation_rate: 0.0,
        trajectories: 12,
        groups: 4,
    };
    let report = RunReport {
        base_model_sha256: "ab12".into(),
        dataset_content_hash: "cd34".into(),
        tokenizer_sha256: "ef56".into(),
        config: json!({}),
        model: ModelSummary {
            architectures: vec!["Qwen2ForCausalLM".into()],
            hidden_size: 8,
            num_hidden_layers: 1,
            vocab_size: 16,
            trainable_parameters: 300,
            lora,
        },
        sft_steps: 0,
        grpo_steps: 5,
        sft: SftCounts::default(),
        final_metrics: Some(RunMetrics {
            step: 5,
            phase: "grpo".into(),
            loss: 0.1,
            ..RunMetrics::default()
        }),
        wall_time_s: 1.0,
        peak_rss_mb: None,
        device: "Cpu".into(),
        trainer_version: "0".into(),
        outcome: RunOutcome::Dataset {
            gate: GateCounts::default(),
            validation: Validation {
                before: Some(eval(0.4)),
                after: Some(eval(0.7)),
            },
        },
    };
    let weights = if lora {
        [
            (
                "adapter_config.json",
                r#"{"peft_type": "LORA", "r": 8}"#.to_owned(),
            ),
            ("adapter_model.safetensors", "adapter".to_owned()),
        ]
    } else {
        [
            (
                "config.json",
                agentrl_testkit::fixture("training/base-model-config.json")
                    .unwrap()
                    .to_string(),
            ),
            ("model.safetensors", "weights".to_owned()),
        ]
    };
    // run.json last: a finished trainer writes it once everything else is in place.
    for (name, body) in weights.into_iter().chain([
        (
            "metrics.jsonl",
            "{\"step\":5,\"phase\":\"grpo\",\"loss\":0.1}\n".to_owned(),
        ),
        ("run.json", serde_json::to_string(&report).unwrap()),
    ]) {
        stores
            .objects
            .put(&format!("{output}{name}"), body.into())
            .await
            .unwrap();
    }
}
