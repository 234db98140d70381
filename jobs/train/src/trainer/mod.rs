//! A training run: the [`Trainer`] and what every phase shares (the optimizer step, metrics,
//! randomness, the data cursor), with a module per phase: the SFT warm-up ([`sft`]), GRPO
//! online against a task ([`grpo_online`]) or offline on a dataset ([`grpo_offline`]),
//! evaluation ([`evaluation`]), resumable checkpoints ([`checkpoint`]) and the final
//! artifacts with `run.json` ([`artifacts`]).
//!
//! Randomness is drawn per (phase, step) from the seed, and the prompt cursor is saved with
//! each checkpoint, so a resumed run takes exactly the steps an uninterrupted one would.

mod artifacts;
mod checkpoint;
mod evaluation;
mod grpo_offline;
mod grpo_online;
mod sft;

pub use artifacts::{hash_files, hash_model_dir};

use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::TrainConfig;
use crate::error::{Result, TrainError};
use crate::loss::{Clip, token_weights};
use crate::model::{Dropout, Model};
use crate::optim::AdamW;
use crate::report::{Metrics, MetricsLog};
use crate::rollout::Sampling;
use crate::step::{Objective, StepContext, StepStats, TrainSeq, train_step};
use crate::task::Task;
use crate::tokenizer::Tok;

/// Streams of randomness, one per use.
#[derive(Debug, Clone, Copy)]
enum Stream {
    SftOrder = 1,
    Sample = 2,
    Dropout = 3,
    PromptOrder = 4,
}

fn rng(seed: u64, stream: Stream, n: u64) -> ChaCha8Rng {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update((stream as u64).to_le_bytes());
    h.update(n.to_le_bytes());
    ChaCha8Rng::from_seed(h.finalize().into())
}

/// Where a run is: saved in every checkpoint's `state.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// SFT steps done.
    pub sft_step: u64,
    /// Whether the SFT phase is over.
    pub sft_done: bool,
    /// GRPO steps done.
    pub grpo_step: u64,
    /// Prompts or groups drawn so far (the data cursor).
    pub cursor: u64,
    /// Identity of the run: base model, data and config hashes.
    pub identity: String,
}

/// What identifies a run, so a checkpoint of another run is never resumed.
#[derive(Debug, Clone)]
pub struct Identity {
    /// sha256 of the base model's files.
    pub base_model_sha256: String,
    /// Content hash of the data.
    pub data_sha256: String,
    /// The adapter the run starts from instead of fresh ones (a federated round's global
    /// adapter), and its files' hash.
    pub init_adapter: Option<(PathBuf, String)>,
}

/// A run in progress.
#[derive(Debug)]
pub struct Trainer {
    /// The policy.
    pub model: Model,
    reference: Option<Model>,
    /// Its tokenizer.
    pub tok: Tok,
    /// The config.
    pub config: TrainConfig,
    optimizer: AdamW,
    out: PathBuf,
    /// Every metrics line.
    pub metrics: MetricsLog,
    /// Progress.
    pub state: State,
    identity: Identity,
    started: Instant,
    /// Stop (with a checkpoint) once this many optimizer steps ran in this process.
    pub stop_after: Option<u64>,
    steps_here: u64,
    /// The GRPO phase ends (complete) at this instant.
    pub deadline: Option<Instant>,
    /// The S3 prefix the output directory is mirrored to.
    pub mirror: Option<crate::remote::Prefix>,
    /// When `metrics.jsonl` was last mirrored (progress between checkpoints).
    progress_mirrored: Instant,
    /// The prompt order of the current epoch: (epoch, prompts, order).
    epoch_order: Option<(u64, usize, Vec<usize>)>,
    /// Tokens per micro-batch, packed (the config's, which the run's plan filled in).
    budget: usize,
}

/// Seconds a SIGTERM stop may spend on its checkpoint: ECS's container stop timeout is at
/// most 120 s (the template's launch template sets it to that), less a margin for the exit.
const STOP_WINDOW_S: f64 = 90.0;

