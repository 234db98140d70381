//! The training service on AWS, against moto over HTTP: runs submitted to AWS Batch
//! (`SubmitJob` in moto's non-Docker mode), once per inputs; cancelled with `TerminateJob`;
//! followed through Batch's job-state events (the EventBridge fixture) to a registered model
//! version and a promotion; and the stack's training-queue consumer starting runs from
//! `training.dataset.ready` and dead-lettering what is not an event.

use std::sync::Arc;

use agentrl_core::privacy::{Pseudonymizer, TENANT};
use agentrl_core::training::placement::GpuClass;
use agentrl_training::{
    Launcher, TrainingConsumer, TrainingState,
    launch::{BatchLauncher, BatchSettings},
};
use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_with_launcher, trainer_output};

const SECRET: &[u8] = b"a test secret of enough bytes";

/// The EventBridge fixture, for the job `job_id` of run `run` now in `status`.
fn job_state(run: &str, job_id: &str, status: &str) -> Value {
    let mut event = agentrl_testkit::fixture("training/batch-job-state.json").unwrap();
    let detail = &mut event["detail"];
    detail["status"] = json!(status);
    detail["jobId"] = json!(job_id);
    detail["jobName"] = json!(run);
    detail["tags"] = json!({"agentrl_tenant": "tenant-a", "agentrl_run": run});
    detail["parameters"] = detail["tags"].clone();
    event
}

