//! Gradients: every trainable tensor receives one (candle's fused ops would cut the graph
//! silently), they equal finite differences in f64, and LoRA trains only its adapters, merges
//! to W + (α/r)·B·A and is written in PEFT's layout.

mod common;

use agentrl_train::model::{Dropout, LoraConfig, Model, Tokens};
use agentrl_train::optim::{AdamW, OptimizerConfig};
use agentrl_train::step::{self, Objective, StepContext, TrainSeq, train_step};
use candle_core::{DType, Device, Tensor, Var};
use rand::Rng;

/// The largest element of `|a − b|`.
fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .max_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

fn seqs() -> Vec<TrainSeq> {
    let make = |ids: Vec<u32>, start: usize| {
        let n = ids.len() - start;
        TrainSeq {
            ids,
            start,
            mask: vec![true; n],
            advantages: vec![1.0; n],
            behaviour: None,
            rollout: 0,
            weight: 0.05,
        }
    };
    vec![
        make(vec![1, 5, 9, 3, 7, 2, 11], 2),
        make(vec![4, 4, 8, 15, 16], 1),
    ]
}

/// `Σ w·(−log π(token))` over the batch's response tokens: the SFT objective, computed
/// independently of the step (one sequence at a time, the head over the whole vocabulary).
fn nll(model: &Model, seqs: &[TrainSeq]) -> f64 {
    let d = model.device();
    let mut total = 0.0;
    for s in seqs {
        let tokens = Tokens::packed([s.ids.as_slice()], d).unwrap();
        let hidden = model.hidden(&tokens, None).unwrap();
        let rows: Vec<u32> = (s.start - 1..s.ids.len() - 1).map(|r| r as u32).collect();
        let logits = model
            .logits_at(
                &hidden,
                &Tensor::from_vec(rows, s.ids.len() - s.start, d).unwrap(),
            )
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap();
        let logp = agentrl_train::model::ops::log_softmax(&logits)
            .unwrap()
            .to_vec2::<f64>()
            .unwrap();
        for (j, row) in logp.iter().enumerate() {
            total -= s.weight * row[s.ids[s.start + j] as usize];
        }
    }
    total
}

/// Sequences packed into one micro-batch score exactly as each does alone: attention stays
/// within each and positions restart at 0.
#[test]
fn packed_sequences_score_as_each_alone() {
    let model = tiny(DType::F32);
    let mut batch = seqs();
    batch.extend(seqs().into_iter().rev());
    assert_eq!(step::micro_batches(&batch, 64).len(), 1);
    let packed = step::response_logprobs(&model, &batch, 64).unwrap();
    for (s, together) in batch.iter().zip(&packed) {
        let alone = step::response_logprobs(&model, std::slice::from_ref(s), 64).unwrap();
        for (a, b) in alone[0].iter().zip(together) {
            assert!((a - b).abs() < 1e-5, "alone {a}, packed {b}");
        }
    }
}

fn tiny(dtype: DType) -> Model {
    tiny_tied(dtype, false)
}

fn tiny_tied(dtype: DType, tied: bool) -> Model {
    let dir = tempfile::tempdir().unwrap();
    common::write_model(dir.path(), "qwen2", tied, 5);
    Model::load(dir.path(), dtype, &Device::Cpu).unwrap()
}

#[test]
fn every_trainable_tensor_receives_a_gradient() {
    let mut model = tiny(DType::F32);
    model.make_trainable(None, 0).unwrap();
    assert_eq!(model.vars().len(), 2 + 1 + 2 * (2 + 3 * 2 + 1 + 3));
    for (name, g) in gradients(&model) {
        assert!(norm(&g) > 0.0, "{name}: zero gradient");
    }
}

/// The gradient of every variable of `model` on the test batch, by name: what a training
/// step of the SFT objective applies.
fn gradients(model: &Model) -> Vec<(String, Tensor)> {
    let acc = step::gradients(model, &seqs(), Objective::Nll, 64, false, None).unwrap();
    model
        .vars()
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let g = acc.get(i).unwrap_or_else(|| panic!("{name}: no gradient"));
            (name.clone(), g.clone())
        })
        .collect()
}

