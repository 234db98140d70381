//! A training run: the SFT phase, the GRPO phase (online against a task, or offline on a
//! dataset), evaluation, resumable checkpoints, and the final artifacts.
//!
//! Randomness is drawn per (phase, step) from the seed, and the prompt cursor is saved with
//! each checkpoint, so a resumed run takes exactly the steps an uninterrupted one would.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::advantage::{Rollout, StdScaling, advantages};
use crate::config::TrainConfig;
use crate::data::{DataRollout, Rollouts, SftExample};
use crate::error::{Result, TrainError};
use crate::loss::{Clip, token_weights};
use crate::model::Model;
use crate::optim::AdamW;
use crate::report::{Metrics, MetricsLog, Progress};
use crate::rollout::{Episode, Sampling, run_episodes};
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
}

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// All its steps ran.
    Complete,
    /// `stop_after` was reached: a checkpoint was written, the run can resume.
    Interrupted,
}

const CHECKPOINTS: &str = "checkpoints";

impl Trainer {
    /// Prepares a run in `out`: makes the model trainable and resumes from the last complete
    /// checkpoint of the same run, if any.
    ///
    /// # Errors
    /// An unreadable checkpoint, I/O.
    pub fn new(
        mut model: Model,
        tok: Tok,
        config: TrainConfig,
        out: &Path,
        identity: Identity,
    ) -> Result<Self> {
        std::fs::create_dir_all(out)?;
        // A run.json marks a finished run: remove it first, so a crash leaves none behind.
        let _ = std::fs::remove_file(out.join("run.json"));
        model.make_trainable(config.lora.as_ref(), config.seed)?;
        let reference = (config.grpo.kl_beta > 0.0)
            .then(|| model.reference_copy())
            .transpose()?;
        let identity_hash = run_identity(&identity, &config);
        let mut state = State {
            identity: identity_hash.clone(),
            ..State::default()
        };
        let checkpoint = latest_checkpoint(out, &identity_hash);
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

    fn should_stop(&mut self) -> bool {
        self.steps_here += 1;
        self.stop_after.is_some_and(|k| self.steps_here >= k)
    }

    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn lr_at(&self, peak: f64, step: u64, total: u64) -> f64 {
        self.config.optimizer.lr(peak, step, total)
    }

    /// The SFT phase: `sft.epochs` passes, `sft.batch_size` examples per step, NLL on the
    /// completion tokens (mask 1) only.
    ///
    /// # Errors
    /// Tensor failures, I/O.
    pub fn sft(&mut self, examples: &[SftExample]) -> Result<Ended> {
        if self.state.sft_done || examples.is_empty() || self.config.sft.epochs == 0 {
            self.finish_sft()?;
            return Ok(Ended::Complete);
        }
        let per_epoch = examples.len().div_ceil(self.config.sft.batch_size) as u64;
        let total = per_epoch * u64::from(self.config.sft.epochs);
        let mut progress = Progress::start("sft", total);
        while self.state.sft_step < total {
            let step = self.state.sft_step;
            let epoch = step / per_epoch;
            let mut order: Vec<usize> = (0..examples.len()).collect();
            order.shuffle(&mut rng(self.config.seed, Stream::SftOrder, epoch));
            let b = self.config.sft.batch_size;
            let k = (step % per_epoch) as usize;
            let picked = &order[k * b..((k + 1) * b).min(order.len())];
            let mut seqs: Vec<TrainSeq> = picked
                .iter()
                .enumerate()
                .map(|(r, &i)| {
                    let e = &examples[i];
                    TrainSeq {
                        ids: [e.prompt.as_slice(), &e.completion].concat(),
                        start: e.prompt.len(),
                        mask: e.mask.clone(),
                        advantages: vec![1.0; e.completion.len()],
                        behaviour: None,
                        rollout: r,
                        weight: 0.0,
                    }
                })
                .collect();
            let total_tokens: usize = seqs.iter().map(TrainSeq::loss_tokens).sum();
            seqs.iter_mut()
                .for_each(|s| s.weight = 1.0 / total_tokens.max(1) as f64);
            let lr = self.lr_at(self.config.sft.learning_rate, step, total);
            let t0 = Instant::now();
            let stats = self.update(
                &seqs,
                Objective::Nll,
                lr,
                rng(self.config.seed, Stream::Dropout, step),
            )?;
            self.state.sft_step += 1;
            self.log(self.state.sft_step, "sft", &stats, lr, t0, None)?;
            progress.update(self.state.sft_step, &format!("loss {:.3}", stats.loss));
            if self.checkpoint_due(self.state.sft_step) {
                self.checkpoint()?;
            }
            if self.should_stop() {
                self.checkpoint()?;
                return Ok(Ended::Interrupted);
            }
        }
        progress.finish();
        self.finish_sft()?;
        Ok(Ended::Complete)
    }

    fn finish_sft(&mut self) -> Result<()> {
        if !self.state.sft_done {
            self.state.sft_done = true;
            // GRPO starts with fresh moments: SFT's gradients say nothing about its scale.
            self.optimizer = AdamW::new(self.model.vars(), &self.config.optimizer)?;
        }
        Ok(())
    }

    fn checkpoint_due(&self, step: u64) -> bool {
        self.config.checkpoint_every > 0 && step.is_multiple_of(self.config.checkpoint_every)
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
            budget: self.config.micro_batch_tokens,
            dropout: (p > 0.0).then_some((p, &mut dropout_rng)),
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
            max_new_tokens: g.max_new_tokens,
            stop,
            max_turns: task.max_turns(),
        }
    }

