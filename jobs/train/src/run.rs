//! The entry points of `agentrl train`: `run` on a dataset or on prompts, `logprobs`, `bench`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use agentrl_core::training::{OnlineScores, RunOutcome, RunReport, Validation};
use candle_core::{DType, Device};
use serde_json::{Value, json};

use crate::config::TrainConfig;
use crate::data::{Limits, Split, check_manifest, read_prompts, read_rollouts, read_sft};
use crate::error::{Result, TrainError};
use crate::evaluate::{Evaluation, evaluate};
use crate::model::{Model, ModelConfig};
use crate::optim::AdamW;
use crate::plan::{self, Target, Workload};
use crate::step::{Objective, StepContext, TrainSeq, response_logprobs, train_step};
use crate::task::{AnswerTask, Task};
use crate::tokenizer::Tok;
use crate::trainer::{Ended, Identity, Trainer, hash_files, hash_model_dir};

/// The device: the first GPU with the `cuda` feature, else the CPU.
///
/// # Errors
/// No usable GPU in a `cuda` build.
pub fn device() -> Result<Device> {
    #[cfg(feature = "cuda")]
    {
        Ok(Device::new_cuda(0)?)
    }
    #[cfg(not(feature = "cuda"))]
    {
        Ok(Device::Cpu)
    }
}

/// A model directory's `config.json` and tokenizer: everything but the weights.
///
/// # Errors
/// Missing or corrupt files, a tokenizer larger than the model's vocabulary.
pub fn open_model(dir: &Path) -> Result<(ModelConfig, Tok)> {
    let config = crate::model::config::load(dir)?;
    let tok = Tok::load(dir, &config.eos_ids())?;
    if tok.vocab_size() > config.vocab_size {
        return Err(TrainError::file(
            &dir.join("tokenizer.json"),
            format!(
                "{} tokens, but the model has {} embedding rows",
                tok.vocab_size(),
                config.vocab_size
            ),
        ));
    }
    Ok((config, tok))
}

/// Loads a model directory's weights for `config`'s run: computing in its `dtype`, weights
/// that will be trained as fp32 masters, a LoRA base held in the compute dtype (a bf16
/// checkpoint loads with no fp32 copy).
///
/// # Errors
/// Missing or corrupt files.
pub fn load_weights(dir: &Path, config: &TrainConfig) -> Result<Model> {
    let device = device()?;
    let compute = crate::config::compute(config.dtype, &device);
    let storage = if config.lora.is_some() {
        compute
    } else {
        DType::F32
    };
    let mut model = Model::load(dir, storage, &device)?;
    model.set_compute_dtype(compute);
    Ok(model)
}

/// [`open_model`] and [`load_weights`].
///
/// # Errors
/// As theirs.
pub fn load_model(dir: &Path, config: &TrainConfig) -> Result<(Model, Tok)> {
    let (_, tok) = open_model(dir)?;
    Ok((load_weights(dir, config)?, tok))
}

/// The device's memory, GiB: the GPU's (`nvidia-smi`), or the host's available memory.
///
/// # Errors
/// Neither can be read.
pub fn device_memory(target: Target) -> Result<f64> {
    match target {
        Target::Cuda => {
            let out = std::process::Command::new("nvidia-smi")
                .args([
                    "--query-gpu=memory.total",
                    "--format=csv,noheader,nounits",
                    "-i",
                    "0",
                ])
                .output()
                .map_err(|e| TrainError::Data(format!("nvidia-smi: {e}")))?;
            let text = String::from_utf8_lossy(&out.stdout);
            let mib: f64 = text
                .trim()
                .parse()
                .map_err(|_| TrainError::Data(format!("nvidia-smi: no GPU memory in {text:?}")))?;
            Ok(mib / 1024.0)
        }
        Target::Cpu => {
            let info = std::fs::read_to_string("/proc/meminfo")?;
            let kib = info
                .lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|l| l.split_whitespace().next())
                .and_then(|n| n.parse::<f64>().ok())
                .ok_or_else(|| TrainError::Data("/proc/meminfo: no MemAvailable".into()))?;
            Ok(kib / (1024.0 * 1024.0))
        }
    }
}

