//! Helpers of the trainer's tests: tiny models written in the Hugging Face layout, and the
//! test venv's Python.

#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentrl_train::config::TrainConfig;
use agentrl_train::model::{ModelConfig, save_safetensors};
use agentrl_train::tokenizer::Tok;
use candle_core::{Device, Tensor};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// The characters of the tests' tokenizer.
pub const ALPHABET: &str = "0123456789+:=\nACLQR";

/// The path of a script in `tests/python`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

/// The stdout of `tests/python/<name> ARGS…` run by the Hugging Face venv's interpreter, which
/// must succeed (its stderr is the panic's message otherwise).
pub fn hf_script(name: &str, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(agentrl_testkit::hf_python())
        .arg(script(name))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A config.json as `transformers` writes it, with the fields the trainer ignores.
pub fn hf_config(arch: &str, vocab: usize, tied: bool) -> Value {
    let (class, model_type) = match arch {
        "llama" => ("LlamaForCausalLM", "llama"),
        _ => ("Qwen2ForCausalLM", "qwen2"),
    };
    json!({
        "architectures": [class],
        "model_type": model_type,
        "attention_dropout": 0.0,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "hidden_act": "silu",
        "hidden_size": 32,
        "initializer_range": 0.02,
        "intermediate_size": 48,
        "max_position_embeddings": 128,
        "max_window_layers": 2,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-6,
        "rope_scaling": null,
        "rope_theta": 1000.0,
        "sliding_window": null,
        "tie_word_embeddings": tied,
        "torch_dtype": "float32",
        "transformers_version": "4.57.0",
        "use_cache": true,
        "use_sliding_window": false,
        "vocab_size": vocab,
    })
}

/// Writes a model of random weights (norms around 1, biases non-zero, so every tensor
/// matters) with the tests' tokenizer to `dir`.
pub fn write_model(dir: &Path, arch: &str, tied: bool, seed: u64) -> ModelConfig {
    write_weights(dir, &hf_config(arch, tok().vocab_size(), tied), seed)
}

/// Writes `config` as `dir/config.json`, random weights of its shapes (as [`write_model`])
/// and the tests' tokenizer.
pub fn write_weights(dir: &Path, config_json: &Value, seed: u64) -> ModelConfig {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_vec_pretty(config_json).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("tokenizer.json"), tok().json()).unwrap();
    let config = ModelConfig::from_json(config_json.clone()).unwrap();
    let shapes =
        agentrl_train::model::Model::init(config.clone(), 0, candle_core::DType::F32, &Device::Cpu)
            .unwrap()
            .state_dict(false)
            .unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut tensors = BTreeMap::new();
    for (name, t) in shapes {
        let n = t.elem_count();
        let values: Vec<f32> = if name.ends_with("norm.weight") {
            (0..n).map(|_| rng.random_range(0.7..1.3)).collect()
        } else if name.ends_with(".bias") {
            (0..n).map(|_| rng.random_range(-0.2..0.2)).collect()
        } else {
            (0..n).map(|_| rng.random_range(-0.3..0.3)).collect()
        };
        tensors.insert(
            name,
            Tensor::from_vec(values, t.shape(), &Device::Cpu).unwrap(),
        );
    }
    save_safetensors(&tensors, &dir.join("model.safetensors")).unwrap();
    config
}

/// The tests' tokenizer.
pub fn tok() -> Tok {
    Tok::char_level(ALPHABET, &["<|endoftext|>"]).unwrap()
}

/// Twelve `Q:a+1` prompts (`prompts.jsonl`) and their SFT answers (`sft.jsonl`) in `dir`.
pub fn prompts(dir: &Path) -> (PathBuf, PathBuf) {
    let mut p = String::new();
    let mut s = String::new();
    for a in 1..=12 {
        let line = json!({"prompt": format!("Q:{a}+1\n"), "answer": format!("{}", a + 1), "match": "numeric"});
        p.push_str(&format!("{line}\n"));
        s.push_str(&format!(
            "{}\n",
            json!({"prompt": format!("Q:{a}+1\n"), "completion": format!("{}", a + 1)})
        ));
    }
    std::fs::write(dir.join("prompts.jsonl"), p).unwrap();
    std::fs::write(dir.join("sft.jsonl"), s).unwrap();
    (dir.join("prompts.jsonl"), dir.join("sft.jsonl"))
}

/// A run of a few tiny steps: a checkpoint every step, an evaluation every other.
pub fn small_config() -> TrainConfig {
    TrainConfig::parse(
        r#"{"seed": 3, "checkpoint_every": 1, "eval_every": 2,
            "sft": {"epochs": 1, "learning_rate": 1e-3, "batch_size": 4},
            "grpo": {"learning_rate": 1e-3, "group_size": 4, "batch_prompts": 2, "max_new_tokens": 4,
                     "temperature": 1.0, "max_draws": 2}}"#,
    )
    .unwrap()
}
