//! Federated rounds' arithmetic and privacy: `train federate` against a numpy reference with
//! the noise off and the noise's standard deviation with it on, the Rényi-DP accountant
//! against `dp-accounting`'s `RdpAccountant`, and FFA-LoRA runs that start from a global
//! adapter and move only B, so the average of the updates is exact.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentrl_core::privacy::rdp::gaussian_epsilon;
use agentrl_train::federate::{Aggregation, aggregate};
use agentrl_train::model::{LoraConfig, Model, save_safetensors};
use agentrl_train::run::{RunOptions, load_weights, run_prompts};
use candle_core::{DType, Device, Tensor};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde_json::Value;

fn lora(freeze_a: bool) -> LoraConfig {
    LoraConfig {
        rank: 16,
        alpha: 32.0,
        dropout: 0.0,
        target_modules: agentrl_train::model::lora::LORA_MODULES
            .map(String::from)
            .to_vec(),
        freeze_a,
    }
}

/// A fresh adapter of a tiny model in `dir/global` (what `train init-adapter` writes).
fn global_adapter(dir: &Path, freeze_a: bool) -> (PathBuf, PathBuf) {
    let model = dir.join("model");
    common::write_model(&model, "qwen2", true, 5);
    let mut config = common::small_config();
    config.lora = Some(lora(freeze_a));
    let mut m = load_weights(&model, &config).unwrap();
    m.make_trainable(config.lora.as_ref(), config.seed).unwrap();
    let global = dir.join("global");
    assert!(m.save_adapter(&global, "tiny").unwrap());
    (model, global)
}

fn tensors(dir: &Path) -> BTreeMap<String, Tensor> {
    candle_core::safetensors::load(dir.join("adapter_model.safetensors"), &Device::Cpu)
        .unwrap()
        .into_iter()
        .collect()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// The global adapter moved by Gaussian steps of `scale` per element: a tenant's local one.
fn perturbed(global: &Path, out: &Path, scale: f64, seed: u64) -> PathBuf {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0, scale).unwrap();
    let moved: BTreeMap<String, Tensor> = tensors(global)
        .into_iter()
        .map(|(name, t)| {
            let v: Vec<f32> = values(&t)
                .into_iter()
                .map(|x| x + normal.sample(&mut rng) as f32)
                .collect();
            (name, Tensor::from_vec(v, t.dims(), &Device::Cpu).unwrap())
        })
        .collect();
    std::fs::create_dir_all(out).unwrap();
    std::fs::copy(
        global.join("adapter_config.json"),
        out.join("adapter_config.json"),
    )
    .unwrap();
    save_safetensors(&moved, &out.join("adapter_model.safetensors")).unwrap();
    out.to_owned()
}

