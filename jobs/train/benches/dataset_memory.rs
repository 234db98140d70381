//! Peak memory of an offline GRPO run against the size of its dataset: the same run on a
//! dataset and on one 10× larger, each in a child process of its own (peak RSS is per
//! process). The goal: the peak follows the micro-batch, not the dataset.
//!
//! `cargo bench -p agentrl-train --bench dataset_memory` (figures in BENCHMARKS.md).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use agentrl_train::config::TrainConfig;
use agentrl_train::demo::write_base_model;
use agentrl_train::run::{RunOptions, run_dataset};
use agentrl_turns::{TurnRow, TurnWriter, WriterOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const ALPHABET: &str = "0123456789+:=\nACLQR";
/// Trajectories of the smaller dataset (groups of 8).
const BASE_TRAJECTORIES: usize = 2_000;
const PROMPT_TOKENS: usize = 384;
const RESPONSE_TOKENS: usize = 128;

const CONFIG: &str = r#"{"seed": 1, "checkpoint_every": 0, "eval_every": 0, "micro_batch_tokens": 4096,
    "sft": {"epochs": 0},
    "grpo": {"learning_rate": 1e-4, "group_size": 8, "batch_prompts": 4}}"#;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("child") {
        // As the `train` commands do (before any thread: nothing has started one yet).
        // SAFETY: this process has one thread.
        #[allow(unsafe_code, reason = "process-wide settings before any thread starts")]
        unsafe {
            agentrl_train::process::prepare()
        };
        return child(
            Path::new(&args[2]),
            Path::new(&args[3]),
            Path::new(&args[4]),
        );
    }
    let work = tempfile::tempdir()?;
    let model = work.path().join("model");
    write_base_model(&model, ALPHABET, 1)?;
    println!("trajectories\ttrain.parquet MB\ttoken ids MB\tpeak RSS MB\twall s");
    for scale in [1, 10] {
        let trajectories = BASE_TRAJECTORIES * scale;
        let data = work.path().join(format!("data-{scale}"));
        let file_mb = write_dataset(&data, trajectories)?;
        let out = work.path().join(format!("out-{scale}"));
        let t0 = Instant::now();
        let status = Command::new(std::env::current_exe()?)
            .args([
                "child".as_ref(),
                model.as_os_str(),
                data.as_os_str(),
                out.as_os_str(),
            ])
            .status()?;
        anyhow::ensure!(status.success(), "the training child failed: {status}");
        let run: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("run.json"))?)?;
        let ids_mb = (trajectories * (PROMPT_TOKENS + RESPONSE_TOKENS) * 4) as f64 / 1e6;
        println!(
            "{trajectories}\t{file_mb:.1}\t{ids_mb:.1}\t{:.0}\t{:.1}",
            run["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Three offline GRPO steps on `data`; `run.json` reports the peak RSS.
fn child(model: &Path, data: &Path, out: &Path) -> anyhow::Result<()> {
    let options = RunOptions {
        model: model.to_owned(),
        out: out.to_owned(),
        config: TrainConfig::parse(CONFIG)?,
        steps: Some(3),
        stop_after: None,
        mirror: None,
        weights: None,
        init_adapter: None,
    };
    run_dataset(&options, data)?;
    Ok(())
}

/// Writes a dataset of `trajectories` two-turn trajectories (a user turn, a model turn with
/// token ids and behaviour logprobs) and returns the size of `train.parquet` in MB.
fn write_dataset(dir: &Path, trajectories: usize) -> anyhow::Result<f64> {
    std::fs::create_dir_all(dir)?;
    let vocab = i32::try_from(ALPHABET.len())?;
    let mut rng = ChaCha8Rng::seed_from_u64(trajectories as u64);
    let file = std::io::BufWriter::new(std::fs::File::create(dir.join("train.parquet"))?);
    let mut writer = TurnWriter::new(file, &WriterOptions::default())?;
    for t in 0..trajectories {
        let reward = f64::from(rng.random_range(0..=4u8)) / 4.0;
        let base = TurnRow {
            trajectory_id: format!("t-{t:07}"),
            conversation_id: format!("c-{t:07}"),
            turn_count: 2,
            agent_id: "agent-1".into(),
            group_id: Some(format!("g-{:06}", t / 8)),
            episode_reward: Some(reward),
            message_id: format!("m-{t:07}"),
            ..TurnRow::default()
        };
        let text = |n: usize, rng: &mut ChaCha8Rng| -> String {
            (0..n)
                .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
                .collect()
        };
        writer.write(&TurnRow {
            role: "user".into(),
            content: text(PROMPT_TOKENS, &mut rng),
            ..base.clone()
        })?;
        writer.write(&TurnRow {
            turn_index: 1,
            role: "assistant".into(),
            content: text(RESPONSE_TOKENS, &mut rng),
            prompt_token_ids: Some(
                (0..PROMPT_TOKENS)
                    .map(|_| rng.random_range(0..vocab))
                    .collect(),
            ),
            response_token_ids: Some(
                (0..RESPONSE_TOKENS)
                    .map(|_| rng.random_range(0..vocab))
                    .collect(),
            ),
            loss_mask: Some(vec![1; RESPONSE_TOKENS]),
            behavior_logprobs: Some(
                (0..RESPONSE_TOKENS)
                    .map(|_| -rng.random_range(0.01f32..5.0))
                    .collect(),
            ),
            turn_reward: Some(0.0),
            ..base
        })?;
    }
    writer.finish()?;
    std::fs::write(
        dir.join("manifest.json"),
        json!({"schema_version": 1, "content_hash": format!("bench-{trajectories}")}).to_string(),
    )?;
    Ok(std::fs::metadata(dir.join("train.parquet"))?.len() as f64 / 1e6)
}