fn norm(t: &Tensor) -> f32 {
    t.sqr()
        .unwrap()
        .sum_all()
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

#[test]
fn qwen3_head_norms_train_through_sliding_windows_and_the_pad_row_gets_no_gradient() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::hf_config("qwen2", common::tok().vocab_size(), false);
    for (key, value) in [
        ("model_type", serde_json::json!("qwen3")),
        ("architectures", serde_json::json!(["Qwen3ForCausalLM"])),
        ("head_dim", serde_json::json!(8)),
        ("use_sliding_window", serde_json::json!(true)),
        ("sliding_window", serde_json::json!(3)),
        ("max_window_layers", serde_json::json!(1)),
        ("pad_token_id", serde_json::json!(4)),
    ] {
        config[key] = value;
    }
    common::write_weights(dir.path(), &config, 5);
    let mut model = Model::load(dir.path(), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(model.config.windows, [None, Some(3)]);
    model.make_trainable(None, 0).unwrap();
    let grads = gradients(&model);
    assert!(
        grads
            .iter()
            .any(|(n, _)| n.ends_with("self_attn.q_norm.weight"))
    );
    for (name, g) in &grads {
        assert!(norm(g) > 0.0, "{name}: zero gradient");
    }
    // Token 4 is an input of the second sequence, like token 8: only 4's row is the pad's.
    let (_, embed) = grads
        .iter()
        .find(|(n, _)| n == "model.embed_tokens.weight")
        .unwrap();
    let row = |i: usize| norm(&embed.get(i).unwrap());
    assert_eq!(row(4), 0.0);
    assert!(row(8) > 0.0);
}

fn element(var: &Var, i: usize) -> f64 {
    var.as_tensor()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap()[i]
}

fn nudge(var: &Var, i: usize, delta: f64) {
    let mut v = var
        .as_tensor()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    v[i] += delta;
    var.set(&Tensor::from_vec(v, var.shape(), &Device::Cpu).unwrap())
        .unwrap();
}

/// Untied and tied: a tied embedding's gradient is the lookup's (autograd) plus the head's
/// (computed over vocabulary chunks).
#[test]
fn gradients_equal_finite_differences_in_f64() {
    for tied in [false, true] {
        finite_differences(tied);
    }
}

fn finite_differences(tied: bool) {
    let mut model = tiny_tied(DType::F64, tied);
    model.make_trainable(None, 0).unwrap();
    let batch = seqs();
    let grads = step::gradients(&model, &batch, Objective::Nll, 64, false, None).unwrap();
    let h = 1e-6;
    let mut checked = 0;
    for (k, (name, var)) in model.vars().iter().enumerate() {
        let g = grads
            .get(k)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        for i in [0, g.len() / 2, g.len() - 1] {
            let before = element(var, i);
            nudge(var, i, h);
            let up = nll(&model, &batch);
            nudge(var, i, -2.0 * h);
            let down = nll(&model, &batch);
            nudge(var, i, h);
            assert!((element(var, i) - before).abs() < 1e-12);
            let numeric = (up - down) / (2.0 * h);
            // The accumulator keeps gradients in fp32.
            let analytic = f64::from(g[i]);
            let tolerance = 1e-6 + 1e-5 * numeric.abs().max(analytic.abs());
            assert!(
                (numeric - analytic).abs() <= tolerance,
                "{name}[{i}] (tied {tied}): analytic {analytic} numeric {numeric}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 60, "{checked}");
}

#[test]
fn lora_trains_adapters_only_and_merges_to_w_plus_scaled_ba() {
    let mut model = tiny(DType::F32);
    let base = model.state_dict(false).unwrap();
    let lora = LoraConfig {
        rank: 4,
        alpha: 8.0,
        dropout: 0.1,
        target_modules: vec!["q_proj".into(), "v_proj".into(), "down_proj".into()],
        freeze_a: false,
    };
    model.make_trainable(Some(&lora), 3).unwrap();
    assert_eq!(model.vars().len(), 2 * 3 * 2);
    let initial: Vec<Tensor> = model
        .vars()
        .iter()
        .map(|(_, v)| v.as_tensor().copy().unwrap())
        .collect();
    let mut optimizer = AdamW::new(model.vars(), &OptimizerConfig::default()).unwrap();
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
    for _ in 0..3 {
        let mut ctx = StepContext {
            model: &model,
            reference: None,
            optimizer: &mut optimizer,
            lr: 1e-2,
            budget: 64,
            dropout: Some(Dropout {
                p: 0.1,
                seed: rng.random(),
            }),
            checkpointing: false,
        };
        train_step(&mut ctx, &seqs(), Objective::Nll).unwrap();
    }
    // Every adapter moved (B starts at zero, A gets a gradient from the second step on).
    for ((name, var), before) in model.vars().iter().zip(&initial) {
        let moved = max_abs_diff(var.as_tensor(), before);
        assert!(moved > 0.0, "{name} never trained");
    }
    let unmerged = model.state_dict(false).unwrap();
    for (name, w) in &base {
        let diff = max_abs_diff(w, &unmerged[name]);
        assert_eq!(diff, 0.0, "{name}: a frozen base weight changed");
    }
    let merged = model.state_dict(true).unwrap();
    let vars: std::collections::HashMap<&str, &Var> =
        model.vars().iter().map(|(n, v)| (n.as_str(), v)).collect();
    let module = "model.layers.1.self_attn.v_proj";
    let a = vars[format!("{module}.lora_A.weight").as_str()].as_tensor();
    let b = vars[format!("{module}.lora_B.weight").as_str()].as_tensor();
    let expected =
        (&base[&format!("{module}.weight")] + (b.matmul(a).unwrap() * 2.0).unwrap()).unwrap();
    let diff = max_abs_diff(&merged[&format!("{module}.weight")], &expected);
    assert!(diff < 1e-6, "{diff}");
    assert_eq!(
        merged["model.layers.0.self_attn.k_proj.weight"]
            .to_vec2::<f32>()
            .unwrap(),
        base["model.layers.0.self_attn.k_proj.weight"]
            .to_vec2::<f32>()
            .unwrap()
    );

    let out = tempfile::tempdir().unwrap();
    assert!(model.save_adapter(out.path(), "base").unwrap());
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("adapter_config.json")).unwrap())
            .unwrap();
    assert_eq!(config["peft_type"], "LORA");
    assert_eq!(config["r"], 4);
    assert_eq!(config["lora_alpha"], 8.0);
    let saved =
        candle_core::safetensors::load(out.path().join("adapter_model.safetensors"), &Device::Cpu)
            .unwrap();
    let a = &saved["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"];
    let b = &saved["base_model.model.model.layers.0.mlp.down_proj.lora_B.weight"];
    assert_eq!((a.dims(), b.dims()), (&[4, 32][..], &[32, 4][..]));
    assert_eq!(saved.len(), 12);

    // Served from the adapter on a fresh base: the merged weights again.
    let mut served = tiny(DType::F32);
    served.load_adapter(out.path()).unwrap();
    let again = served.state_dict(true).unwrap();
    for (name, w) in &merged {
        let diff = max_abs_diff(w, &again[name]);
        assert!(diff < 1e-6, "{name}: {diff}");
    }
    let mut rslora = config.clone();
    rslora["use_rslora"] = serde_json::json!(true);
    std::fs::write(
        out.path().join("adapter_config.json"),
        serde_json::to_vec(&rslora).unwrap(),
    )
    .unwrap();
    let refused = tiny(DType::F32).load_adapter(out.path()).unwrap_err();
    assert!(refused.to_string().contains("use_rslora"), "{refused}");
}

#[test]
fn fused_kernels_equal_the_composed_ops_in_value_and_gradient() {
    use agentrl_train::model::rope::{self, Rope, RopeScaling};
    use agentrl_train::model::{attention, fused, ops};
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let mut random = |shape: &[usize]| {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|_| rng.random_range(-2.0..2.0)).collect();
        Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
    };
    let close = |a: &Tensor, b: &Tensor, what: &str| {
        let d = (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap();
        assert!(d < 1e-10, "{what}: {d}");
    };
    // A downstream weighting so the gradients are not trivially uniform.
    let (x, w, mix) = (random(&[6, 10]), random(&[10]), random(&[6, 10]));
    let loss = |y: Tensor| (y * mix.as_tensor()).unwrap().sum_all().unwrap();
    let f = fused::rms_norm(&x, &w, 1e-6).unwrap();
    let c = ops::rms_norm(&x, &w, 1e-6).unwrap();
    close(&f, &c, "rms_norm");
    let (gf, gc) = (loss(f).backward().unwrap(), loss(c).backward().unwrap());
    close(gf.get(&x).unwrap(), gc.get(&x).unwrap(), "rms_norm dx");
    close(gf.get(&w).unwrap(), gc.get(&w).unwrap(), "rms_norm dw");

    let b = random(&[10]);
    let f = fused::add_bias(&x, &b).unwrap();
    let c = x.broadcast_add(&b).unwrap();
    close(&f, &c, "add_bias");
    let (gf, gc) = (loss(f).backward().unwrap(), loss(c).backward().unwrap());
    close(gf.get(&x).unwrap(), gc.get(&x).unwrap(), "add_bias dy");
    close(gf.get(&b).unwrap(), gc.get(&b).unwrap(), "add_bias db");

    let f = fused::softmax(&x).unwrap();
    let c = ops::softmax(&x).unwrap();
    close(&f, &c, "softmax");
    close(
        loss(f).backward().unwrap().get(&x).unwrap(),
        loss(c).backward().unwrap().get(&x).unwrap(),
        "softmax dx",
    );

    // A vocabulary chunk's statistics and softmax gradient (no backward of their own).
    let logits = random(&[5, 13]);
    let (lse, g) = (random(&[5]), random(&[5]));
    close(
        &fused::chunk_statistics(&logits).unwrap(),
        &ops::chunk_statistics(&logits).unwrap(),
        "chunk statistics",
    );
    close(
        &fused::chunk_gradient(&logits, &lse, &g).unwrap(),
        &ops::chunk_gradient(&logits, &lse, &g).unwrap(),
        "chunk gradient",
    );

    // Grouped-query attention: 3 query heads over 1 key/value head would not divide evenly,
    // so 4 over 2; three packed sequences of 5, 3 and 4 positions; full causal and a sliding
    // window of 2.
    let rope = Rope {
        theta: 10_000.0,
        scaling: RopeScaling::Default,
    };
    let (cos, sin) = rope::tables(&rope, 0..5, 6, DType::F64, &Device::Cpu).unwrap();
    let lengths = [5, 3, 4];
    for window in [None, Some(2)] {
        let shape = |lengths: &[usize]| fused::AttentionShape {
            lengths: lengths.into(),
            heads: 4,
            kv_heads: 2,
            head_dim: 6,
            window,
        };
        let packed = shape(&lengths);
        let qkv = random(&[12, 48]);
        let mix = random(&[12, 24]);
        let l = |y: Tensor| (y * mix.as_tensor()).unwrap().sum_all().unwrap();
        let f = fused::attention(&qkv, &packed, &cos, &sin).unwrap();
        let c = ops::attention(&qkv, &packed, &cos, &sin).unwrap();
        let k = attention::chunked(&qkv, &packed, &cos, &sin).unwrap();
        close(&f, &c, &format!("attention, window {window:?}"));
        close(&k, &c, &format!("chunked attention, window {window:?}"));
        let dc = l(c).backward().unwrap();
        let dc = dc.get(&qkv).unwrap();
        let df = l(f.clone()).backward().unwrap();
        let df = df.get(&qkv).unwrap();
        close(df, dc, &format!("attention dqkv, window {window:?}"));
        close(
            l(k).backward().unwrap().get(&qkv).unwrap(),
            dc,
            &format!("chunked attention dqkv, window {window:?}"),
        );
        // Packing changes nothing: each sequence alone, from position 0, gives its rows of the
        // packed output and of the gradient.
        let mut first = 0;
        for len in lengths {
            let alone = Var::from_tensor(&qkv.narrow(0, first, len).unwrap()).unwrap();
            let y = fused::attention(&alone, &shape(&[len]), &cos, &sin).unwrap();
            close(&y, &f.narrow(0, first, len).unwrap(), "a sequence alone");
            let seed = mix.narrow(0, first, len).unwrap();
            let grads = (y * seed).unwrap().sum_all().unwrap().backward().unwrap();
            close(
                grads.get(&alone).unwrap(),
                &df.narrow(0, first, len).unwrap(),
                "a sequence's gradient alone",
            );
            first += len;
        }
    }

    let (x, mix) = (random(&[7, 12]), random(&[7, 6]));
    let l = |y: Tensor| (y * mix.as_tensor()).unwrap().sum_all().unwrap();
    let f = fused::swiglu(&x).unwrap();
    let c = ops::swiglu(&x).unwrap();
    close(&f, &c, "swiglu");
    close(
        l(f).backward().unwrap().get(&x).unwrap(),
        l(c).backward().unwrap().get(&x).unwrap(),
        "swiglu dx",
    );
}

fn cosine(a: &Tensor, b: &Tensor) -> f64 {
    let (a, b) = (
        a.flatten_all().unwrap().to_dtype(DType::F64).unwrap(),
        b.flatten_all().unwrap().to_dtype(DType::F64).unwrap(),
    );
    let dot = (&a * &b)
        .unwrap()
        .sum_all()
        .unwrap()
        .to_scalar::<f64>()
        .unwrap();
    let norm = |x: &Tensor| {
        x.sqr()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f64>()
            .unwrap()
            .sqrt()
    };
    dot / (norm(&a) * norm(&b))
}

/// `dtype: bf16`: matmuls in bf16 (on the CPU, fp32 products rounded to bf16), fp32 masters
/// for trained weights and gradients that point where fp32's do; a LoRA base held in bf16,
/// 2 bytes a parameter, with fp32 adapters that train.
#[test]
fn bf16_trains_fp32_masters_and_holds_a_lora_base_in_bf16() {
    use agentrl_train::config::{Precision, TrainConfig};
    use agentrl_train::run::load_model;
    let dir = tempfile::tempdir().unwrap();
    common::write_model(dir.path(), "qwen2", false, 5);
    let bf16 = TrainConfig {
        dtype: Precision::Bf16,
        ..TrainConfig::default()
    };
    let (mut full, _) = load_model(dir.path(), &bf16).unwrap();
    full.make_trainable(None, 0).unwrap();
    assert!(full.vars().iter().all(|(_, v)| v.dtype() == DType::F32));
    let mut reference = tiny(DType::F32);
    reference.make_trainable(None, 0).unwrap();
    let (a, b) = (
        step::gradients(&full, &seqs(), Objective::Nll, 64, false, None).unwrap(),
        step::gradients(&reference, &seqs(), Objective::Nll, 64, false, None).unwrap(),
    );
    for (i, (name, _)) in full.vars().iter().enumerate() {
        let c = cosine(a.get(i).unwrap(), b.get(i).unwrap());
        assert!(
            c > 0.99,
            "{name}: cosine {c} between bf16 and fp32 gradients"
        );
    }

    let lora = TrainConfig {
        lora: Some(LoraConfig {
            rank: 4,
            alpha: 8.0,
            dropout: 0.0,
            target_modules: agentrl_train::model::lora::LORA_MODULES
                .map(String::from)
                .to_vec(),
            freeze_a: false,
        }),
        ..bf16
    };
    let (mut model, _) = load_model(dir.path(), &lora).unwrap();
    let base = model.state_dict(false).unwrap();
    assert!(base.values().all(|t| t.dtype() == DType::BF16));
    model.make_trainable(lora.lora.as_ref(), 0).unwrap();
    assert!(model.vars().iter().all(|(_, v)| v.dtype() == DType::F32));
    let mut optimizer = AdamW::new(model.vars(), &OptimizerConfig::default()).unwrap();
    let mut losses = Vec::new();
    for _ in 0..6 {
        let mut ctx = StepContext {
            model: &model,
            reference: None,
            optimizer: &mut optimizer,
            lr: 3e-2,
            budget: 64,
            dropout: None,
            checkpointing: false,
        };
        losses.push(train_step(&mut ctx, &seqs(), Objective::Nll).unwrap().loss);
    }
    assert!(
        losses[5] < losses[0] * 0.9,
        "LoRA in bf16 does not learn: {losses:?}"
    );
}

/// Activation checkpointing recomputes each layer in the backward: the gradients are those of
/// the stored activations (f64, to rounding), for full fine-tuning and for LoRA with dropout
/// (the recomputed layer draws the masks it drew before).
#[test]
fn checkpointed_layers_give_the_gradients_of_stored_ones() {
    let mut model = tiny(DType::F64);
    model.make_trainable(None, 0).unwrap();
    let assert_same = |model: &Model, dropout: Option<Dropout>, what: &str| {
        let stored = step::gradients(model, &seqs(), Objective::Nll, 64, false, dropout).unwrap();
        let recomputed =
            step::gradients(model, &seqs(), Objective::Nll, 64, true, dropout).unwrap();
        for (i, (name, _)) in model.vars().iter().enumerate() {
            let (a, b) = (stored.get(i).unwrap(), recomputed.get(i).unwrap());
            let diff = (a - b).unwrap().abs().unwrap().max_all().unwrap();
            let scale = a.abs().unwrap().max_all().unwrap();
            let (diff, scale) = (
                diff.to_scalar::<f32>().unwrap(),
                scale.to_scalar::<f32>().unwrap(),
            );
            assert!(diff <= 1e-6 * scale, "{what} {name}: {diff} (of {scale})");
        }
    };
    assert_same(&model, None, "full");
    let lora = LoraConfig {
        rank: 4,
        alpha: 8.0,
        dropout: 0.3,
        target_modules: agentrl_train::model::lora::LORA_MODULES
            .map(String::from)
            .to_vec(),
        freeze_a: false,
    };
    model.make_trainable(Some(&lora), 1).unwrap();
    // Non-zero B, so that every adapter's A has a gradient too.
    for (name, var) in model.vars() {
        if name.contains("lora_B") {
            var.set(&(var.as_tensor().ones_like().unwrap() * 0.01).unwrap())
                .unwrap();
        }
    }
    assert_same(
        &model,
        Some(Dropout { p: 0.3, seed: 7 }),
        "LoRA with dropout",
    );
}