/// The device this build trains on.
#[must_use]
pub fn target() -> Target {
    if cfg!(feature = "cuda") {
        Target::Cuda
    } else {
        Target::Cpu
    }
}

/// `config` with its micro-batch planned for this device: the plan's when the config names
/// none. A run that cannot fit is refused with the plan's breakdown.
///
/// # Errors
/// The run does not fit, the device's memory cannot be read.
pub fn planned(
    model: &ModelConfig,
    config: &TrainConfig,
    workload: Workload,
) -> Result<TrainConfig> {
    let target = target();
    let memory = device_memory(target)?;
    let plan = plan::plan(model, config, target, memory, workload);
    if !plan.fits {
        return Err(TrainError::Data(format!(
            "the run does not fit: it needs {:.2} GiB at its peak, {:.2} GiB of {} memory can be used: {}",
            plan.peak_gb,
            memory * 0.9,
            serde_json::to_string(&plan.device).unwrap_or_default(),
            serde_json::to_string(&plan).unwrap_or_default()
        )));
    }
    tracing::info!(
        peak_gb = plan.peak_gb,
        micro_batch_tokens = plan.micro_batch_tokens,
        "planned"
    );
    Ok(TrainConfig {
        micro_batch_tokens: Some(plan.micro_batch_tokens),
        ..config.clone()
    })
}

/// Common options of `train run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The base model directory.
    pub model: PathBuf,
    /// Where everything is written.
    pub out: PathBuf,
    /// The config.
    pub config: TrainConfig,
    /// GRPO optimizer steps (`None`: `grpo.steps`).
    pub steps: Option<u64>,
    /// Stop with a checkpoint after this many optimizer steps in this process.
    pub stop_after: Option<u64>,
    /// The S3 prefix `out` is mirrored to.
    pub mirror: Option<crate::remote::Prefix>,
    /// Where the model's weight files come from once the run's plan says it fits (an
    /// `s3://` model staged without them, [`crate::remote::stage_model`]).
    pub weights: Option<crate::remote::Prefix>,
    /// An adapter (PEFT layout) the run starts from instead of fresh ones: a federated
    /// round's global adapter.
    pub init_adapter: Option<PathBuf>,
}

impl RunOptions {
    /// The model's weights, fetched when they are remote, loaded for `config`.
    fn weights(&self, config: &TrainConfig) -> Result<Model> {
        if let Some(remote) = &self.weights {
            remote.download_where(&self.model, crate::remote::is_weights)?;
        }
        load_weights(&self.model, config)
    }

    /// What identifies the run besides the base model: the data and the initial adapter.
    fn identity(&self, base_model_sha256: String, data_sha256: String) -> Result<Identity> {
        let init_adapter = match &self.init_adapter {
            Some(dir) => {
                let files = [
                    dir.join("adapter_config.json"),
                    dir.join("adapter_model.safetensors"),
                ];
                let files: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
                Some((dir.clone(), hash_files(&files)?))
            }
            None => None,
        };
        Ok(Identity {
            base_model_sha256,
            data_sha256,
            init_adapter,
        })
    }
}

