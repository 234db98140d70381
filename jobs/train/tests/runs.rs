//! Whole runs through the library entry points of `agentrl train run`: online GRPO on
//! prompts, offline GRPO on a dataset through the safe-training gate, LoRA outputs, resume
//! after an interruption, bad inputs, and the files every run leaves.

mod common;

use std::path::Path;

use agentrl_core::training::RunReport;
use agentrl_train::config::{KeepAfterFinish, TrainConfig};
use agentrl_train::data::{Limits, Split, TurnSeq, read_rollouts, read_sft};
use agentrl_train::model::Model;
use agentrl_train::run::{RunOptions, run_dataset, run_prompts};
use agentrl_turns::{TurnRow, TurnWriter, WriterOptions};
use candle_core::{DType, Device};
use serde_json::{Value, json};

fn options(model: &Path, out: &Path, config: TrainConfig, steps: u64) -> RunOptions {
    RunOptions {
        model: model.to_owned(),
        out: out.to_owned(),
        config,
        steps: Some(steps),
        stop_after: None,
        mirror: None,
        weights: None,
        init_adapter: None,
    }
}

/// A finished run's report as its `run.json` text says it.
fn report(run: agentrl_train::error::Result<Option<RunReport>>) -> Value {
    serde_json::to_value(run.unwrap().expect("the run finished")).unwrap()
}

fn tensors(path: &Path) -> std::collections::HashMap<String, Vec<f32>> {
    candle_core::safetensors::load(path, &Device::Cpu)
        .unwrap()
        .into_iter()
        .map(|(k, t)| (k, t.flatten_all().unwrap().to_vec1::<f32>().unwrap()))
        .collect()
}

