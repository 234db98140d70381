//! The agent learns.
//!
//! - The demo's multi-turn calculator task, shortened to fit the test suite: after the SFT
//!   warm-up on noisy demonstrations the greedy policy mostly skips the tool and guesses; GRPO
//!   must raise held-out success by a clear margin, on average over three seeds. The full run
//!   (≥ 0.9 within 15 minutes) and the credit comparison are in BENCHMARKS.md.
//! - The path TRL users know, `train run --sft FILE --prompts FILE`, on a copy task it builds:
//!   the warm-up must teach the model to stop after its answer (every completion ends with the
//!   end-of-sequence token), and online GRPO must then raise the sampled success.

use std::path::Path;

use agentrl_train::advantage::Credit;
use agentrl_train::config::TrainConfig;
use agentrl_train::data::read_prompts;
use agentrl_train::demo::{DemoOptions, DemoTask, run, write_base_model};
use agentrl_train::model::Model;
use agentrl_train::rollout::{Sampling, run_episodes};
use agentrl_train::run::{RunOptions, run_prompts};
use agentrl_train::task::{AnswerTask, Task};
use agentrl_train::tokenizer::Tok;
use candle_core::{DType, Device};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// Short runs differ a lot from seed to seed (in a few, GRPO has not yet left the warm-up's
/// guessing after 25 steps), so the test holds the mean of three seeds to the margin.
#[test]
fn grpo_raises_held_out_success_on_the_tool_use_task() {
    let mut runs = Vec::new();
    for seed in 0..3 {
        let out = tempfile::tempdir().unwrap();
        let mut o = DemoOptions::new(
            DemoTask::Calc,
            Credit::Broadcast,
            seed,
            1.0,
            out.path().to_owned(),
        );
        o.max_steps = 25;
        o.target = 0.8;
        let run = run(&o).unwrap();
        assert!(out.path().join("plots/success.png").exists());
        let scores = run.online_scores().unwrap();
        runs.push((scores.eval_success_before, scores.eval_success_after));
    }
    let mean = |f: fn(&(f64, f64)) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
    let (before, after) = (mean(|r| r.0), mean(|r| r.1));
    assert!(
        before < 0.3,
        "the warm-up alone should leave the agent guessing: {runs:?}"
    );
    assert!(
        after >= before + 0.4,
        "mean success {before} → {after} (before, after by seed: {runs:?})"
    );
}

/// `copy 46 57 =` → ` 46 57`: 1,500 demonstrations of which 30% answer the pair the wrong way
/// round, and 400 prompts matched `normalized`.
fn copy_task(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let pair = |rng: &mut ChaCha8Rng| (rng.random_range(10..100), rng.random_range(10..100));
    let mut sft = String::new();
    for _ in 0..1500 {
        let (a, b): (u32, u32) = pair(&mut rng);
        let answer = if rng.random::<f64>() < 0.3 {
            format!(" {b} {a}")
        } else {
            format!(" {a} {b}")
        };
        sft.push_str(&format!(
            "{}\n",
            json!({"prompt": format!("copy {a} {b} ="), "completion": answer})
        ));
    }
    let mut prompts = String::new();
    for _ in 0..400 {
        let (a, b): (u32, u32) = pair(&mut rng);
        let line = json!({"prompt": format!("copy {a} {b} ="), "answer": format!("{a} {b}"),
            "match": "normalized"});
        prompts.push_str(&format!("{line}\n"));
    }
    let (s, p) = (dir.join("sft.jsonl"), dir.join("prompts.jsonl"));
    std::fs::write(&s, sft).unwrap();
    std::fs::write(&p, prompts).unwrap();
    (s, p)
}

/// Greedy completions of the held-out prompts by the model in `dir`: how many ended with the
/// end-of-sequence token, and how many answered right.
fn greedy_stops(dir: &Path, task: &AnswerTask) -> (usize, usize) {
    let model = Model::load(dir, DType::F32, &Device::Cpu).unwrap();
    let tok = Tok::load(dir, &model.config.eos_ids()).unwrap();
    let envs = (0..task.eval_len()).map(|i| task.eval_env(i)).collect();
    let sampling = Sampling {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        max_rows: 64,
        max_new_tokens: 16,
        stop: Vec::new(),
        max_turns: 1,
        chat_template: false,
        max_len: 512,
    };
    let episodes = run_episodes(
        &model,
        &tok,
        envs,
        &sampling,
        &mut ChaCha8Rng::seed_from_u64(0),
    )
    .unwrap();
    let stopped = episodes
        .iter()
        .filter(|e| !e.truncated && e.response.last().is_some_and(|t| tok.eos().contains(t)))
        .count();
    (stopped, episodes.iter().filter(|e| e.success).count())
}

/// Without the end-of-sequence token on SFT completions, the warmed-up model answers and goes
/// on (`57 46 57 46 58 …`), every rollout scores 0 and GRPO has no signal: this is the test
/// that would have caught it.
#[test]
fn sft_teaches_stopping_and_grpo_on_prompts_raises_sampled_success() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("base");
    write_base_model(&model, "0123456789 =copy", 1).unwrap();
    let (sft, prompts) = copy_task(dir.path());
    let config = TrainConfig::parse(
        r#"{"seed": 1, "checkpoint_every": 0, "eval_every": 0, "micro_batch_tokens": 4096,
            "sft": {"epochs": 3, "learning_rate": 3e-3, "batch_size": 32},
            "grpo": {"learning_rate": 1e-3, "group_size": 8, "batch_prompts": 8,
                     "max_new_tokens": 16, "temperature": 1.0},
            "eval": {"holdout_fraction": 0.1, "max_prompts": 40}}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut o = RunOptions {
        model: model.clone(),
        out: out.clone(),
        config: config.clone(),
        steps: Some(0),
        stop_after: None,
        mirror: None,
        weights: None,
        init_adapter: None,
    };
    // The warm-up alone: it stops after its answer.
    run_prompts(&o, &prompts, Some(&sft)).unwrap().unwrap();
    let task = AnswerTask::new(read_prompts(&prompts).unwrap(), 0.1, 40, Vec::new());
    let (stopped, right) = greedy_stops(&out, &task);
    let n = task.eval_len();
    assert!(
        stopped * 10 >= n * 9,
        "{stopped} of {n} greedy completions ended with the end-of-sequence token"
    );
    assert!(right * 2 >= n, "{right} of {n} right after the warm-up");

    // Then GRPO, resumed from the warm-up's checkpoint.
    o.steps = Some(12);
    let run = run_prompts(&o, &prompts, Some(&sft)).unwrap().unwrap();
    assert_eq!((run.sft_steps, run.grpo_steps), (141, 12));
    let success: Vec<f64> = std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["phase"] == "grpo")
        .filter_map(|m| m["success"].as_f64())
        .collect();
    assert_eq!(success.len(), 12);
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let (first, last) = (mean(&success[..3]), mean(&success[9..]));
    assert!(
        last >= first + 0.15,
        "sampled success {first:.3} → {last:.3} over 12 GRPO steps: {success:?}"
    );
}
