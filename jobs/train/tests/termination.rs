//! SIGTERM (a Spot reclaim, an instance drain): the `train` process stops at a step boundary,
//! writes a checkpoint of where it is (a small model's fits the stop window), exits with the
//! status the Batch job definitions retry, and the retried command resumes and finishes.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Metrics lines of GRPO steps written so far.
fn grpo_lines(out: &Path) -> usize {
    std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["phase"] == "grpo" && m.get("eval_success").is_none())
        .count()
}

#[test]
fn sigterm_checkpoints_exits_to_be_retried_and_the_retry_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    common::write_model(&model, "qwen2", true, 4);
    let prompts = dir.path().join("prompts.jsonl");
    let lines: String = (1..=12)
        .map(|a| {
            format!(
                "{}\n",
                json!({"prompt": format!("Q:{a}+1\n"), "answer": format!("{}", a + 1)})
            )
        })
        .collect();
    std::fs::write(&prompts, lines).unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        r#"{"seed": 2, "checkpoint_every": 0, "eval_every": 0,
            "grpo": {"learning_rate": 1e-3, "group_size": 4, "batch_prompts": 2,
                     "max_new_tokens": 4, "dynamic_sampling": false}}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = |steps: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_train"));
        c.arg("run")
            .arg("--model")
            .arg(&model)
            .arg("--prompts")
            .arg(&prompts)
            .arg("--out")
            .arg(&out)
            .arg("--config")
            .arg(&config)
            .args(["--steps", steps])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    // Far more steps than the test waits for: it stops only on the signal.
    let mut child = run("100000").spawn().unwrap();
    let started = Instant::now();
    while grpo_lines(&out) < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no GRPO step in two minutes"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(75), "{stderr}");
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert!(
        !out.join("run.json").exists(),
        "a stopped run must not look finished"
    );
    // The checkpoint is where the run stopped: its steps are the metrics' steps.
    let done = grpo_lines(&out) as u64;
    let checkpoints: Vec<Value> = std::fs::read_dir(out.join("checkpoints"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("state.json")).ok())
        .map(|t| serde_json::from_str(&t).unwrap())
        .collect();
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    assert_eq!(checkpoints[0]["grpo_step"].as_u64(), Some(done));

    // The retry (same command, fewer steps to finish quickly) resumes there.
    let target = done + 2;
    let output = run(&target.to_string()).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["grpo_steps"].as_u64(), Some(target));
    assert_eq!(grpo_lines(&out) as u64, target, "no step was taken twice");
}