/// Rates a stop plans its checkpoint with (trained weights and AdamW's two moments, 12 bytes a
/// parameter): a local NVMe or EBS write, and an S3 multipart upload from one instance.
const DISK_BYTES_PER_S: f64 = 1e9;
const S3_BYTES_PER_S: f64 = 150e6;

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// All its steps ran.
    Complete,
    /// `stop_after` was reached: a checkpoint was written, the run can resume.
    Interrupted,
}

impl Trainer {
    /// Prepares a run in `out`: makes the model trainable and resumes from the last complete
    /// checkpoint of the same run, if any. `config.micro_batch_tokens` must be set (the run's
    /// plan sets it when the user did not).
    ///
    /// # Errors
    /// No micro-batch size, an unreadable checkpoint, I/O.
    pub fn new(
        mut model: Model,
        tok: Tok,
        config: TrainConfig,
        out: &Path,
        identity: Identity,
    ) -> Result<Self> {
        let budget = config
            .micro_batch_tokens
            .ok_or_else(|| TrainError::config("micro_batch_tokens", "not set and not planned"))?;
        std::fs::create_dir_all(out)?;
        // A run.json marks a finished run: remove it first, so a crash leaves none behind.
        let _ = std::fs::remove_file(out.join("run.json"));
        model.make_trainable(config.lora.as_ref(), config.seed)?;
        if let Some((dir, _)) = &identity.init_adapter {
            model.start_from_adapter(dir, config.lora.as_ref())?;
        }
        // After the initial adapter: the KL anchor is the policy the run starts from.
        let reference = (config.grpo.kl_beta > 0.0)
            .then(|| model.reference_copy())
            .transpose()?;
        let identity_hash = run_identity(&identity, &config);
        let mut state = State {
            identity: identity_hash.clone(),
            ..State::default()
        };
        let checkpoint = checkpoint::latest_checkpoint(out, &identity_hash);
        if let Some(dir) = &checkpoint {
            let path = dir.join("state.json");
            let text = std::fs::read_to_string(&path).map_err(|e| TrainError::file(&path, e))?;
            state = serde_json::from_str(&text).map_err(|e| TrainError::file(&path, e))?;
            model.restore(dir)?;
        }
        let mut optimizer = AdamW::new(model.vars(), &config.optimizer)?;
        if let Some(dir) = &checkpoint {
            optimizer.load(model.vars(), &dir.join("optimizer.safetensors"))?;
            tracing::info!(checkpoint = %dir.display(), sft_step = state.sft_step, grpo_step = state.grpo_step, "resumed");
        }
        // Metrics past the checkpoint are dropped: the resumed steps write them again.
        let s = state.clone();
        let metrics = MetricsLog::open(out, |m| {
            checkpoint.is_some()
                && match m.phase.as_str() {
                    "sft" => m.step <= s.sft_step,
                    _ => s.sft_done && m.step <= s.grpo_step,
                }
        })?;
        Ok(Self {
            model,
            reference,
            tok,
            config,
            optimizer,
            out: out.to_owned(),
            metrics,
            state,
            identity,
            started: Instant::now(),
            stop_after: None,
            steps_here: 0,
            deadline: None,
            mirror: None,
            progress_mirrored: Instant::now(),
            epoch_order: None,
            budget,
        })
    }

    /// Appends a metrics line; mirrors the file once `progress_every_s` has passed (the
    /// training service reads a run's progress from it). A failed progress upload is logged,
    /// not fatal: the next checkpoint mirrors everything again.
    fn push_metrics(&mut self, m: Metrics) -> Result<()> {
        self.metrics.push(m)?;
        if let Some(mirror) = &self.mirror
            && self.progress_mirrored.elapsed()
                >= std::time::Duration::from_secs(self.config.progress_every_s)
        {
            self.progress_mirrored = Instant::now();
            if let Err(e) = mirror.upload(&self.out, "metrics.jsonl") {
                tracing::warn!(error = %e, "progress not mirrored; the next checkpoint retries");
            }
        }
        Ok(())
    }

    /// A step's result. On SIGTERM (the step stopped part-way) the run's position goes back to
    /// the step's start, so that the checkpoint written and a resumed run agree.
    fn or_stop<T>(&mut self, at_start: &State, result: Result<T>) -> Result<T> {
        match result {
            Err(TrainError::Terminated) => {
                self.state = at_start.clone();
                self.stop_now()
            }
            other => other,
        }
    }