    /// Greedy success rate and mean reward on the task's held-out prompts.
    ///
    /// # Errors
    /// Tensor failures.
    pub fn evaluate(&self, task: &dyn Task) -> Result<(f64, f64)> {
        let n = task.eval_len();
        if n == 0 {
            return Ok((0.0, 0.0));
        }
        let frozen = self.model.frozen_view();
        let sampling = self.sampling(task, true);
        let (mut successes, mut reward) = (0usize, 0.0);
        let chunk = (self.config.micro_batch_tokens / 64).clamp(8, 256);
        for start in (0..n).step_by(chunk) {
            let envs = (start..(start + chunk).min(n))
                .map(|i| task.eval_env(i))
                .collect();
            for e in run_episodes(
                &frozen,
                &self.tok,
                envs,
                &sampling,
                &mut rng(0, Stream::Sample, 0),
            )? {
                successes += usize::from(e.success);
                reward += e.reward;
            }
        }
        Ok((successes as f64 / n as f64, reward / n as f64))
    }

    fn log_eval(&mut self, task: &dyn Task) -> Result<f64> {
        let (success, reward) = self.evaluate(task)?;
        self.push_metrics(Metrics {
            step: self.state.grpo_step,
            phase: "grpo".into(),
            elapsed_s: self.elapsed(),
            eval_success: Some(success),
            eval_reward: Some(reward),
            ..Metrics::default()
        })?;
        tracing::info!(
            step = self.state.grpo_step,
            eval_success = success,
            eval_reward = reward,
            "evaluation"
        );
        Ok(success)
    }