#[test]
fn an_online_run_writes_a_loadable_checkpoint_metrics_report_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    common::write_model(&model, "qwen2", true, 2);
    let (p, s) = common::prompts(dir.path());
    let out = dir.path().join("out");
    let mut config = common::small_config();
    config.keep_checkpoints = 3;
    config.keep_after_finish = KeepAfterFinish::All;
    let run = report(run_prompts(&options(&model, &out, config, 3), &p, Some(&s)));
    assert_eq!(run["grpo_steps"], 3);
    assert_eq!(run["sft_steps"], 3, "12 examples in batches of 4");
    assert_eq!(run["sft"]["examples"], 12);
    assert_eq!(run["mode"], "prompts");
    for key in [
        "base_model_sha256",
        "dataset_content_hash",
        "config",
        "final_metrics",
        "wall_time_s",
        "eval_success_before",
        "eval_success_after",
        "peak_rss_mb",
    ] {
        assert!(!run[key].is_null(), "run.json lacks {key}");
    }
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    // (Floats are compared by the fields that matter: JSON text round trips are not exact.)
    assert_eq!(on_disk["base_model_sha256"], run["base_model_sha256"]);
    assert_eq!(on_disk["final_metrics"]["step"], 3);
    let lines: Vec<Value> = std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let steps: Vec<&Value> = lines
        .iter()
        .filter(|l| l.get("eval_success").is_none())
        .collect();
    assert_eq!(steps.iter().filter(|l| l["phase"] == "sft").count(), 3);
    assert_eq!(steps.iter().filter(|l| l["phase"] == "grpo").count(), 3);
    for l in &steps {
        for key in [
            "step",
            "phase",
            "loss",
            "reward_mean",
            "reward_std",
            "kl",
            "clip_fraction",
            "entropy",
            "grad_norm",
            "lr",
            "tokens",
            "tokens_per_s",
            "elapsed_s",
        ] {
            assert!(l.get(key).is_some(), "metrics line lacks {key}: {l}");
        }
    }
    assert!(
        lines
            .iter()
            .any(|l| l.get("eval_success").is_some() && l.get("eval_reward").is_some())
    );
    for png in ["reward", "loss", "kl", "success"] {
        let bytes = std::fs::read(out.join("plots").join(format!("{png}.png"))).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    }
    // The checkpoint is a model directory the trainer (and transformers) loads, with weights
    // that moved away from the base.
    let trained = Model::load(&out, DType::F32, &Device::Cpu).unwrap();
    assert_eq!(
        trained.config,
        Model::load(&model, DType::F32, &Device::Cpu)
            .unwrap()
            .config
    );
    assert_eq!(
        std::fs::read(out.join("tokenizer.json")).unwrap(),
        std::fs::read(model.join("tokenizer.json")).unwrap()
    );
    let (before, after) = (
        tensors(&model.join("model.safetensors")),
        tensors(&out.join("model.safetensors")),
    );
    assert_ne!(
        before["model.layers.0.self_attn.q_proj.weight"],
        after["model.layers.0.self_attn.q_proj.weight"]
    );
    // transformers computes head_dim ** -0.5: a null would break loading.
    let written: Value =
        serde_json::from_slice(&std::fs::read(out.join("config.json")).unwrap()).unwrap();
    for key in ["head_dim", "num_key_value_heads", "eos_token_id"] {
        assert!(
            written.get(key).is_none_or(|v| !v.is_null()),
            "{key} is null in config.json"
        );
    }
    // `keep_after_finish: all`: the `keep_checkpoints` newest are kept, each complete.
    let kept: Vec<_> = std::fs::read_dir(out.join("checkpoints"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(kept.len(), 3);
    assert!(kept.iter().all(|e| e.path().join("state.json").exists()));
}

#[test]
fn a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    common::write_model(&model, "qwen2", false, 4);
    let (p, s) = common::prompts(dir.path());
    let straight = dir.path().join("straight");
    run_prompts(
        &options(&model, &straight, common::small_config(), 4),
        &p,
        Some(&s),
    )
    .unwrap()
    .unwrap();

    let resumed = dir.path().join("resumed");
    let mut o = options(&model, &resumed, common::small_config(), 4);
    o.stop_after = Some(5);
    assert!(
        run_prompts(&o, &p, Some(&s)).unwrap().is_none(),
        "stopped after 3 SFT + 2 GRPO steps"
    );
    assert!(
        !resumed.join("run.json").exists(),
        "an interrupted run must not look finished"
    );
    o.stop_after = None;
    let run = report(run_prompts(&o, &p, Some(&s)));
    assert_eq!(run["grpo_steps"], 4);

    let (a, b) = (
        tensors(&straight.join("model.safetensors")),
        tensors(&resumed.join("model.safetensors")),
    );
    for (name, x) in &a {
        let diff = x
            .iter()
            .zip(&b[name])
            .map(|(p, q)| (p - q).abs())
            .fold(0.0f32, f32::max);
        assert!(diff <= 1e-6, "{name}: {diff}");
    }
    let lines = |d: &Path| {
        std::fs::read_to_string(d.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(lines(&straight), lines(&resumed));
}

#[test]
fn lora_runs_write_peft_adapters_and_merged_weights() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    common::write_model(&model, "llama", false, 6);
    let (p, _) = common::prompts(dir.path());
    let out = dir.path().join("out");
    let mut config = common::small_config();
    config.lora = Some(agentrl_train::model::LoraConfig {
        rank: 2,
        alpha: 4.0,
        dropout: 0.0,
        target_modules: vec!["q_proj".into(), "v_proj".into()],
        freeze_a: false,
    });
    config.merge_lora = true;
    let run = report(run_prompts(&options(&model, &out, config, 2), &p, None));
    assert_eq!(run["model"]["lora"], true);
    assert!(
        !out.join("checkpoints").exists(),
        "keep_after_finish defaults to weights: the optimizer state goes"
    );
    assert!(
        out.join("adapter_config.json").exists() && out.join("adapter_model.safetensors").exists()
    );
    assert!(!out.join("model.safetensors").exists());
    Model::load(&out.join("merged"), DType::F32, &Device::Cpu).unwrap();
}

fn row(trajectory: &str, group: &str, turn: i32, reward: f64, tok_sha: &str) -> TurnRow {
    TurnRow {
        trajectory_id: trajectory.into(),
        conversation_id: format!("c-{trajectory}"),
        turn_index: turn,
        turn_count: 2,
        agent_id: "agent-1".into(),
        group_id: Some(group.into()),
        policy_version: Some("v3".into()),
        role: if turn == 0 {
            "user".into()
        } else {
            "assistant".into()
        },
        content: if turn == 0 {
            "Q:2+2".into()
        } else {
            "4".into()
        },
        prompt_token_ids: (turn == 1).then(|| vec![16, 13, 3, 11, 3, 14]),
        response_token_ids: (turn == 1).then(|| vec![5, 14]),
        loss_mask: (turn == 1).then(|| vec![1, 1]),
        behavior_logprobs: (turn == 1).then(|| vec![-1.5, -0.7]),
        tokenizer: Some(tok_sha.into()),
        turn_reward: (turn == 1).then_some(0.0),
        episode_reward: Some(reward),
        message_id: format!("m-{trajectory}"),
        ..TurnRow::default()
    }
}

fn write_dataset(dir: &Path, rows: &[TurnRow]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut writer = TurnWriter::new(Vec::new(), &WriterOptions::default()).unwrap();
    for r in rows {
        writer.write(r).unwrap();
    }
    std::fs::write(dir.join("train.parquet"), writer.finish().unwrap()).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        json!({"schema_version": 1, "content_hash": "abc"}).to_string(),
    )
    .unwrap();
}