async fn setup(s: &Stack) {
    let pseudonym = Pseudonymizer::new(SECRET)
        .unwrap()
        .pseudonym(TENANT, "tenant-a");
    let manifest =
        json!({"schema_version": 1, "agents": [{"agent_id": "coder-7", "selected": true}]});
    for dataset in ["2026-11-24-0a1b2c3d4e5f", "2026-11-25-0a1b2c3d4e5f"] {
        let path = format!("datasets/tenant={pseudonym}/{dataset}/manifest.json");
        s.stores
            .objects
            .put(&path, manifest.to_string().into())
            .await
            .unwrap();
    }
    let qwen = agentrl_testkit::fixture("training/base-model-config.json").unwrap();
    let mut seven = qwen.clone();
    for (key, value) in [
        ("hidden_size", 3584),
        ("intermediate_size", 18_944),
        ("num_hidden_layers", 28),
        ("num_attention_heads", 28),
        ("num_key_value_heads", 4),
    ] {
        seven[key] = json!(value);
    }
    seven["tie_word_embeddings"] = json!(false);
    for (name, config) in [("tiny", qwen), ("qwen2.5-7b", seven)] {
        s.stores
            .objects
            .put(
                &format!("models/{name}/config.json"),
                config.to_string().into(),
            )
            .await
            .unwrap();
    }
    let (status, agent) = s
        .a(
            "POST",
            "/v1/agents",
            Some(&json!({"agent_id": "coder-7", "name": "Coder",
            "type": "coding", "model": {"provider": "self-hosted", "name": "tiny"},
            "base_model": "tiny", "auto_train": {"seed": 3}})),
        )
        .await;
    assert_eq!(status, 201, "{agent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_on_aws_batch() {
    let (stores, settings, resources) = agentrl_tests::aws_stores_on().await;
    let (batch, queues, definition) =
        agentrl_tests::batch_resources(&settings, &["gpu24", "h100"]).await;
    let class = |name: &str, gpu_memory_gb: f64, queue: &str, instance_type: &str| GpuClass {
        name: name.into(),
        gpu_memory_gb,
        disk_gb: 500.0,
        host_memory_mib: 60_000,
        vcpus: 4,
        queue: queue.into(),
        instance_type: instance_type.into(),
    };
    let launcher: Arc<dyn Launcher> = Arc::new(BatchLauncher::new(
        &settings,
        BatchSettings {
            classes: vec![
                class("gpu24", 22.0, &queues[0], "g6.xlarge"),
                class("h100", 79.0, &queues[1], "p5.48xlarge"),
            ],
            job_definition: definition,
            bucket: resources.bucket.clone(),
        },
    ));
    let queue = queues[0].clone();
    let s = spawn_with_launcher(stores.clone(), launcher.clone()).await;
    setup(&s).await;
    let body = json!({"agent_id": "coder-7", "dataset_id": "2026-11-24-0a1b2c3d4e5f", "config": {"seed": 1}});
    let (status, run) = s.a("POST", "/v1/training-runs", Some(&body)).await;
    assert_eq!(status, 201, "{run}");
    let (id, job_id) = (
        run["run_id"].as_str().unwrap().to_owned(),
        run["job"]["job_id"].as_str().unwrap().to_owned(),
    );
    assert_eq!(
        (
            run["job"]["launcher"].as_str(),
            run["job"]["instance_type"].as_str(),
            run["job"]["gpu_class"].as_str(),
        ),
        (Some("batch"), Some("g6.xlarge"), Some("gpu24")),
        "a 0.5B model's full fine-tuning fits a 24 GB GPU: {run}"
    );
    assert!(
        run["job"]["planned_peak_gb"]
            .as_f64()
            .is_some_and(|gb| gb > 8.0 && gb < 22.0),
        "{run}"
    );
    let (status, again) = s.a("POST", "/v1/training-runs", Some(&body)).await;
    assert_eq!(
        (status, again["job"]["job_id"].as_str()),
        (200, Some(job_id.as_str())),
        "no second job"
    );

    // The plan picks the GPU before a job exists: a 7B model's full fine-tuning fits none (a
    // 400 with the largest class's plan), its LoRA over the whole 32k context goes to the
    // 80 GB class; a config or a model the trainer would refuse is refused here.
    let seven = |config: Value| {
        json!({"agent_id": "coder-7", "dataset_id": "2026-11-25-0a1b2c3d4e5f",
            "base_model": "qwen2.5-7b", "config": config})
    };
    let (status, refused) = s
        .a("POST", "/v1/training-runs", Some(&seven(json!({}))))
        .await;
    assert_eq!(
        (status, refused["field"].as_str()),
        (400, Some("config")),
        "{refused}"
    );
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains("fits no GPU class")
            && detail.contains("h100")
            && detail.contains("peak_gb"),
        "{detail}"
    );
    let lora = json!({"lora": {"rank": 16, "alpha": 32, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}});
    let (status, big) = s.a("POST", "/v1/training-runs", Some(&seven(lora))).await;
    assert_eq!(
        (
            status,
            big["job"]["gpu_class"].as_str(),
            big["job"]["instance_type"].as_str()
        ),
        (201, Some("h100"), Some("p5.48xlarge")),
        "{big}"
    );
    let big_job = big["job"]["job_id"].as_str().unwrap();
    let described = batch.describe_jobs().jobs(big_job).send().await.unwrap();
    assert!(
        described.jobs()[0]
            .job_queue()
            .is_some_and(|q| q.ends_with(&queues[1])),
        "{described:?}"
    );
    let (status, typo) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(&seven(json!({"grpo": {"learning_rat": 1e-6}}))),
        )
        .await;
    assert!(
        status == 400
            && typo["field"]
                .as_str()
                .is_some_and(|f| f.starts_with("config.grpo")),
        "{typo}"
    );
    assert!(
        typo["detail"].as_str().unwrap().contains("learning_rat"),
        "{typo}"
    );
    let (status, patched) = s
        .a(
            "PATCH",
            "/v1/agents/coder-7",
            Some(&json!({"auto_train": {"grpo": {"group_size": 1}}})),
        )
        .await;
    assert_eq!(
        (status, patched["field"].as_str()),
        (400, Some("auto_train.grpo.group_size")),
        "an agent's auto_train is the trainer's config, checked as such: {patched}"
    );
    let mut gemma = agentrl_testkit::fixture("training/base-model-config.json").unwrap();
    gemma["model_type"] = json!("gemma2");
    s.stores
        .objects
        .put("models/gemma/config.json", gemma.to_string().into())
        .await
        .unwrap();
    let (status, unknown) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(
                &json!({"agent_id": "coder-7", "dataset_id": "2026-11-25-0a1b2c3d4e5f",
                "base_model": "gemma"}),
            ),
        )
        .await;
    assert_eq!(
        (status, unknown["field"].as_str()),
        (400, Some("base_model")),
        "{unknown}"
    );
    assert!(
        unknown["detail"]
            .as_str()
            .unwrap()
            .contains("model_type: gemma2"),
        "{unknown}"
    );

    let jobs = batch.describe_jobs().jobs(&job_id).send().await.unwrap();
    let job = &jobs.jobs()[0];
    assert_eq!(job.job_name(), Some(id.as_str()));
    assert!(
        job.job_queue().is_some_and(|q| q.ends_with(&queue)),
        "{:?}",
        job.job_queue()
    );
    let tags = job.tags().unwrap();
    assert_eq!(
        (
            tags["agentrl_tenant"].as_str(),
            tags["agentrl_run"].as_str()
        ),
        ("tenant-a", id.as_str())
    );
    let command = job.container().unwrap().command().join(" ");
    let out = format!(
        "s3://{}/{}",
        resources.bucket,
        run["artifacts"]["output"].as_str().unwrap()
    );
    assert!(
        command.starts_with(&format!(
            "train run --model s3://{}/models/tiny/ --dataset s3://",
            resources.bucket
        )),
        "{command}"
    );
    assert!(
        command.contains(&format!("--out {out} --config-json {{\"seed\":1}}")),
        "{command}"
    );
    let listed = batch
        .list_jobs()
        .job_queue(&queue)
        .job_status(aws_sdk_batch::types::JobStatus::Succeeded)
        .send()
        .await
        .unwrap();
    let named: Vec<_> = listed
        .job_summary_list()
        .iter()
        .filter(|j| j.job_name() == Some(id.as_str()))
        .collect();
    assert_eq!(named.len(), 1, "one job per run");

    // Batch's events drive the run: running, then succeeded with the trainer's output.
    let training = TrainingState::new(
        stores.table.clone(),
        stores.objects.clone(),
        launcher.clone(),
        Arc::new(Pseudonymizer::new(SECRET).unwrap()),
    );
    let consumer = TrainingConsumer::new(training, stores.training.clone());
    assert!(
        consumer
            .batch_state_change(&job_state(&id, &job_id, "RUNNING"))
            .await
            .unwrap()
    );
    let (_, running) = s.a("GET", &format!("/v1/training-runs/{id}"), None).await;
    assert_eq!(running["status"], "running", "{running}");
    let mut dataset_job = job_state(&id, &job_id, "FAILED");
    dataset_job["detail"]["tags"]["agentrl_kind"] = json!("dataset");
    assert!(
        !consumer.batch_state_change(&dataset_job).await.unwrap(),
        "a dataset build's job on the shared CPU queue is not a run's"
    );
    let (_, still) = s.a("GET", &format!("/v1/training-runs/{id}"), None).await;
    assert_eq!(still["status"], "running", "{still}");
    trainer_output(
        &s.stores,
        run["artifacts"]["output"].as_str().unwrap(),
        false,
    )
    .await;
    assert!(
        consumer
            .batch_state_change(&job_state(&id, &job_id, "SUCCEEDED"))
            .await
            .unwrap()
    );
    assert!(
        !consumer
            .batch_state_change(&job_state(&id, &job_id, "SUCCEEDED"))
            .await
            .unwrap(),
        "a repeated event changes nothing"
    );
    assert!(
        !consumer
            .batch_state_change(&job_state(&id, &job_id, "FAILED"))
            .await
            .unwrap(),
        "a late failure cannot undo a success"
    );
    let (_, done) = s.a("GET", &format!("/v1/training-runs/{id}"), None).await;
    assert_eq!(
        (done["status"].as_str(), done["model_version"].as_str()),
        (Some("succeeded"), Some("v1")),
        "{done}"
    );
    assert!(
        done["cost_estimate_usd"].as_f64().is_some_and(|c| c >= 0.0),
        "{done}"
    );
    assert_eq!(done["progress"]["fraction"], 1.0);
    let (_, versions) = s.a("GET", "/v1/agents/coder-7/versions", None).await;
    let v1 = &versions["versions"][0];
    assert_eq!(
        (
            v1["evaluation"]["reward"].as_f64(),
            v1["base_evaluation"]["reward"].as_f64()
        ),
        (Some(0.7), Some(0.4))
    );
    assert_eq!(v1["model_prefix"], run["artifacts"]["output"]);

    // The gate compares v1 with the base model on the same set; a strict gate refuses.
    let (status, _) = s
        .a(
            "PUT",
            "/v1/config/promotion-gate",
            Some(&json!({"min_reward_gain": 0.5})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, refused) = s
        .a("POST", &format!("/v1/training-runs/{id}/promote"), None)
        .await;
    assert_eq!(status, 409, "{refused}");
    let check = &refused["decision"]["checks"][0];
    assert_eq!(
        (
            check["candidate"].as_f64(),
            check["deployed"].as_f64(),
            check["bound"].as_f64()
        ),
        (Some(0.7), Some(0.4), Some(0.9)),
        "{refused}"
    );
    let (status, _) = s
        .a("PUT", "/v1/config/promotion-gate", Some(&json!({})))
        .await;
    assert_eq!(status, 200);
    let (status, promoted) = s
        .a(
            "POST",
            &format!("/v1/training-runs/{id}/promote"),
            Some(&json!({"percent": 20})),
        )
        .await;
    assert_eq!(
        (status, promoted["canary"]["percent"].as_f64()),
        (200, Some(20.0)),
        "{promoted}"
    );
    // Both decisions are kept, newest first: the canary the gate let through, and the refusal
    // with the same numbers as its answer.
    let decisions = s
        .pages(
            "/v1/agents/coder-7/gate-decisions",
            "decisions",
            &s.key_a,
            1,
        )
        .await;
    let summary: Vec<_> = decisions
        .iter()
        .map(|d| {
            (
                d["decision"]["passed"].as_bool(),
                d["percent"].as_f64(),
                d["version"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (Some(true), Some(20.0), Some("v1")),
            (Some(false), Some(100.0), Some("v1"))
        ]
    );
    assert_eq!(decisions[1]["decision"], refused["decision"]);
    assert_eq!(decisions[1]["run_id"], id.as_str());
    let (status, ..) = s
        .send(
            "GET",
            "/v1/agents/coder-7/gate-decisions",
            Some(&s.key_b),
            None,
        )
        .await;
    assert_eq!(status, 404, "another tenant's agent");
    // The canary arm's live figures, as reported by the agent platform, per version.
    let served = json!({"outcomes": [
        {"version": "v1", "reward": 0.5},
        {"version": "v1", "reward": 1.0, "safety_violation": true},
        {"version": "v1", "reward": -0.3, "reward_hacking": true},
        {"version": "v1", "reward": 0.6},
    ]});
    let (status, arms) = s
        .a("POST", "/v1/agents/coder-7/outcomes", Some(&served))
        .await;
    assert_eq!(status, 200, "{arms}");
    let (status, versions) = s.a("GET", "/v1/agents/coder-7/versions", None).await;
    assert_eq!(status, 200, "{versions}");
    let live = &versions["versions"][0]["live"];
    let mut arm = arms["arms"][0].clone();
    let arm = arm.as_object_mut().unwrap();
    assert_eq!(arm.remove("version"), Some(json!("v1")));
    assert_eq!(live, &Value::Object(arm.clone()), "{versions}");
    assert_eq!(
        (
            live["stats"]["outcomes"].as_u64(),
            live["safety_violation_rate"].as_f64(),
            live["reward_hacking_rate"].as_f64(),
        ),
        (Some(4), Some(0.25), Some(0.25)),
        "{live}"
    );
    assert!((live["reward_mean"].as_f64().unwrap() - 0.45).abs() < 1e-9);
    let (status, promoted) = s
        .a("POST", &format!("/v1/training-runs/{id}/promote"), None)
        .await;
    assert_eq!(
        (status, promoted["deployed_version"].as_str()),
        (200, Some("v1")),
        "{promoted}"
    );

    // A run from v1 on another dataset, cancelled: Batch is told to terminate its job.
    let (status, second) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(&json!({"agent_id": "coder-7", "dataset_id": "2026-11-25-0a1b2c3d4e5f"})),
        )
        .await;
    assert_eq!(
        (status, second["base"]["name"].as_str()),
        (201, Some("v1")),
        "{second}"
    );
    assert!(second["job"]["job_id"].as_str().is_some());
    let (status, cancelled) = s
        .a(
            "POST",
            &format!(
                "/v1/training-runs/{}/cancel",
                second["run_id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled")),
        "{cancelled}"
    );

    // The training queue: a ready dataset starts the auto-train run (here: the one created
    // above, found again, not a second job); what is not an event goes to the dead-letter queue.
    let fixture = agentrl_testkit::fixture("training/sqs-batch.json").unwrap();
    let pseudonym = Pseudonymizer::new(SECRET)
        .unwrap()
        .pseudonym(TENANT, "tenant-a");
    for record in fixture["Records"].as_array().unwrap() {
        let body = record["body"]
            .as_str()
            .unwrap()
            .replace("c5cb867d175875163e6be3357503454b", &pseudonym);
        stores.training.send(&body).await.unwrap();
    }
    // A message from a newer producer than this build reads is not taken for an older one.
    let newer = json!({"version": 99, "type": "training.dataset.ready", "tenant": pseudonym,
        "dataset_id": "from-the-future"});
    stores.training.send(&newer.to_string()).await.unwrap();
    // The stack's own consumer drains the training queue, as the SQS trigger does on AWS.
    let mut dead = Vec::new();
    for _ in 0..100 {
        dead = stores.training.dead_letters(10).await.unwrap();
        let (_, runs) = s.a("GET", "/v1/training-runs?agent_id=coder-7", None).await;
        let triggered = runs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["trigger"] == "dataset.ready");
        if dead.len() >= 2 && triggered {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mut reasons: Vec<&str> = dead.iter().map(|d| d.reason.as_str()).collect();
    reasons.sort_unstable();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].starts_with("envelope version 99 is not supported")
            && reasons[1].starts_with("not an event"),
        "{reasons:?}"
    );
    let (_, runs) = s.a("GET", "/v1/training-runs?agent_id=coder-7", None).await;
    let triggered: Vec<&Value> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["trigger"] == "dataset.ready")
        .collect();
    assert_eq!(triggered.len(), 1, "{runs}");
    assert_eq!(triggered[0]["config"], json!({"seed": 3}));
    assert_eq!(
        triggered[0]["base"]["name"], "v1",
        "runs start from the deployed version"
    );
    s.stop().await;
}