    /// Online GRPO: `steps` optimizer steps of sampled groups scored by the task. Stops early
    /// once held-out success reaches `target` (when given).
    ///
    /// # Errors
    /// Tensor failures, I/O.
    pub fn grpo_online(
        &mut self,
        task: &dyn Task,
        steps: u64,
        target: Option<f64>,
    ) -> Result<Ended> {
        if task.train_len() == 0 {
            return Err(TrainError::Data("no training prompts".into()));
        }
        let g = self.config.grpo.clone();
        let sampling = self.sampling(task, false);
        let mut progress = Progress::start("grpo", steps);
        let frozen = self.model.frozen_view();
        if self.state.grpo_step == 0 && self.config.eval_every > 0 {
            self.log_eval(task)?;
        }
        while self.state.grpo_step < steps {
            let step = self.state.grpo_step;
            let t0 = Instant::now();
            let mut sample_rng = rng(self.config.seed, Stream::Sample, step);
            let (mut kept, mut all): (Vec<Vec<Episode>>, Vec<Episode>) = (Vec::new(), Vec::new());
            let (mut drawn, mut zero) = (0usize, 0usize);
            while kept.len() < g.batch_prompts && drawn < g.max_draws * g.batch_prompts {
                let want = g.batch_prompts - kept.len();
                let prompts: Vec<usize> = (0..want)
                    .map(|_| self.next_prompt(task.train_len()))
                    .collect();
                drawn += want;
                let envs = prompts
                    .iter()
                    .flat_map(|&p| (0..g.group_size).map(move |_| p))
                    .map(|p| task.train_env(p))
                    .collect();
                let episodes = run_episodes(&frozen, &self.tok, envs, &sampling, &mut sample_rng)?;
                for group in episodes.chunks(g.group_size) {
                    all.extend(group.iter().cloned());
                    // Signal under the configured credit: with `turn`, a group whose episodes
                    // all fail can still differ in the turns they got right.
                    let differ =
                        advantages(&rollouts(&[group]), g.credit, StdScaling::None, g.gamma)
                            .zero_variance_groups
                            == 0;
                    if differ || !g.dynamic_sampling {
                        kept.push(group.to_vec());
                    } else {
                        zero += 1;
                    }
                }
                if !g.dynamic_sampling {
                    break;
                }
            }
            let rewards: Vec<f64> = all.iter().map(|e| e.reward).collect();
            let (reward_mean, reward_std) = mean_std(&rewards);
            let success = all.iter().filter(|e| e.success).count() as f64 / all.len().max(1) as f64;
            let adv = advantages(&rollouts(&kept), g.credit, g.std_scaling, g.gamma);
            let episodes: Vec<&Episode> = kept.iter().flatten().collect();
            let mut seqs: Vec<TrainSeq> = Vec::new();
            for (i, e) in episodes.iter().enumerate() {
                if !adv.informative[i] {
                    continue;
                }
                seqs.push(TrainSeq {
                    ids: [e.prompt.as_slice(), &e.response].concat(),
                    start: e.prompt.len(),
                    mask: e.mask.clone(),
                    advantages: e
                        .turn
                        .iter()
                        .map(|&t| adv.per_turn[i].get(t).copied().unwrap_or(0.0) as f32)
                        .collect(),
                    behaviour: None,
                    rollout: i,
                    weight: 0.0,
                });
            }
            let (stats, lr) = self.grpo_update(&mut seqs, steps)?;
            let r = RolloutStats {
                reward_mean,
                reward_std,
                success: Some(success),
                rollouts: Some(all.len()),
                informative_fraction: Some(
                    kept.len().saturating_sub(adv.zero_variance_groups) as f64
                        / drawn.max(1) as f64,
                ),
                zero_variance_groups: Some(zero + adv.zero_variance_groups),
            };
            self.log(self.state.grpo_step, "grpo", &stats, lr, t0, Some(r))?;
            progress.update(
                self.state.grpo_step,
                &format!("reward {reward_mean:.3} success {success:.2}"),
            );
            let mut reached = false;
            if self.config.eval_every > 0
                && self.state.grpo_step.is_multiple_of(self.config.eval_every)
            {
                reached = target.is_some_and(|t| self.log_eval(task).is_ok_and(|s| s >= t));
            }
            if self.checkpoint_due(self.state.grpo_step) {
                self.checkpoint()?;
            }
            if reached || self.deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            if self.should_stop() {
                self.checkpoint()?;
                return Ok(Ended::Interrupted);
            }
        }
        progress.finish();
        Ok(Ended::Complete)
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

    /// Offline GRPO on a dataset's rollouts: `batch_prompts` groups per step.
    ///
    /// # Errors
    /// Nothing with signal to train on, tensor failures, I/O.
    pub fn grpo_offline(&mut self, rollouts: &Rollouts, steps: u64) -> Result<Ended> {
        let g = self.config.grpo.clone();
        let data = &rollouts.items;
        let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, r) in data.iter().enumerate() {
            by_name.entry(r.group.as_str()).or_default().push(i);
        }
        let groups: Vec<Vec<usize>> = by_name.into_values().collect();
        let probe: Vec<Rollout> = groups
            .iter()
            .enumerate()
            .flat_map(|(gi, m)| m.iter().map(move |&i| rollout_of(&data[i], gi)))
            .collect();
        if advantages(&probe, g.credit, g.std_scaling, g.gamma).zero_variance_groups == groups.len()
        {
            return Err(TrainError::Data(format!(
                "every one of the {} groups has zero reward variance: GRPO has no signal (credit = {:?})",
                groups.len(),
                g.credit
            )));
        }
        let mut progress = Progress::start("grpo", steps);
        while self.state.grpo_step < steps {
            let t0 = Instant::now();
            let picked: Vec<usize> = (0..g.batch_prompts.min(groups.len()))
                .map(|_| self.next_prompt(groups.len()))
                .collect();
            let members: Vec<usize> = picked
                .iter()
                .flat_map(|&gi| groups[gi].iter().copied())
                .collect();
            let picked_rollouts: Vec<Rollout> = picked
                .iter()
                .enumerate()
                .flat_map(|(k, &gi)| groups[gi].iter().map(move |&i| (k, i)))
                .map(|(k, i)| rollout_of(&data[i], k))
                .collect();
            let adv = advantages(&picked_rollouts, g.credit, g.std_scaling, g.gamma);
            let mut seqs = Vec::new();
            for (r, &i) in members.iter().enumerate() {
                if !adv.informative[r] {
                    continue;
                }
                for (t, turn) in rollouts.turns(i)?.into_iter().enumerate() {
                    let a = adv.per_turn[r].get(t).copied().unwrap_or(0.0) as f32;
                    seqs.push(TrainSeq {
                        advantages: vec![a; turn.mask.len()],
                        ids: turn.ids,
                        start: turn.start,
                        mask: turn.mask,
                        behaviour: turn.behaviour,
                        rollout: r,
                        weight: 0.0,
                    });
                }
            }
            let rewards: Vec<f64> = picked_rollouts.iter().map(|r| r.reward).collect();
            let (reward_mean, reward_std) = mean_std(&rewards);
            let (stats, lr) = self.grpo_update(&mut seqs, steps)?;
            let r = RolloutStats {
                reward_mean,
                reward_std,
                success: None,
                rollouts: None,
                informative_fraction: Some(
                    (adv.groups - adv.zero_variance_groups) as f64 / adv.groups.max(1) as f64,
                ),
                zero_variance_groups: Some(adv.zero_variance_groups),
            };
            self.log(self.state.grpo_step, "grpo", &stats, lr, t0, Some(r))?;
            progress.update(self.state.grpo_step, &format!("loss {:.4}", stats.loss));
            if self.checkpoint_due(self.state.grpo_step) {
                self.checkpoint()?;
            }
            if self.should_stop() {
                self.checkpoint()?;
                return Ok(Ended::Interrupted);
            }
        }
        progress.finish();
        Ok(Ended::Complete)
    }

