//! Interop: logprobs of models in the Hugging Face layout equal an independent numpy forward
//! of transformers' Qwen2, Qwen3 and Llama (fp32, max abs error ≤ 1e-4) for configs written by
//! transformers 5's own config classes — every RoPE type the loader implements, sliding
//! windows, Qwen3's q/k norms — and in transformers 4's spelling; a checkpoint's config gives
//! transformers the RoPE it was trained with; sharded checkpoints load; broken model
//! directories fail naming the file.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use agentrl_train::config::Precision;
use agentrl_train::model::Model;
use agentrl_train::run::logprobs;
use candle_core::{DType, Device};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

fn inputs(dir: &Path, vocab: u32) -> std::path::PathBuf {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut lines = String::new();
    for (p, r) in [(1, 5), (9, 17), (30, 40), (4, 1)] {
        let ids = |n: usize, rng: &mut ChaCha8Rng| -> Vec<u32> {
            (0..n).map(|_| rng.random_range(0..vocab)).collect()
        };
        let line = json!({"prompt_ids": ids(p, &mut rng), "response_ids": ids(r, &mut rng)});
        lines.push_str(&format!("{line}\n"));
    }
    let path = dir.join("inputs.jsonl");
    std::fs::write(&path, lines).unwrap();
    path
}

fn ours(model: &Path, input: &Path) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    logprobs(model, input, Precision::Auto, &mut out).unwrap();
    parse(&String::from_utf8(out).unwrap())
}

fn parse(text: &str) -> Vec<Vec<f64>> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["logprobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

fn reference(model: &Path, input: &Path) -> Vec<Vec<f64>> {
    let out = Command::new(agentrl_testkit::venv_python())
        .arg(common::script("decoder_numpy.py"))
        .arg(model)
        .arg(input)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse(&String::from_utf8(out.stdout).unwrap())
}

fn max_error(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0.0, f64::max)
}

#[test]
fn logprobs_match_the_numpy_reference_of_the_hf_forward() {
    for (arch, tied) in [("qwen2", true), ("qwen2", false), ("llama", false)] {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model");
        let config = common::write_model(&model, arch, tied, 11);
        let input = inputs(dir.path(), config.vocab_size as u32);
        let (a, b) = (ours(&model, &input), reference(&model, &input));
        let err = max_error(&a, &b);
        assert!(err <= 1e-4, "{arch} tied={tied}: max abs error {err}");
        // The distributions are far from uniform, so agreement is not an accident.
        let spread = a.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(spread > 0.5, "{arch}: logprobs are all near zero");
    }
}

/// The variants `hf_configs.py` writes with transformers 5, at our tokenizer's vocabulary.
fn transformers_5_configs(dir: &Path) -> Vec<(String, Value)> {
    let vocab = common::tok().vocab_size();
    let out = common::hf_script(
        "hf_configs.py",
        &["write", dir.to_str().unwrap(), &vocab.to_string()],
    );
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|name| {
            let path = dir.join(name).join("config.json");
            let config = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            (name.to_owned(), config)
        })
        .collect()
}