/// `train run --dataset DIR`: SFT on `sft.jsonl`, then offline GRPO on `train.parquet`.
///
/// # Errors
/// Bad inputs, each naming its file or field.
/// Returns `run.json` when the run finished, `None` when it stopped early to resume.
pub fn run_dataset(o: &RunOptions, dataset: &Path) -> Result<Option<RunReport>> {
    let hashes = check_manifest(dataset)?;
    let (model_config, tok) = open_model(&o.model)?;
    let limits = Limits {
        vocab: model_config.vocab_size,
        max_len: o.config.seq_limit(model_config.max_position_embeddings),
    };
    let (rollouts, gate) = read_rollouts(dataset, Split::Train, &tok, limits, &o.config)?;
    let (validation, _) = read_rollouts(dataset, Split::Validation, &tok, limits, &o.config)?;
    let sft_path = dataset.join("sft.jsonl");
    let (sft, sft_counts) = if o.config.sft.epochs > 0 && sft_path.exists() {
        read_sft(&sft_path, &tok, o.config.grpo.chat_template, limits.max_len)?
    } else {
        Default::default()
    };
    let longest = longest_example(&sft)
        .max(rollouts.longest)
        .max(validation.longest);
    let config = planned(
        &model_config,
        &o.config,
        Workload::from_config(&o.config, longest, false),
    )?;
    let model = o.weights(&config)?;
    let validation_set = hashes.validation;
    let budget = config.micro_batch_tokens.unwrap_or(longest);
    let base_model_sha256 = hash_model_dir(&o.model)?;
    let before = base_scores(
        o,
        &model,
        &validation,
        &validation_set,
        &base_model_sha256,
        budget,
    )?;
    let identity = o.identity(base_model_sha256, hashes.content)?;
    let mut trainer = Trainer::new(model, tok, config, &o.out, identity)?;
    trainer.stop_after = o.stop_after;
    trainer.mirror = o.mirror.clone();
    if trainer.sft(&sft)? == Ended::Interrupted {
        return Ok(None);
    }
    let steps = o.steps.unwrap_or(o.config.grpo.steps);
    if steps > 0 && trainer.grpo_offline(&rollouts, steps)? == Ended::Interrupted {
        return Ok(None);
    }
    trainer.checkpoint()?;
    let after = evaluate(&trainer.model, &validation, &validation_set, budget)?;
    let outcome = RunOutcome::Dataset {
        gate,
        validation: Validation { before, after },
    };
    Ok(Some(trainer.finish(sft_counts, outcome)?))
}

/// The base model's validation scores: computed on the base weights before a checkpoint can
/// replace them and kept in `validation-before.json`, which a resumed run of the same base
/// model and validation set reads back.
fn base_scores(
    o: &RunOptions,
    model: &Model,
    validation: &crate::data::Rollouts,
    validation_set: &str,
    base_model_sha256: &str,
    budget: usize,
) -> Result<Option<Evaluation>> {
    let path = o.out.join("validation-before.json");
    let key = json!({"base_model_sha256": base_model_sha256, "validation_set": validation_set});
    if let Ok(bytes) = std::fs::read(&path)
        && let Ok(saved) = serde_json::from_slice::<Value>(&bytes)
        && saved.get("key") == Some(&key)
    {
        return serde_json::from_value(saved["evaluation"].clone())
            .map_err(|e| TrainError::file(&path, e));
    }
    let before = evaluate(model, validation, validation_set, budget)?;
    std::fs::create_dir_all(&o.out)?;
    let saved = json!({"key": key, "evaluation": before});
    std::fs::write(
        &path,
        serde_json::to_vec(&saved).map_err(|e| TrainError::Data(e.to_string()))?,
    )?;
    Ok(before)
}