    /// Writes a resumable checkpoint atomically (a temporary directory renamed into place;
    /// `state.json` inside it last) and keeps the two most recent.
    ///
    /// # Errors
    /// I/O.
    pub fn checkpoint(&mut self) -> Result<()> {
        let root = self.out.join(CHECKPOINTS);
        std::fs::create_dir_all(&root)?;
        let name = format!(
            "{}-{:06}-{:06}",
            if self.state.sft_done { "grpo" } else { "sft" },
            self.state.sft_step,
            self.state.grpo_step
        );
        let tmp = root.join(format!(".tmp-{name}"));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        if !self.model.save_adapter(&tmp, "base")? {
            crate::model::save_safetensors(
                &self.model.state_dict(false)?,
                &tmp.join("model.safetensors"),
            )?;
        }
        self.optimizer
            .save(self.model.vars(), &tmp.join("optimizer.safetensors"))?;
        let state =
            serde_json::to_vec_pretty(&self.state).map_err(|e| TrainError::Data(e.to_string()))?;
        std::fs::write(tmp.join("state.json"), state)?;
        let dir = root.join(&name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&tmp, &dir)?;
        let mut complete = complete_checkpoints(&self.out);
        while complete.len() > 2 {
            let _ = std::fs::remove_dir_all(complete.remove(0));
        }
        if let Some(mirror) = &self.mirror {
            mirror.upload(&self.out, &format!("{CHECKPOINTS}/{name}"))?;
            mirror.upload(&self.out, "metrics.jsonl")?;
        }
        Ok(())
    }