#[test]
fn rows_longer_than_max_seq_len_keep_their_start_and_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let tok = common::tok();
    let mut long = [
        row("long", "g", 0, 1.0, &tok.sha256),
        row("long", "g", 1, 1.0, &tok.sha256),
    ];
    long[1].prompt_token_ids = Some(vec![3; 10]);
    long[1].response_token_ids = Some(vec![5; 6]);
    long[1].loss_mask = Some(vec![1; 6]);
    long[1].behavior_logprobs = Some(vec![-1.0; 6]);
    let mut huge = [
        row("huge", "g", 0, 0.0, &tok.sha256),
        row("huge", "g", 1, 0.0, &tok.sha256),
    ];
    huge[1].prompt_token_ids = Some(vec![3; 12]);
    let rows = [
        row("short", "g", 0, 0.5, &tok.sha256),
        row("short", "g", 1, 0.5, &tok.sha256),
        long[0].clone(),
        long[1].clone(),
        huge[0].clone(),
        huge[1].clone(),
    ];
    let data = dir.path().join("dataset");
    write_dataset(&data, &rows);
    let mut config = common::small_config();
    config.grpo.policy_version = Some(3);
    let limits = Limits {
        vocab: 32,
        max_len: 12,
    };
    let (read, counts) = read_rollouts(&data, Split::Train, &tok, limits, &config).unwrap();
    assert_eq!(
        (counts.kept, counts.truncated_turns, counts.too_long),
        (2, 1, 1)
    );
    let cut = &read.turns(1).unwrap()[0];
    assert_eq!((cut.ids.len(), cut.start, cut.mask.len()), (12, 10, 2));
    assert_eq!(cut.behaviour.as_deref(), Some(&[-1.0f32, -1.0][..]));

    // SFT rows likewise; a completion that fits ends with the end-of-sequence token.
    let sft = dir.path().join("sft.jsonl");
    std::fs::write(
        &sft,
        [
            ("Q:1+1\n", "2"),
            ("Q:12+12\n", "2424242424"),
            ("Q:1234567890+1\n", "1"),
        ]
        .map(|(p, c)| json!({"prompt": p, "completion": c}).to_string())
        .join("\n"),
    )
    .unwrap();
    let (examples, counts) = read_sft(&sft, &tok, false, 12).unwrap();
    assert_eq!(
        (counts.examples, counts.truncated, counts.too_long),
        (2, 1, 1)
    );
    assert_eq!(examples[0].completion, tok.ended(tok.encode("2").unwrap()));
    assert_eq!(examples[0].completion.last(), Some(&tok.eos()[0]));
    assert_eq!(examples[1].prompt.len() + examples[1].completion.len(), 12);
}

#[test]
fn the_dataset_reader_streams_interleaved_trajectories_and_counts_late_rows() {
    let dir = tempfile::tempdir().unwrap();
    let sha = common::tok().sha256;
    let mut t3 = [
        row("t3", "g-2", 0, 0.2, &sha),
        row("t3", "g-2", 1, 0.2, &sha),
    ];
    for r in &mut t3 {
        r.turn_count = 3;
    }
    let rows = [
        row("t0", "g-1", 0, 1.0, &sha),
        row("t1", "g-1", 0, 0.0, &sha),
        row("t0", "g-1", 1, 1.0, &sha),
        row("t1", "g-1", 1, 0.0, &sha),
        // A copy of t0's last turn after t0 was complete: dropped and counted.
        row("t0", "g-1", 1, 1.0, &sha),
        row("t2", "g-2", 1, 0.5, &sha),
        row("t2", "g-2", 0, 0.5, &sha),
        // t3 says it has 3 turns but has 2: gated at the end on what there is.
        t3[0].clone(),
        t3[1].clone(),
    ];
    let data = dir.path().join("dataset");
    write_dataset(&data, &rows);
    let mut config = common::small_config();
    config.grpo.policy_version = Some(3);
    let limits = Limits {
        vocab: 32,
        max_len: 128,
    };
    let (read, counts) =
        read_rollouts(&data, Split::Train, &common::tok(), limits, &config).unwrap();
    assert_eq!(
        (counts.trajectories, counts.kept, counts.late_turns),
        (4, 4, 1)
    );
    let rewards: Vec<f64> = read.items.iter().map(|r| r.reward).collect();
    assert_eq!(rewards, [1.0, 0.0, 0.5, 0.2], "in the order each completed");
    let groups: Vec<&str> = read.items.iter().map(|r| r.group.as_str()).collect();
    assert_eq!(groups, ["g-1", "g-1", "g-2", "g-2"]);
    for i in 0..4 {
        assert_eq!(
            read.turns(i).unwrap(),
            [TurnSeq {
                ids: vec![16, 13, 3, 11, 3, 14, 5, 14],
                start: 6,
                mask: vec![true, true],
                behaviour: Some(vec![-1.5, -0.7]),
            }],
            "trajectory {i} read back from the turn store"
        );
    }
}

