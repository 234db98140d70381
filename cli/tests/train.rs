//! `agentrl train` as a user runs it: its contracts (flags, files, exit codes) on a tiny model.

mod support;

use support::agentrl;

use std::path::Path;

use agentrl_train::model::{Model, ModelConfig};
use agentrl_train::tokenizer::Tok;
use candle_core::{DType, Device};
use serde_json::{Value, json};

fn tiny_model(dir: &Path) {
    let tok = Tok::char_level("0123456789+:=\nAQ", &["<|endoftext|>"]).unwrap();
    let config = ModelConfig::tiny_qwen2(tok.vocab_size(), 16, 1, 2, 1)
        .unwrap()
        .with(&[("eos_token_id", json!(0))])
        .unwrap();
    Model::init(config, 1, DType::F32, &Device::Cpu)
        .unwrap()
        .save_hf(dir, u64::MAX)
        .unwrap();
    std::fs::write(dir.join("tokenizer.json"), tok.json()).unwrap();
}

#[test]
fn train_run_logprobs_and_bench_keep_their_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    tiny_model(&model);
    let s = |p: &Path| p.to_str().unwrap().to_owned();

    std::fs::write(
        dir.path().join("prompts.jsonl"),
        "{\"prompt\": \"Q:1+1=\", \"answer\": \"2\", \"match\": \"exact\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("sft.jsonl"),
        "{\"prompt\": \"Q:1+1=\", \"completion\": \"2\"}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("config.json"), r#"{"sft": {"epochs": 2, "learning_rate": 0.001, "batch_size": 1}, "grpo": {"group_size": 2, "batch_prompts": 1, "max_new_tokens": 3}}"#).unwrap();
    let out = dir.path().join("out");
    let (ok, stdout, stderr) = agentrl(&[
        "train",
        "run",
        "--model",
        &s(&model),
        "--prompts",
        &s(&dir.path().join("prompts.jsonl")),
        "--sft",
        &s(&dir.path().join("sft.jsonl")),
        "--out",
        &s(&out),
        "--config",
        &s(&dir.path().join("config.json")),
        "--steps",
        "0",
    ]);
    assert!(ok, "{stderr}");
    let run: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (run["sft_steps"].as_u64(), run["grpo_steps"].as_u64()),
        (Some(2), Some(0)),
        "--steps 0: the SFT phase alone"
    );
    for f in [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "metrics.jsonl",
        "run.json",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }

    std::fs::write(
        dir.path().join("in.jsonl"),
        "{\"prompt_ids\": [1, 2], \"response_ids\": [3, 4, 5]}\n",
    )
    .unwrap();
    let (ok, stdout, stderr) = agentrl(&[
        "train",
        "logprobs",
        "--model",
        &s(&out),
        "--input",
        &s(&dir.path().join("in.jsonl")),
    ]);
    assert!(ok, "{stderr}");
    let line: Value = serde_json::from_str(stdout.trim()).unwrap();
    let lp = line["logprobs"].as_array().unwrap();
    assert_eq!(lp.len(), 3);
    assert!(lp.iter().all(|x| x.as_f64().unwrap() < 0.0));

    let (ok, stdout, stderr) = agentrl(&[
        "train",
        "bench",
        "--model",
        &s(&model),
        "--batch",
        "2",
        "--seq",
        "8",
        "--iterations",
        "2",
    ]);
    assert!(ok, "{stderr}");
    let bench: Value = serde_json::from_str(stdout.trim()).unwrap();
    for key in ["tokens_per_s", "step_ms", "peak_rss_mb"] {
        assert!(bench[key].as_f64().unwrap() > 0.0, "{key}");
    }

    // The plan: one JSON object, from config.json alone; a run that cannot fit is refused with
    // the breakdown, before any weight is read (this model directory has none left).
    let (ok, stdout, stderr) = agentrl(&[
        "train",
        "plan",
        "--model",
        &s(&model),
        "--device",
        "cuda",
        "--gpu-memory-gb",
        "24",
    ]);
    assert!(ok, "{stderr}");
    let plan: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(plan["fits"], true);
    assert!(plan["peak_gb"].as_f64().unwrap() > 0.0);
    assert!(plan["micro_batch_tokens"].as_u64().unwrap() > 0);
    for part in [
        "runtime",
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "logits",
        "kv_cache",
        "reference",
    ] {
        assert!(plan["parts"][part].as_f64().is_some(), "parts.{part}");
    }
    let weightless = dir.path().join("weightless");
    std::fs::create_dir_all(&weightless).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(model.join(f), weightless.join(f)).unwrap();
    }
    std::fs::write(
        dir.path().join("huge.json"),
        r#"{"micro_batch_tokens": 16000000, "grpo": {"batch_prompts": 65536, "group_size": 1024}}"#,
    )
    .unwrap();
    let (ok, _, stderr) = agentrl(&[
        "train",
        "run",
        "--model",
        &s(&weightless),
        "--prompts",
        &s(&dir.path().join("prompts.jsonl")),
        "--out",
        &s(&dir.path().join("huge-out")),
        "--config",
        &s(&dir.path().join("huge.json")),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("does not fit") && stderr.contains("\"activations\""),
        "{stderr}"
    );

    // Bad config: non-zero exit, the field named, nothing that looks finished.
    std::fs::write(
        dir.path().join("bad.json"),
        r#"{"grpo": {"group_size": 0}}"#,
    )
    .unwrap();
    let bad_out = dir.path().join("bad-out");
    let (ok, _, stderr) = agentrl(&[
        "train",
        "run",
        "--model",
        &s(&model),
        "--prompts",
        &s(&dir.path().join("prompts.jsonl")),
        "--out",
        &s(&bad_out),
        "--config",
        &s(&dir.path().join("bad.json")),
    ]);
    assert!(!ok);
    assert!(stderr.contains("grpo.group_size"), "{stderr}");
    assert!(!bad_out.join("run.json").exists());
    let (ok, _, stderr) = agentrl(&[
        "train",
        "run",
        "--model",
        &s(&dir.path().join("nowhere")),
        "--prompts",
        &s(&dir.path().join("prompts.jsonl")),
        "--out",
        &s(&bad_out),
    ]);
    assert!(!ok);
    assert!(stderr.contains("config.json"), "{stderr}");
}