fn reference(args: &[&str]) -> Value {
    serde_json::from_slice(&common::hf_script("federate_reference.py", args)).unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Four tenants: two small updates, two beyond the clip bound (each element moved by 0.05
/// over ~15,000 elements is a norm of about 6).
fn round(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let (_, global) = global_adapter(dir, false);
    let locals = [(0.001, 1), (0.05, 2), (0.002, 3), (0.08, 4)]
        .into_iter()
        .map(|(scale, seed)| perturbed(&global, &dir.join(format!("local-{seed}")), scale, seed))
        .collect();
    (global, locals)
}

fn aggregation(
    global: &Path,
    locals: &[PathBuf],
    out: &Path,
    z: f64,
    weights: Option<Vec<f64>>,
) -> Aggregation {
    Aggregation {
        global: global.to_owned(),
        locals: locals.to_vec(),
        out: out.to_owned(),
        clip: 1.0,
        noise_multiplier: z,
        seed: 7,
        weights,
        frozen_a: false,
    }
}

#[test]
fn aggregation_without_noise_is_numpys_clipped_weighted_mean() {
    let dir = tempfile::tempdir().unwrap();
    let (global, locals) = round(dir.path());
    let out = dir.path().join("next");
    let weights = vec![1.0, 2.0, 3.0, 4.0];
    let report = aggregate(&aggregation(&global, &locals, &out, 0.0, Some(weights))).unwrap();
    assert_eq!(report.participants, 4);
    assert_eq!(report.noise_std, 0.0);
    let mut args = vec!["aggregate", path(&global), path(&out), "1.0", "1,2,3,4"];
    args.extend(locals.iter().map(|l| path(l)));
    let diff = reference(&args);
    assert_eq!(diff["elements"].as_u64().unwrap() as usize, report.elements);
    assert!(
        diff["max_abs_diff"].as_f64().unwrap() < 1e-6,
        "against numpy: {diff}"
    );
    // The output is an adapter like the global one: the same config, loadable on the model.
    assert_eq!(
        std::fs::read(global.join("adapter_config.json")).unwrap(),
        std::fs::read(out.join("adapter_config.json")).unwrap()
    );
}

#[test]
fn the_noise_has_the_standard_deviation_z_c_over_n() {
    let dir = tempfile::tempdir().unwrap();
    let (global, locals) = round(dir.path());
    let z = 2.0;
    let noisy = dir.path().join("noisy");
    let report = aggregate(&aggregation(&global, &locals, &noisy, z, None)).unwrap();
    // Uniform weights: σ = z·C/n.
    assert!((report.noise_std - z * 1.0 / 4.0).abs() < 1e-12);
    let mut args = vec![
        "residual",
        path(&global),
        path(&noisy),
        path(&noisy),
        "1.0",
        "1,1,1,1",
    ];
    args.extend(locals.iter().map(|l| path(l)));
    let r = reference(&args);
    let n = r["elements"].as_f64().unwrap();
    let std = r["std"].as_f64().unwrap();
    // The sample std of n normals is off by about σ/sqrt(2n): 5 of those is 3 % here.
    let tolerance = 5.0 * report.noise_std / (2.0 * n).sqrt();
    assert!(
        (std - report.noise_std).abs() < tolerance,
        "std {std} vs σ {} (± {tolerance})",
        report.noise_std
    );
    assert!(r["mean"].as_f64().unwrap().abs() < 5.0 * report.noise_std / n.sqrt());
}

#[test]
fn bad_rounds_are_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let (global, locals) = round(dir.path());
    let out = dir.path().join("next");
    let err = |a: Aggregation| aggregate(&a).unwrap_err().to_string();
    assert!(err(aggregation(&global, &locals, &out, 0.0, Some(vec![1.0]))).contains("weights"));
    assert!(err(aggregation(&global, &locals, &out, -1.0, None)).contains("noise_multiplier"));
    assert!(
        err(Aggregation {
            clip: 0.0,
            ..aggregation(&global, &locals, &out, 0.0, None)
        })
        .contains("clip")
    );
    // A local adapter of another rank.
    let other = dir.path().join("other");
    let (_, other_global) = {
        let d = other.join("m");
        std::fs::create_dir_all(&d).unwrap();
        let model = d.join("model");
        common::write_model(&model, "qwen2", true, 5);
        let mut config = common::small_config();
        config.lora = Some(LoraConfig {
            rank: 4,
            alpha: 8.0,
            ..lora(false)
        });
        let mut m = load_weights(&model, &config).unwrap();
        m.make_trainable(config.lora.as_ref(), 0).unwrap();
        m.save_adapter(&d.join("global"), "tiny").unwrap();
        (model, d.join("global"))
    };
    let mut mixed = locals.clone();
    mixed.push(other_global);
    let message = err(aggregation(&global, &mixed, &out, 0.0, None));
    assert!(message.contains("adapter_config.json"), "{message}");
    assert!(!out.join("adapter_model.safetensors").exists());
}

#[test]
fn the_accountant_is_dp_accountings_rdp_accountant() {
    for (z, rounds, delta) in [
        (1.0, 10, 1e-5),
        (0.5, 3, 1e-6),
        (2.0, 100, 1e-5),
        (5.0, 1, 1e-5),
        (1.1, 50, 1e-3),
        (20.0, 4, 1e-5),
    ] {
        let theirs = reference(&[
            "epsilon",
            &z.to_string(),
            &rounds.to_string(),
            &delta.to_string(),
        ])["epsilon"]
            .as_f64()
            .unwrap();
        let ours = gaussian_epsilon(z, rounds, delta);
        assert!(
            (ours - theirs).abs() <= 0.01 * theirs,
            "z {z}, {rounds} rounds, δ {delta}: ours {ours}, dp-accounting's {theirs}"
        );
    }
}

/// The weight update `(α/r)·B·A` of one module.
fn delta_w(t: &BTreeMap<String, Tensor>, module: &str) -> Tensor {
    let a = &t[&format!("base_model.model.{module}.lora_A.weight")];
    let b = &t[&format!("base_model.model.{module}.lora_B.weight")];
    (b.matmul(a).unwrap() * 2.0).unwrap()
}

#[test]
fn ffa_lora_runs_start_from_the_global_adapter_train_b_only_and_average_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (model, global) = global_adapter(dir.path(), true);
    let (prompts, sft) = common::prompts(dir.path());
    let mut locals = Vec::new();
    for seed in [11, 12] {
        let mut config = common::small_config();
        config.seed = seed;
        config.lora = Some(lora(true));
        let out = dir.path().join(format!("local-{seed}"));
        let o = RunOptions {
            model: model.clone(),
            out: out.clone(),
            config,
            steps: Some(2),
            stop_after: None,
            mirror: None,
            weights: None,
            init_adapter: Some(global.clone()),
        };
        run_prompts(&o, &prompts, Some(&sft)).unwrap().unwrap();
        locals.push(out);
    }
    let g = tensors(&global);
    for local in &locals {
        let l = tensors(local);
        for (name, t) in &g {
            let same = values(t) == values(&l[name]);
            if name.contains("lora_A") {
                assert!(same, "{name} moved: A is frozen");
            } else {
                assert!(!same, "{name} did not train");
            }
        }
    }
    let out = dir.path().join("next");
    // Clip far above the updates' norms: the mean of the B's.
    aggregate(&Aggregation {
        clip: 1e6,
        frozen_a: true,
        ..aggregation(&global, &locals, &out, 0.0, None)
    })
    .unwrap();
    let next = tensors(&out);
    let (l0, l1) = (tensors(&locals[0]), tensors(&locals[1]));
    for module in [
        "model.layers.0.self_attn.q_proj",
        "model.layers.1.mlp.down_proj",
    ] {
        let mean = ((delta_w(&l0, module) + delta_w(&l1, module)).unwrap() / 2.0).unwrap();
        let diff = (delta_w(&next, module) - mean)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(
            diff < 1e-6,
            "{module}: ΔW of the mean is off the mean ΔW by {diff}"
        );
    }
    // The averaged adapter loads on the model.
    let mut m = Model::load(&model, DType::F32, &Device::Cpu).unwrap();
    m.load_adapter(&out).unwrap();
    // With noise, A is still the shared one: the noise covers B alone.
    let noisy = dir.path().join("noisy");
    aggregate(&Aggregation {
        frozen_a: true,
        ..aggregation(&global, &locals, &noisy, 3.0, None)
    })
    .unwrap();
    let noisy = tensors(&noisy);
    for (name, t) in &g {
        assert_eq!(
            values(t) == values(&noisy[name]),
            name.contains("lora_A"),
            "{name}"
        );
    }
    // An adapter whose A moved was not trained with freeze_a: refused, naming the tensor.
    let moved = perturbed(&global, &dir.path().join("moved"), 0.01, 9);
    let message = aggregate(&Aggregation {
        locals: vec![locals[0].clone(), moved],
        frozen_a: true,
        ..aggregation(&global, &locals, &dir.path().join("refused"), 0.0, None)
    })
    .unwrap_err()
    .to_string();
    assert!(
        message.contains("lora_A") && message.contains("freeze_a"),
        "{message}"
    );
}