#[test]
fn a_dataset_run_trains_through_the_gate_and_counts_what_it_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    common::write_model(&model, "qwen2", true, 8);
    let sha = common::tok().sha256;
    let mut rows = Vec::new();
    for (i, reward) in [1.0, 0.0, 0.5, 0.0, 1.0, 0.2].into_iter().enumerate() {
        let group = if i < 3 { "g-1" } else { "g-2" };
        rows.push(row(&format!("t{i}"), group, 0, reward, &sha));
        rows.push(row(&format!("t{i}"), group, 1, reward, &sha));
    }
    let mut bad = |name: &str, f: &dyn Fn(&mut TurnRow)| {
        let mut r = row(name, "g-1", 1, 1.0, &sha);
        f(&mut r);
        rows.push(row(name, "g-1", 0, 1.0, &sha));
        rows.push(r);
    };
    bad("unsafe", &|r| r.safety_violation = true);
    bad("lengths", &|r| r.behavior_logprobs = Some(vec![-1.0]));
    bad("tokenizer", &|r| r.tokenizer = Some("someone-else".into()));
    bad("vocab", &|r| r.response_token_ids = Some(vec![5, 999]));
    bad("reward", &|r| r.episode_reward = Some(5.0));
    bad("stale", &|r| r.policy_version = Some("v1".into()));
    let data = dir.path().join("dataset");
    write_dataset(&data, &rows);
    let mut config = common::small_config();
    config.grpo.policy_version = Some(3);
    config.grpo.max_staleness = Some(1);
    let out = dir.path().join("out");
    let run = report(run_dataset(&options(&model, &out, config, 2), &data));
    assert_eq!(run["mode"], "dataset");
    let gate = &run["gate"];
    assert_eq!(gate["trajectories"], 12);
    assert_eq!(gate["kept"], 6);
    for key in [
        "safety_violation",
        "inconsistent_lengths",
        "tokenizer_mismatch",
        "token_out_of_vocab",
        "reward_out_of_range",
        "stale",
    ] {
        assert_eq!(gate[key], 1, "{key}: {gate}");
    }
    assert_eq!(
        gate["off_policy_turns"], 6,
        "same policy version and tokenizer: behaviour logprobs are π_old"
    );
    assert_eq!(run["grpo_steps"], 2);
    let last = &run["final_metrics"];
    assert!(last["importance_weight"].as_f64().unwrap() > 0.0);
    assert!(last["tokens"].as_u64().unwrap() > 0);

    // Nothing left after the gate: a clear error, no finished-looking output.
    let only_bad: Vec<TurnRow> = rows
        .iter()
        .filter(|r| r.trajectory_id == "unsafe")
        .cloned()
        .collect();
    let data2 = dir.path().join("dataset2");
    write_dataset(&data2, &only_bad);
    let out2 = dir.path().join("out2");
    let e = run_dataset(&options(&model, &out2, common::small_config(), 2), &data2)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nothing left to train on") && e.contains("safety_violation"),
        "{e}"
    );
    assert!(!out2.join("run.json").exists());

    // Another schema version is refused, naming the manifest.
    std::fs::write(
        data2.join("manifest.json"),
        json!({"schema_version": agentrl_turns::SCHEMA_VERSION + 1}).to_string(),
    )
    .unwrap();
    let e = run_dataset(&options(&model, &out2, common::small_config(), 2), &data2)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("manifest.json") && e.contains("schema_version"),
        "{e}"
    );
}