    /// Ends the run for SIGTERM: a checkpoint of where it is when one fits the stop window
    /// (else the last periodic one stands), then [`TrainError::Terminated`].
    fn stop_now<T>(&mut self) -> Result<T> {
        let bytes = 12.0 * self.model.trainable_parameters() as f64;
        let seconds = bytes / DISK_BYTES_PER_S
            + if self.mirror.is_some() {
                bytes / S3_BYTES_PER_S
            } else {
                0.0
            };
        if seconds <= STOP_WINDOW_S {
            self.checkpoint()?;
            tracing::warn!(step = self.state.grpo_step, "SIGTERM: checkpoint written");
        } else {
            tracing::warn!(
                seconds,
                "SIGTERM: a checkpoint would not fit the stop window; the last one stands"
            );
        }
        Err(TrainError::Terminated)
    }

    fn should_stop(&mut self) -> bool {
        self.steps_here += 1;
        self.stop_after.is_some_and(|k| self.steps_here >= k)
    }

    /// The periodic checkpoint after `step`, when one is due.
    fn checkpoint_if_due(&mut self, step: u64) -> Result<()> {
        let every = self.config.checkpoint_every;
        if every > 0 && step.is_multiple_of(every) {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// How a step's loop is interrupted, if it is: SIGTERM ([`Self::stop_now`]), or this
    /// invocation's step limit (a checkpoint, then [`Ended::Interrupted`]).
    fn interruption(&mut self) -> Result<Option<Ended>> {
        if crate::process::terminating() {
            return self.stop_now();
        }
        if self.should_stop() {
            self.checkpoint()?;
            return Ok(Some(Ended::Interrupted));
        }
        Ok(None)
    }

    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn lr_at(&self, peak: f64, step: u64, total: u64) -> f64 {
        self.config.optimizer.lr(peak, step, total)
    }

    fn update(
        &mut self,
        seqs: &[TrainSeq],
        objective: Objective,
        lr: f64,
        mut dropout_rng: ChaCha8Rng,
    ) -> Result<StepStats> {
        let p = self.config.lora.as_ref().map_or(0.0, |l| l.dropout);
        let mut ctx = StepContext {
            model: &self.model,
            reference: self.reference.as_ref(),
            optimizer: &mut self.optimizer,
            lr,
            budget: self.budget,
            dropout: (p > 0.0).then(|| Dropout {
                p,
                seed: dropout_rng.next_u64(),
            }),
            checkpointing: self
                .config
                .checkpointing(crate::config::target_of(self.model.device())),
        };
        train_step(&mut ctx, seqs, objective)
    }

    fn log(
        &mut self,
        step: u64,
        phase: &str,
        s: &StepStats,
        lr: f64,
        t0: Instant,
        rollouts: Option<RolloutStats>,
    ) -> Result<()> {
        let secs = t0.elapsed().as_secs_f64().max(1e-9);
        let r = rollouts.unwrap_or_default();
        self.push_metrics(Metrics {
            step,
            phase: phase.into(),
            loss: s.loss,
            reward_mean: r.reward_mean,
            reward_std: r.reward_std,
            kl: s.kl,
            clip_fraction: s.clip_fraction,
            entropy: s.entropy,
            grad_norm: s.grad_norm,
            lr,
            tokens: s.tokens,
            tokens_per_s: s.tokens as f64 / secs,
            elapsed_s: self.elapsed(),
            success: r.success,
            rollouts: r.rollouts,
            sample_tokens_per_s: r.sample_tokens_per_s,
            informative_fraction: r.informative_fraction,
            zero_variance_groups: r.zero_variance_groups,
            importance_weight: (phase == "grpo").then_some(s.importance_weight),
            eval_success: None,
            eval_reward: None,
        })
    }

    fn objective(&self) -> Objective {
        let g = &self.config.grpo;
        Objective::Grpo {
            clip: Clip {
                low: g.epsilon_low,
                high: g.epsilon_high,
                dual: g.dual_clip,
            },
            kl_beta: g.kl_beta,
            importance_cap: g.importance_cap,
            updates: g.updates_per_batch,
        }
    }

    /// One GRPO optimizer step on `seqs` (weights set here), counted even when no sequence
    /// carries a loss token, so a run always ends. Returns the stats and the rate used.
    fn grpo_update(&mut self, seqs: &mut [TrainSeq], steps: u64) -> Result<(StepStats, f64)> {
        let step = self.state.grpo_step;
        set_weights(seqs, &self.config);
        let lr = self.lr_at(self.config.grpo.learning_rate, step, steps);
        let stats = if seqs.iter().any(|s| s.loss_tokens() > 0) {
            let dropout = rng(self.config.seed, Stream::Dropout, 1 << 32 | step);
            self.update(seqs, self.objective(), lr, dropout)?
        } else {
            StepStats::default()
        };
        self.state.grpo_step += 1;
        Ok((stats, lr))
    }

    fn sampling(&self, task: &dyn Task, greedy: bool) -> Sampling {
        let g = &self.config.grpo;
        let mut stop = g.stop.clone();
        stop.extend(task.stop());
        Sampling {
            temperature: if greedy { 0.0 } else { g.temperature },
            top_p: g.top_p,
            top_k: g.top_k,
            max_rows: g.max_rollout_rows.unwrap_or(usize::MAX),
            max_new_tokens: g.max_new_tokens,
            stop,
            max_turns: task.max_turns(),
            chat_template: g.chat_template,
            max_len: self
                .config
                .seq_limit(self.model.config.max_position_embeddings),
        }
    }

    /// The prompt at the cursor: a function of (seed, cursor) alone, so a resumed run draws
    /// what an uninterrupted one would; each epoch's shuffle is computed once.
    fn next_prompt(&mut self, n: usize) -> usize {
        let epoch = self.state.cursor / n as u64;
        let seed = self.config.seed;
        if !matches!(&self.epoch_order, Some((e, len, _)) if *e == epoch && *len == n) {
            self.epoch_order = None;
        }
        let (_, _, order) = self.epoch_order.get_or_insert_with(|| {
            let mut order: Vec<usize> = (0..n).collect();
            order.shuffle(&mut rng(seed, Stream::PromptOrder, epoch));
            (epoch, n, order)
        });
        let i = order[(self.state.cursor % n as u64) as usize];
        self.state.cursor += 1;
        i
    }
}

#[derive(Debug, Clone, Default)]
struct RolloutStats {
    reward_mean: f64,
    reward_std: f64,
    success: Option<f64>,
    informative_fraction: Option<f64>,
    zero_variance_groups: Option<usize>,
    rollouts: Option<usize>,
    sample_tokens_per_s: Option<f64>,
}

fn set_weights(seqs: &mut [TrainSeq], config: &TrainConfig) {
    let lengths: Vec<usize> = seqs.iter().map(TrainSeq::loss_tokens).collect();
    let rollout: Vec<usize> = seqs.iter().map(|s| s.rollout).collect();
    let mut distinct = rollout.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let dense: Vec<usize> = rollout
        .iter()
        .map(|r| distinct.binary_search(r).unwrap_or(0))
        .collect();
    let w = token_weights(
        config.grpo.aggregation,
        &lengths,
        &dense,
        distinct.len(),
        config.grpo.max_new_tokens,
    );
    for (s, w) in seqs.iter_mut().zip(w) {
        s.weight = w;
    }
}

fn mean_std(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (
        mean,
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt(),
    )
}

/// The run's identity: its base model, data and config — but for the micro-batch size, which
/// changes no result (gradients are accumulated) and which the plan may choose differently
/// on the machine a retried job lands on.
fn run_identity(identity: &Identity, config: &TrainConfig) -> String {
    let config = TrainConfig {
        micro_batch_tokens: None,
        ..config.clone()
    };
    let mut h = Sha256::new();
    h.update(identity.base_model_sha256.as_bytes());
    h.update(identity.data_sha256.as_bytes());
    if let Some((_, sha256)) = &identity.init_adapter {
        h.update(sha256.as_bytes());
    }
    h.update(serde_json::to_vec(&config).unwrap_or_default());
    hex::encode(h.finalize())
}
