//! `s3://` locations against moto on 127.0.0.1: the model is read from a prefix, the output
//! mirrored to one after every checkpoint (multipart uploads; the `keep_checkpoints` newest
//! kept there too), a job restarted after an interruption resumes from what it uploaded (as
//! AWS Batch retries a Spot-interrupted job), and a finished run keeps its weights, not its
//! optimizer state.

mod common;

use std::path::Path;
use std::process::Command;

use agentrl_store::ObjectStoreObjects;
use agentrl_store::aws::{AwsSettings, create_bucket};
use agentrl_store::ports::Objects;

/// The moto server `infra/scripts/test.sh` started (loopback only).
fn moto_endpoint() -> String {
    let endpoint = std::env::var("AGENTRL_MOTO_ENDPOINT")
        .expect("AGENTRL_MOTO_ENDPOINT is unset: run infra/scripts/test.sh");
    assert!(
        endpoint.starts_with("http://127.0.0.1:") || endpoint.starts_with("http://[::1]:"),
        "{endpoint}"
    );
    endpoint
}

fn train(args: &[&str], endpoint: &str) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_train"))
        .args(args)
        .env("AGENTRL_AWS_ENDPOINT", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_read_and_write_s3_prefixes_and_resume_from_them() {
    let endpoint = moto_endpoint();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let bucket = format!("train-{}-{nanos}", std::process::id());
    create_bucket(&endpoint, &bucket).await.unwrap();
    let objects = ObjectStoreObjects::s3(&bucket, &AwsSettings::emulator(&endpoint)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    common::write_model(&model, "qwen2", true, 9);
    for f in ["config.json", "model.safetensors", "tokenizer.json"] {
        objects
            .put(
                &format!("models/tiny/{f}"),
                std::fs::read(model.join(f)).unwrap().into(),
            )
            .await
            .unwrap();
    }
    let prompts = dir.path().join("prompts.jsonl");
    std::fs::write(&prompts, "{\"prompt\": \"Q:1+1\\n\", \"answer\": \"2\"}\n{\"prompt\": \"Q:2+1\\n\", \"answer\": \"3\"}\n").unwrap();
    let config = dir.path().join("config.json");
    // Shards of at most 20 kB: the outputs are several files and an index.
    std::fs::write(&config, r#"{"checkpoint_every": 1, "max_shard_size": "20KB", "sft": {"epochs": 0}, "grpo": {"group_size": 2, "batch_prompts": 1, "max_new_tokens": 3}}"#).unwrap();
    let model_url = format!("s3://{bucket}/models/tiny");
    let out_url = format!("s3://{bucket}/runs/r1");
    let p = |x: &Path| x.to_str().unwrap().to_owned();
    let args = [
        "run",
        "--model",
        &model_url,
        "--prompts",
        &p(&prompts),
        "--out",
        &out_url,
        "--config",
        &p(&config),
        "--steps",
        "3",
    ];

    let (ok, _, stderr) = train(&[&args[..], &["--stop-after", "2"]].concat(), &endpoint);
    assert!(ok, "{stderr}");
    let keys = |listed: Vec<agentrl_store::ports::ObjectMeta>| {
        listed.into_iter().map(|m| m.path).collect::<Vec<_>>()
    };
    let uploaded = keys(objects.list("runs/r1/").await.unwrap());
    assert!(
        uploaded
            .iter()
            .any(|k| k.ends_with("grpo-000000-000002/state.json")),
        "{uploaded:?}"
    );
    assert!(
        !uploaded.iter().any(|k| k.ends_with("run.json")),
        "an interrupted run must not look finished"
    );
    // Two checkpoints were written: with keep_checkpoints 2 both are there; the next one
    // deletes the oldest from S3 too.
    let states = |keys: &[String]| {
        keys.iter()
            .filter(|k| k.contains("/checkpoints/") && k.ends_with("/state.json"))
            .count()
    };
    assert_eq!(states(&uploaded), 2, "{uploaded:?}");

    let (ok, stdout, stderr) = train(&args, &endpoint);
    assert!(ok, "{stderr}");
    let run: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(run["grpo_steps"], 3);
    let metrics = String::from_utf8(
        objects
            .get("runs/r1/metrics.jsonl")
            .await
            .unwrap()
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert_eq!(
        metrics
            .lines()
            .filter(|l| !l.contains("eval_success"))
            .count(),
        3,
        "the resumed run continued at step 3: {metrics}"
    );
    let finished = keys(objects.list("runs/r1/").await.unwrap());
    assert_eq!(
        states(&finished),
        0,
        "keep_after_finish: weights deletes the checkpoints: {finished:?}"
    );
    let shards = finished
        .iter()
        .filter(|k| k.contains("/model-") && k.ends_with(".safetensors"))
        .count();
    assert!(shards >= 2, "{finished:?}");
    for f in [
        "run.json",
        "model.safetensors.index.json",
        "config.json",
        "tokenizer.json",
        "plots/success.png",
    ] {
        assert!(
            objects
                .get(&format!("runs/r1/{f}"))
                .await
                .unwrap()
                .is_some(),
            "{f} not uploaded"
        );
    }

    let (ok, _, stderr) = train(
        &[
            "run",
            "--model",
            &format!("s3://{bucket}/models/none"),
            "--prompts",
            &p(&prompts),
            "--out",
            &p(&dir.path().join("o")),
        ],
        &endpoint,
    );
    assert!(!ok);
    assert!(stderr.contains("no objects under this prefix"), "{stderr}");
}

/// Between checkpoints the run's progress still reaches S3: `metrics.jsonl` is mirrored every
/// `progress_every_s` (here after every line), so the training service's GET of a run sees
/// steps while no checkpoint exists yet.
#[tokio::test(flavor = "multi_thread")]
async fn progress_reaches_s3_between_checkpoints() {
    let endpoint = moto_endpoint();
    let bucket = format!("progress-{}", std::process::id());
    create_bucket(&endpoint, &bucket).await.unwrap();
    let objects = ObjectStoreObjects::s3(&bucket, &AwsSettings::emulator(&endpoint)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    common::write_model(&model, "qwen2", true, 9);
    let prompts = dir.path().join("prompts.jsonl");
    std::fs::write(&prompts, "{\"prompt\": \"Q:1+1\\n\", \"answer\": \"2\"}\n").unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"checkpoint_every": 0, "progress_every_s": 0, "sft": {"epochs": 0}, "grpo": {"group_size": 2, "batch_prompts": 1, "max_new_tokens": 3}}"#).unwrap();
    // Far more steps than the test waits for: it is stopped once progress is seen.
    let mut child = Command::new(env!("CARGO_BIN_EXE_train"))
        .args(["run", "--model"])
        .arg(&model)
        .arg("--prompts")
        .arg(&prompts)
        .args(["--out", &format!("s3://{bucket}/runs/p1"), "--config"])
        .arg(&config)
        .args(["--steps", "100000"])
        .env("AGENTRL_AWS_ENDPOINT", &endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut steps = 0;
    for _ in 0..600 {
        if let Some(bytes) = objects.get("runs/p1/metrics.jsonl").await.unwrap() {
            steps = String::from_utf8_lossy(&bytes)
                .lines()
                .filter(|l| l.contains("\"phase\":\"grpo\"") && !l.contains("eval_"))
                .count();
            if steps >= 2 {
                break;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the trainer ended before the test saw its progress"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let listed = objects.list("runs/p1/").await.unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(steps >= 2, "no progress in S3 after 60 s");
    assert!(
        listed
            .iter()
            .all(|m| !m.path.contains("checkpoints/") && !m.path.ends_with("run.json")),
        "progress came without a checkpoint: {listed:?}"
    );
}