/// `train run --prompts FILE [--sft FILE]`: SFT first when given, then online GRPO.
///
/// # Errors
/// Bad inputs, each naming its file or field.
/// Returns `run.json` when the run finished, `None` when it stopped early to resume.
pub fn run_prompts(
    o: &RunOptions,
    prompts: &Path,
    sft: Option<&Path>,
) -> Result<Option<RunReport>> {
    let (model_config, tok) = open_model(&o.model)?;
    let lines = read_prompts(prompts)?;
    let max_len = o.config.seq_limit(model_config.max_position_embeddings);
    let (examples, sft_counts) = sft
        .map(|p| read_sft(p, &tok, o.config.grpo.chat_template, max_len))
        .transpose()?
        .unwrap_or_default();
    let mut longest_prompt = 0;
    for line in &lines {
        let text = tok
            .prompt_text(&line.prompt, o.config.grpo.chat_template)
            .map_err(|e| TrainError::file(prompts, format!("chat template: {e}")))?;
        longest_prompt = longest_prompt.max(tok.encode(&text)?.len());
    }
    let episode = (longest_prompt + o.config.grpo.max_new_tokens).min(max_len);
    let config = planned(
        &model_config,
        &o.config,
        Workload::from_config(&o.config, episode.max(longest_example(&examples)), true),
    )?;
    let model = o.weights(&config)?;
    let mut files = vec![prompts];
    files.extend(sft);
    let identity = o.identity(hash_model_dir(&o.model)?, hash_files(&files)?)?;
    let task = AnswerTask::new(
        lines,
        o.config.eval.holdout_fraction,
        o.config.eval.max_prompts,
        Vec::new(),
    );
    let mut trainer = Trainer::new(model, tok, config, &o.out, identity)?;
    trainer.stop_after = o.stop_after;
    trainer.mirror = o.mirror.clone();
    if trainer.sft(&examples)? == Ended::Interrupted {
        return Ok(None);
    }
    let steps = o.steps.unwrap_or(o.config.grpo.steps);
    let (before, reward_before) = trainer.evaluate(&task)?;
    if steps > 0 && trainer.grpo_online(&task, steps, None)? == Ended::Interrupted {
        return Ok(None);
    }
    let (after, reward_after) = trainer.evaluate(&task)?;
    trainer.checkpoint()?;
    let scores = OnlineScores {
        eval_prompts: task.eval_len(),
        eval_success_before: before,
        eval_reward_before: reward_before,
        eval_success_after: after,
        eval_reward_after: reward_after,
    };
    Ok(Some(
        trainer.finish(sft_counts, RunOutcome::Prompts(scores))?,
    ))
}

/// Packed tokens per forward of `train logprobs` (no backward: activations are freed layer
/// by layer, and the head's logits exist one vocabulary chunk at a time).
const LOGPROBS_BUDGET: usize = 8192;

/// The longest SFT example, prompt and completion, in tokens.
fn longest_example(examples: &[crate::data::SftExample]) -> usize {
    examples
        .iter()
        .map(|e| e.prompt.len() + e.completion.len())
        .max()
        .unwrap_or(0)
}

/// `train logprobs` in `dtype`: one `{"logprobs": [...]}` line per input line
/// `{"prompt_ids": [...], "response_ids": [...]}`.
///
/// # Errors
/// A malformed line (named by number), ids outside the vocabulary.
pub fn logprobs(
    model_dir: &Path,
    input: &Path,
    dtype: crate::config::Precision,
    out: &mut dyn Write,
) -> Result<()> {
    let config = TrainConfig {
        dtype,
        ..TrainConfig::default()
    };
    let (model, _) = load_model(model_dir, &config)?;
    let file = std::fs::File::open(input).map_err(|e| TrainError::file(input, e))?;
    let mut seqs = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| TrainError::file(input, format!("line {}: {reason}", n + 1));
        let v: Value = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        let ids = |field: &str| -> Result<Vec<u32>> {
            let list = v
                .get(field)
                .and_then(Value::as_array)
                .ok_or_else(|| bad(format!("{field}: a list of token ids is required")))?;
            list.iter()
                .map(|x| {
                    x.as_u64()
                        .filter(|&t| (t as usize) < model.config.vocab_size)
                        .map(|t| t as u32)
                        .ok_or_else(|| {
                            bad(format!(
                                "{field}: {x} is not a token id below {}",
                                model.config.vocab_size
                            ))
                        })
                })
                .collect()
        };
        let (prompt, response) = (ids("prompt_ids")?, ids("response_ids")?);
        if prompt.is_empty() {
            return Err(bad(
                "prompt_ids: at least one token is needed to predict the first response token"
                    .into(),
            ));
        }
        if prompt.len() + response.len() > model.config.max_position_embeddings {
            return Err(bad(format!(
                "longer than max_position_embeddings {}",
                model.config.max_position_embeddings
            )));
        }
        let n = response.len();
        seqs.push(TrainSeq {
            start: prompt.len(),
            ids: [prompt, response].concat(),
            mask: vec![true; n],
            advantages: vec![0.0; n],
            behaviour: None,
            rollout: 0,
            weight: 0.0,
        });
    }
    for lp in response_logprobs(&model, &seqs, LOGPROBS_BUDGET)? {
        writeln!(out, "{}", json!({ "logprobs": lp }))?;
    }
    Ok(())
}