#[test]
fn every_family_and_rope_type_transformers_5_writes_matches_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let mut configs = transformers_5_configs(&dir.path().join("configs"));
    assert!(configs.len() >= 7, "{configs:?}");
    // transformers 4's spelling of Llama 3.1's RoPE: θ at the top, `rope_scaling` with `type`.
    let mut v4 = common::hf_config("llama", common::tok().vocab_size(), false);
    v4["rope_theta"] = json!(500_000.0);
    v4["rope_scaling"] = json!({"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 16});
    configs.push(("llama3-transformers-4".into(), v4));
    for (i, (name, config)) in configs.iter().enumerate() {
        let model = dir.path().join("models").join(name);
        common::write_weights(&model, config, 20 + i as u64);
        let input = inputs(dir.path(), common::tok().vocab_size() as u32);
        let (a, b) = (ours(&model, &input), reference(&model, &input));
        let err = max_error(&a, &b);
        assert!(err <= 1e-4, "{name}: max abs error {err}");
        let spread = a.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(spread > 0.5, "{name}: logprobs are all near zero");
    }
}

#[test]
fn a_checkpoint_gives_transformers_the_rope_it_was_trained_with() {
    let dir = tempfile::tempdir().unwrap();
    let configs = transformers_5_configs(&dir.path().join("configs"));
    let (_, config) = configs.iter().find(|(n, _)| n == "qwen2-yarn").unwrap();
    let base = dir.path().join("base");
    common::write_weights(&base, config, 4);
    let mut model = Model::load(&base, DType::F32, &Device::Cpu).unwrap();
    model.make_trainable(None, 0).unwrap();
    let saved = dir.path().join("saved");
    model.save_hf(&saved, u64::MAX).unwrap();
    std::fs::copy(base.join("tokenizer.json"), saved.join("tokenizer.json")).unwrap();
    let rope = |model: &Path| -> Value {
        serde_json::from_slice(&common::hf_script(
            "hf_configs.py",
            &["read", model.to_str().unwrap()],
        ))
        .unwrap()
    };
    let (before, after) = (rope(&base), rope(&saved));
    assert_eq!(before, after);
    assert_eq!(
        (after["rope_type"].as_str(), after["factor"].as_f64()),
        (Some("yarn"), Some(4.0))
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(saved.join("config.json")).unwrap()).unwrap();
    assert!(
        written.get("rope_theta").is_none(),
        "no second θ beside rope_parameters: {written}"
    );
    assert_eq!(written["dtype"], "float32");
    let input = inputs(dir.path(), common::tok().vocab_size() as u32);
    assert_eq!(ours(&base, &input), ours(&saved, &input));
}

/// A bf16 base model's outputs are bf16, sharded as transformers shards them: safetensors'
/// own reader finds every tensor where the index says, transformers reads the config's
/// dtype, and the logprobs of what was written equal the reference's on the same files.
#[test]
fn outputs_keep_the_base_dtype_and_shard_as_transformers_does() {
    let dir = tempfile::tempdir().unwrap();
    let fp32 = dir.path().join("fp32");
    common::write_model(&fp32, "qwen2", false, 6);
    let base = dir.path().join("bf16");
    std::fs::create_dir_all(&base).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(fp32.join(f), base.join(f)).unwrap();
    }
    let tensors: BTreeMap<String, candle_core::Tensor> =
        candle_core::safetensors::load(fp32.join("model.safetensors"), &Device::Cpu)
            .unwrap()
            .into_iter()
            .collect();
    agentrl_train::model::save_sharded(&tensors, &base, DType::BF16, u64::MAX).unwrap();
    let mut model = Model::load(&base, DType::F32, &Device::Cpu).unwrap();
    model.make_trainable(None, 0).unwrap();
    let out = dir.path().join("out");
    model.save_hf(&out, 20_000).unwrap();
    std::fs::copy(base.join("tokenizer.json"), out.join("tokenizer.json")).unwrap();
    let seen: Value = serde_json::from_slice(&common::hf_script(
        "hf_configs.py",
        &["shards", out.to_str().unwrap()],
    ))
    .unwrap();
    assert!(seen["files"].as_array().unwrap().len() >= 2, "{seen}");
    assert_eq!(
        seen["dtypes"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["BF16"]
    );
    assert_eq!(seen["dtype"], "bfloat16");
    let input = inputs(dir.path(), common::tok().vocab_size() as u32);
    let err = max_error(&ours(&out, &input), &reference(&out, &input));
    assert!(err <= 1e-4, "max abs error {err}");
}

#[test]
fn sharded_checkpoints_load_like_single_files() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    let config = common::write_model(&single, "qwen2", false, 3);
    let sharded = dir.path().join("sharded");
    std::fs::create_dir_all(&sharded).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(single.join(f), sharded.join(f)).unwrap();
    }
    let tensors =
        candle_core::safetensors::load(single.join("model.safetensors"), &candle_core::Device::Cpu)
            .unwrap();
    let mut shards: [BTreeMap<String, candle_core::Tensor>; 2] = Default::default();
    let mut map = serde_json::Map::new();
    for (i, (name, t)) in tensors.into_iter().enumerate() {
        let file = format!("model-0000{}-of-00002.safetensors", i % 2 + 1);
        map.insert(name.clone(), json!(file));
        shards[i % 2].insert(name, t);
    }
    for (i, shard) in shards.iter().enumerate() {
        agentrl_train::model::save_safetensors(
            shard,
            &sharded.join(format!("model-0000{}-of-00002.safetensors", i + 1)),
        )
        .unwrap();
    }
    std::fs::write(
        sharded.join("model.safetensors.index.json"),
        json!({"metadata": {}, "weight_map": map}).to_string(),
    )
    .unwrap();
    let input = inputs(dir.path(), config.vocab_size as u32);
    assert_eq!(ours(&single, &input), ours(&sharded, &input));
}

