//! Peak memory of one training step at real sizes, each case in a child process of its own
//! (`train bench`; peak RSS is per process):
//!
//! - **the head**: 4 × 1,024 response tokens of a Qwen2 with a 151,936-token vocabulary,
//!   hidden 64, 2 layers, untied (19.5M parameters), full fine-tuning. The goal: below 1 GB
//!   (the `[tokens, vocab]` logits alone would be 2.5 GB, and their gradient as much again).
//! - **activation checkpointing**: 2 × 2,048 tokens, hidden 256, 8 layers, fp32, without and
//!   with `gradient_checkpointing`. The goal: at most half the peak.
//!
//! Each case also prints the run's plan (`train plan`'s estimate, [`agentrl_train::plan`])
//! against the measured peak: the goal is within ±25%.
//!
//! `cargo bench -p agentrl-train --bench step_memory` (figures in BENCHMARKS.md).

use std::path::Path;
use std::process::Command;

use agentrl_train::model::{Model, ModelConfig};
use agentrl_train::tokenizer::Tok;
use candle_core::{DType, Device};
use serde_json::{Value, json};

/// A case: its name, the model's config, `[batch, seq]`, the training config.
struct Case {
    name: &'static str,
    model: Value,
    batch: usize,
    seq: usize,
    config: Value,
}

fn qwen2(vocab: usize, hidden: usize, layers: usize, heads: usize) -> Value {
    json!({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
        "hidden_size": hidden, "intermediate_size": 3 * hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": heads / 2, "vocab_size": vocab,
        "max_position_embeddings": 4096, "rope_parameters": {"rope_type": "default",
        "rope_theta": 1_000_000.0}, "tie_word_embeddings": false})
}

fn main() -> anyhow::Result<()> {
    let cases = [
        Case {
            name: "head: Qwen2 V=151,936 H=64 L=2, 4 × 1,024, full fine-tuning",
            model: qwen2(151_936, 64, 2, 4),
            batch: 4,
            seq: 1024,
            config: json!({}),
        },
        Case {
            name: "layers: H=256 L=8 V=4,096, 2 × 2,048, stored activations",
            model: qwen2(4096, 256, 8, 4),
            batch: 2,
            seq: 2048,
            config: json!({"gradient_checkpointing": false}),
        },
        Case {
            name: "layers: H=256 L=8 V=4,096, 2 × 2,048, gradient_checkpointing",
            model: qwen2(4096, 256, 8, 4),
            batch: 2,
            seq: 2048,
            config: json!({"gradient_checkpointing": true}),
        },
    ];
    let work = tempfile::tempdir()?;
    println!("case\tparameters\tstep ms\tpeak RSS MB\tplanned MB\tplanned / measured");
    for (i, case) in cases.iter().enumerate() {
        let dir = work.path().join(format!("model-{i}"));
        write_model(&dir, &case.model)?;
        let config = work.path().join(format!("config-{i}.json"));
        std::fs::write(&config, case.config.to_string())?;
        let out = Command::new(env!("CARGO_BIN_EXE_train"))
            .args(["bench", "--iterations", "1"])
            .args([
                "--batch",
                &case.batch.to_string(),
                "--seq",
                &case.seq.to_string(),
            ])
            .arg("--model")
            .arg(&dir)
            .arg("--config")
            .arg(&config)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "{}: {}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let run: Value = serde_json::from_slice(&out.stdout)?;
        let measured = run["peak_rss_mb"].as_f64().unwrap_or(f64::NAN);
        let planned = run["plan"]["peak_gb"].as_f64().unwrap_or(f64::NAN) * 1024.0;
        println!(
            "{}\t{}\t{:.0}\t{measured:.0}\t{planned:.0}\t{:.2}",
            case.name,
            run["trainable_parameters"],
            run["step_ms"],
            planned / measured
        );
    }
    Ok(())
}

/// A model of `config` with random weights and a tokenizer smaller than its vocabulary.
fn write_model(dir: &Path, config: &Value) -> anyhow::Result<()> {
    let config = ModelConfig::from_json(config.clone()).map_err(anyhow::Error::msg)?;
    Model::init(config, 1, DType::F32, &Device::Cpu)?.save_hf(dir, u64::MAX)?;
    let tok =
        Tok::char_level("0123456789abcdef", &["<|endoftext|>"]).map_err(anyhow::Error::msg)?;
    std::fs::write(dir.join("tokenizer.json"), tok.json())?;
    Ok(())
}