/// `train bench`: times forward + backward + AdamW step on random ids, `[batch, seq]`, with
/// the training config's `lora`, `micro_batch_tokens` and optimizer.
///
/// # Errors
/// Bad model, tensor failures.
pub fn bench(
    model_dir: &Path,
    batch: usize,
    seq: usize,
    config: &TrainConfig,
    iterations: usize,
) -> Result<Value> {
    use rand::{Rng, SeedableRng};
    let (model_config, _) = open_model(model_dir)?;
    let workload = Workload {
        longest: seq,
        step_tokens: batch * seq,
        rollouts: false,
    };
    let config = planned(&model_config, config, workload)?;
    let plan = plan::plan(
        &model_config,
        &config,
        target(),
        device_memory(target())?,
        workload,
    );
    let mut model = load_weights(model_dir, &config)?;
    model.make_trainable(config.lora.as_ref(), 0)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
    let vocab = model.config.vocab_size as u32;
    let seqs: Vec<TrainSeq> = (0..batch)
        .map(|_| TrainSeq {
            ids: (0..seq).map(|_| rng.random_range(0..vocab)).collect(),
            start: 1,
            mask: vec![true; seq - 1],
            advantages: vec![1.0; seq - 1],
            behaviour: None,
            rollout: 0,
            weight: 1.0 / (batch * (seq - 1)) as f64,
        })
        .collect();
    let mut optimizer = AdamW::new(model.vars(), &config.optimizer)?;
    let gpu = model.device().is_cuda().then(GpuPeak::start);
    let mut times = Vec::new();
    for i in 0..iterations + 2 {
        let t0 = Instant::now();
        let mut ctx = StepContext {
            model: &model,
            reference: None,
            optimizer: &mut optimizer,
            lr: 1e-4,
            budget: plan.micro_batch_tokens,
            dropout: None,
            checkpointing: config.checkpointing(crate::config::target_of(model.device())),
        };
        train_step(&mut ctx, &seqs, Objective::Nll)?;
        if i >= 2 {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    let peak_gpu_mb = gpu.and_then(GpuPeak::stop);
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    Ok(json!({
        "batch": batch,
        "seq": seq,
        "lora_rank": config.lora.as_ref().map(|l| l.rank),
        "micro_batch_tokens": plan.micro_batch_tokens,
        "plan": plan,
        "gradient_checkpointing": config.checkpointing(crate::config::target_of(model.device())),
        "dtype": format!("{:?}", model.compute_dtype()).to_lowercase(),
        "trainable_parameters": model.trainable_parameters(),
        "step_ms": median * 1e3,
        "tokens_per_s": (batch * seq) as f64 / median,
        "peak_rss_mb": peak_rss_mb(),
        "peak_gpu_mb": peak_gpu_mb,
        "iterations": iterations,
    }))
}

/// The most GPU memory this process held while it ran, sampled every 20 ms from `nvidia-smi`
/// (what the driver counts: the CUDA context, cuBLAS's workspace and candle's allocations).
struct GpuPeak {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Option<f64>>,
}

impl GpuPeak {
    fn start() -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let pid = std::process::id().to_string();
        let thread = std::thread::spawn(move || {
            let mut peak: Option<f64> = None;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let out = std::process::Command::new("nvidia-smi")
                    .args([
                        "--query-compute-apps=pid,used_memory",
                        "--format=csv,noheader,nounits",
                    ])
                    .output()
                    .ok()?;
                let used = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| l.split_once(','))
                    .filter(|(p, _)| p.trim() == pid)
                    .filter_map(|(_, m)| m.trim().parse::<f64>().ok())
                    .sum::<f64>();
                peak = Some(peak.map_or(used, |p: f64| p.max(used)));
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            peak
        });
        Self { stop, thread }
    }

    fn stop(self) -> Option<f64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().ok().flatten()
    }
}

/// Peak resident memory of this process (Linux `VmHWM`), in MiB.
#[must_use]
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