#[test]
fn broken_model_directories_fail_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m");
    common::write_model(&model, "qwen2", true, 1);
    let input = inputs(dir.path(), 4);
    let err = |model: &Path| {
        let mut sink = Vec::new();
        logprobs(model, &input, Precision::Auto, &mut sink)
            .unwrap_err()
            .to_string()
    };

    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(model.join("config.json")).unwrap()).unwrap();
    config["architectures"] = json!(["GPT2LMHeadModel"]);
    std::fs::write(model.join("config.json"), config.to_string()).unwrap();
    let e = err(&model);
    assert!(
        e.contains("config.json") && e.contains("architectures"),
        "{e}"
    );

    common::write_model(&model, "qwen2", true, 1);
    let weights = std::fs::read(model.join("model.safetensors")).unwrap();
    std::fs::write(
        model.join("model.safetensors"),
        &weights[..weights.len() / 2],
    )
    .unwrap();
    let e = err(&model);
    assert!(e.contains("model.safetensors"), "{e}");

    std::fs::remove_file(model.join("model.safetensors")).unwrap();
    let e = err(&model);
    assert!(
        e.contains("model.safetensors") && e.contains("missing"),
        "{e}"
    );

    common::write_model(&model, "qwen2", true, 1);
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(model.join("config.json")).unwrap()).unwrap();
    config["num_hidden_layers"] = json!(3);
    std::fs::write(model.join("config.json"), config.to_string()).unwrap();
    let e = err(&model);
    assert!(e.contains("model.layers.2"), "{e}");

    common::write_model(&model, "qwen2", true, 1);
    std::fs::write(
        dir.path().join("bad.jsonl"),
        "{\"prompt_ids\": [1], \"response_ids\": [999]}\n",
    )
    .unwrap();
    let mut sink = Vec::new();
    let e = logprobs(
        &model,
        &dir.path().join("bad.jsonl"),
        Precision::Auto,
        &mut sink,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("line 1") && e.contains("response_ids"), "{e}");
}

/// bf16: every matmul's output rounded to 8 significant bits (relative error up to 2⁻⁹), in
/// a forward whose norms, softmaxes and log-sum-exp stay fp32. The logprobs of the tiny test
/// models (logits up to ~10 in magnitude) then move by a few hundredths; the bound below is
/// 0.1 nats. What the bf16 path must not do is drift by whole nats (a wrong RoPE or a bf16
/// softmax over a long row does).
#[test]
fn bf16_logprobs_stay_within_a_tenth_of_a_nat_of_fp32() {
    use agentrl_train::config::TrainConfig;
    use agentrl_train::run::load_model;
    use agentrl_train::step::{TrainSeq, response_logprobs};
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    let config = common::write_model(&model, "qwen2", false, 9);
    let input = inputs(dir.path(), config.vocab_size as u32);
    let fp32 = ours(&model, &input);
    let bf16 = TrainConfig {
        dtype: Precision::Bf16,
        ..TrainConfig::default()
    };
    let (loaded, _) = load_model(&model, &bf16).unwrap();
    assert_eq!(loaded.compute_dtype(), DType::BF16);
    let seqs: Vec<TrainSeq> = std::fs::read_to_string(&input)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let ids = |k: &str| -> Vec<u32> {
                v[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap() as u32)
                    .collect()
            };
            let (prompt, response) = (ids("prompt_ids"), ids("response_ids"));
            let n = response.len();
            TrainSeq {
                start: prompt.len(),
                ids: [prompt, response].concat(),
                mask: vec![true; n],
                advantages: vec![0.0; n],
                behaviour: None,
                rollout: 0,
                weight: 0.0,
            }
        })
        .collect();
    let ours_bf16: Vec<Vec<f64>> = response_logprobs(&loaded, &seqs, 4096)
        .unwrap()
        .into_iter()
        .map(|r| r.into_iter().map(f64::from).collect())
        .collect();
    let err = max_error(&fp32, &ours_bf16);
    assert!(err > 0.0, "bf16 computed exactly like fp32: not bf16");
    assert!(err <= 0.1, "bf16 vs fp32: max abs error {err}");
}