    /// Writes the final artifacts and `run.json` (last, marking the run finished).
    ///
    /// # Errors
    /// I/O.
    pub fn finish(&mut self, extra: Value) -> Result<Value> {
        let out = self.out.clone();
        let staging = out.join(".tmp-final");
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)?;
        let lora = self
            .model
            .save_adapter(&staging, &self.identity.base_model_sha256)?;
        if lora {
            if self.config.merge_lora {
                self.model.save_hf(&staging.join("merged"))?;
                std::fs::write(
                    staging.join("merged").join("tokenizer.json"),
                    self.tok.json(),
                )?;
            }
        } else {
            self.model.save_hf(&staging)?;
        }
        std::fs::write(staging.join("tokenizer.json"), self.tok.json())?;
        for entry in std::fs::read_dir(&staging)? {
            let entry = entry?;
            let target = out.join(entry.file_name());
            if target.is_dir() {
                std::fs::remove_dir_all(&target)?;
            }
            std::fs::rename(entry.path(), target)?;
        }
        std::fs::remove_dir(&staging)?;
        self.metrics.plot(&out.join("plots"))?;
        let last = self
            .metrics
            .rows()
            .iter()
            .rev()
            .find(|m| m.eval_success.is_none())
            .cloned();
        let mut run = json!({
            "base_model_sha256": self.identity.base_model_sha256,
            "dataset_content_hash": self.identity.data_sha256,
            "tokenizer_sha256": self.tok.sha256,
            "config": self.config,
            "model": {
                "architectures": self.model.config.architectures,
                "hidden_size": self.model.config.hidden_size,
                "num_hidden_layers": self.model.config.num_hidden_layers,
                "vocab_size": self.model.config.vocab_size,
                "trainable_parameters": self.model.trainable_parameters(),
                "lora": lora,
            },
            "sft_steps": self.state.sft_step,
            "grpo_steps": self.state.grpo_step,
            "final_metrics": last,
            "wall_time_s": self.elapsed(),
            "peak_rss_mb": crate::run::peak_rss_mb(),
            "device": format!("{:?}", self.model.device()),
            "trainer_version": env!("CARGO_PKG_VERSION"),
        });
        if let (Value::Object(run), Value::Object(extra)) = (&mut run, extra) {
            run.extend(extra);
        }
        let bytes = serde_json::to_vec_pretty(&run).map_err(|e| TrainError::Data(e.to_string()))?;
        let tmp = out.join(".run.json.tmp");
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(tmp, out.join("run.json"))?;
        if let Some(mirror) = &self.mirror {
            mirror.upload(&out, "")?;
        }
        Ok(run)
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
}

/// Sampled groups as rollouts, group `i` of `groups` numbered `i`.
fn rollouts<G: AsRef<[Episode]>>(groups: &[G]) -> Vec<Rollout> {
    groups
        .iter()
        .enumerate()
        .flat_map(|(gi, group)| {
            group.as_ref().iter().map(move |e| Rollout {
                group: gi,
                reward: e.reward,
                turn_rewards: e.turn_rewards.clone(),
                precomputed: None,
            })
        })
        .collect()
}

fn rollout_of(r: &DataRollout, group: usize) -> Rollout {
    Rollout {
        group,
        reward: r.reward,
        turn_rewards: r.turn_rewards.clone(),
        precomputed: Some(r.turn_rewards.clone()),
    }
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

fn run_identity(identity: &Identity, config: &TrainConfig) -> String {
    let mut h = Sha256::new();
    h.update(identity.base_model_sha256.as_bytes());
    h.update(identity.data_sha256.as_bytes());
    h.update(serde_json::to_vec(config).unwrap_or_default());
    hex::encode(h.finalize())
}

fn complete_checkpoints(out: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out.join(CHECKPOINTS))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
                && p.join("state.json").exists()
        })
        .collect();
    // Names are `<phase>-<sft steps>-<grpo steps>`: run order is phase (sft before grpo), then
    // the counters; alphabetical order would put grpo first.
    dirs.sort_by_key(|p| {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let mut parts = name.split('-');
        let phase = u8::from(parts.next() == Some("grpo"));
        let sft: u64 = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        let grpo: u64 = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        (phase, sft, grpo)
    });
    dirs
}

fn latest_checkpoint(out: &Path, identity: &str) -> Option<PathBuf> {
    complete_checkpoints(out).into_iter().rev().find(|dir| {
        std::fs::read_to_string(dir.join("state.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<State>(&t).ok())
            .is_some_and(|s| s.identity == identity)
    })
}

/// sha256 over a model directory's config and weight files (the base model's identity).
///
/// # Errors
/// Unreadable files.
pub fn hash_model_dir(dir: &Path) -> Result<String> {
    let mut h = Sha256::new();
    let mut files = vec![dir.join("config.json")];
    files.extend(crate::model::weight_files(dir)?);
    for f in files {
        let bytes = std::fs::read(&f).map_err(|e| TrainError::file(&f, e))?;
        h.update(Sha256::digest(&bytes));
    }
    Ok(hex::encode(h.finalize()))
}

/// sha256 of files' contents, in order.
///
/// # Errors
/// Unreadable files.
pub fn hash_files(files: &[&Path]) -> Result<String> {
    let mut h = Sha256::new();
    for f in files {
        let bytes = std::fs::read(f).map_err(|e| TrainError::file(f, e))?;
        h.update(Sha256::digest(&bytes));
    }
    Ok(hex::encode(h.finalize()))
}
