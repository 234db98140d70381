//! `agentrl train demo`: proof that agents learn, from nothing but the binary. It builds a
//! character tokenizer, a tiny Qwen2 and a verifiable multi-turn tool-use task, warms the model
//! up on noisy demonstrations, then trains it with GRPO and reports held-out success before
//! and after.
//!
//! Tasks:
//! - `calc`: `Q:23+45` → the agent calls the calculator (`C:23+45`), reads `R:68`, answers
//!   `A:68`. The demonstrations come from a weak agent that skips the tool 60% of the time and
//!   guesses.
//! - `chain`: `Q:37` → four chained lookups (`L:37` → `=84`, `L:84` → `=12`, …), then the
//!   answer. After the first hop the weak agent looks the previous key up again (instead of the
//!   value it just read) 60% of the time, which dooms the episode; each right lookup earns a
//!   turn reward of 0.25, so turn-level credit can point at the hop that went wrong.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use candle_core::{DType, Device};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use agentrl_core::training::{DemoSummary, OnlineScores, RunOutcome, RunReport, SftCounts};

use crate::advantage::Credit;
use crate::config::TrainConfig;
use crate::data::SftExample;
use crate::error::{Result, TrainError};
use crate::model::{Model, ModelConfig};
use crate::rollout::{Environment, Step};
use crate::task::Task;
use crate::tokenizer::Tok;
use crate::trainer::{Identity, Trainer, hash_model_dir};

/// Which demo task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DemoTask {
    /// Add two numbers with a calculator tool (2 turns).
    Calc,
    /// Chained lookups (`--hops`, default 4), then the answer.
    Chain,
}

const ALPHABET: &str = "0123456789+:=\nACLQR";
/// Lookups of the chain task unless `--hops` says otherwise.
pub const DEFAULT_HOPS: usize = 4;

/// The task's instances: training and held-out keys.
#[derive(Debug, Clone)]
pub struct Demo {
    kind: DemoTask,
    hops: usize,
    train: Vec<(u32, u32)>,
    eval: Vec<(u32, u32)>,
    table: Vec<u32>,
}

impl Demo {
    /// Instances for `kind`, split deterministically by `seed`; `hops` lookups per chain.
    #[must_use]
    pub fn new(kind: DemoTask, hops: usize, seed: u64, eval: usize) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xde_u64);
        let mut table: Vec<u32> = (10..100).collect();
        table.shuffle(&mut rng);
        let mut all: Vec<(u32, u32)> = match kind {
            DemoTask::Calc => (10..100)
                .flat_map(|a| (10..100).map(move |b| (a, b)))
                .collect(),
            DemoTask::Chain => (10..100).map(|k| (k, 0)).collect(),
        };
        all.shuffle(&mut rng);
        let held = eval.min(all.len() / 4);
        let eval_set = all.split_off(all.len() - held);
        Self {
            kind,
            hops,
            train: all,
            eval: eval_set,
            table,
        }
    }

    fn lookup(&self, key: u32) -> Option<u32> {
        (10..100)
            .contains(&key)
            .then(|| self.table[(key - 10) as usize])
    }

    fn env(&self, (a, b): (u32, u32)) -> Box<dyn Environment> {
        match self.kind {
            DemoTask::Calc => Box::new(CalcEnv {
                a,
                b,
                called: false,
            }),
            DemoTask::Chain => Box::new(ChainEnv {
                demo: self.clone(),
                start: a,
                key: a,
                hop: 0,
                doomed: false,
            }),
        }
    }

    /// Demonstrations from the weak scripted agent: prompt, then its turns and the
    /// environment's answers (masked out of the loss).
    ///
    /// # Errors
    /// Tokenizer failures.
    pub fn demonstrations(&self, tok: &Tok, n: usize, seed: u64) -> Result<Vec<SftExample>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5f7);
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let instance = self.train[i % self.train.len()];
            let mut env = self.env(instance);
            let prompt = tok.encode(&env.prompt())?;
            let (mut completion, mut mask) = (Vec::new(), Vec::new());
            for turn in self.weak_agent(instance, &mut rng) {
                let ids = tok.encode(&turn)?;
                mask.extend(std::iter::repeat_n(true, ids.len()));
                completion.extend(ids);
                match env.step(&turn, false) {
                    Step::Continue { observation, .. } => {
                        let ids = tok.encode(&observation)?;
                        mask.extend(std::iter::repeat_n(false, ids.len()));
                        completion.extend(ids);
                    }
                    Step::Done { .. } => break,
                }
            }
            out.push(SftExample {
                prompt,
                completion,
                mask,
            });
        }
        Ok(out)
    }

    /// The weak agent's turns for one instance.
    fn weak_agent(&self, (a, b): (u32, u32), rng: &mut ChaCha8Rng) -> Vec<String> {
        match self.kind {
            DemoTask::Calc => {
                if rng.random::<f64>() < 0.6 {
                    vec![format!("A:{}\n", rng.random_range(20..199))]
                } else {
                    vec![format!("C:{a}+{b}\n"), format!("A:{}\n", a + b)]
                }
            }
            DemoTask::Chain => {
                let mut key = a;
                let mut asked = a;
                let mut turns = Vec::new();
                for hop in 0..self.hops {
                    // The weak agent's habit: look the previous key up again instead of the
                    // value it just read (after the first hop), 60% of the time.
                    if hop == 0 || rng.random::<f64>() >= 0.6 {
                        asked = key;
                    }
                    turns.push(format!("L:{asked}\n"));
                    key = self.lookup(asked).unwrap_or(key);
                }
                turns.push(format!("A:{key}\n"));
                turns
            }
        }
    }
}

impl Task for Demo {
    fn train_len(&self) -> usize {
        self.train.len()
    }
    fn train_env(&self, i: usize) -> Box<dyn Environment> {
        self.env(self.train[i])
    }
    fn eval_len(&self) -> usize {
        self.eval.len()
    }
    fn eval_env(&self, i: usize) -> Box<dyn Environment> {
        self.env(self.eval[i])
    }
    fn max_turns(&self) -> usize {
        match self.kind {
            DemoTask::Calc => 3,
            DemoTask::Chain => self.hops + 2,
        }
    }
    fn stop(&self) -> Vec<String> {
        vec!["\n".into()]
    }
}

fn number(s: &str) -> Option<u32> {
    (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

struct CalcEnv {
    a: u32,
    b: u32,
    called: bool,
}

impl Environment for CalcEnv {
    fn prompt(&self) -> String {
        format!("Q:{}+{}\n", self.a, self.b)
    }

    fn step(&mut self, turn: &str, _eos: bool) -> Step {
        let line = turn.trim_end_matches('\n');
        if let Some(answer) = line.strip_prefix("A:") {
            let right = number(answer) == Some(self.a + self.b);
            return Step::Done {
                reward: f64::from(u8::from(right)),
                success: right,
                turn_reward: 0.0,
            };
        }
        let call = line
            .strip_prefix("C:")
            .and_then(|args| args.split_once('+'));
        match call.and_then(|(x, y)| Some((number(x)?, number(y)?))) {
            Some((x, y)) if !self.called => {
                self.called = true;
                Step::Continue {
                    observation: format!("R:{}\n", x + y),
                    turn_reward: 0.0,
                }
            }
            _ => Step::Done {
                reward: 0.0,
                success: false,
                turn_reward: 0.0,
            },
        }
    }
}

struct ChainEnv {
    demo: Demo,
    start: u32,
    key: u32,
    hop: usize,
    doomed: bool,
}

impl Environment for ChainEnv {
    fn prompt(&self) -> String {
        format!("Q:{}\n", self.start)
    }

    fn step(&mut self, turn: &str, _eos: bool) -> Step {
        let line = turn.trim_end_matches('\n');
        if let Some(answer) = line.strip_prefix("A:") {
            let right =
                self.hop == self.demo.hops && !self.doomed && number(answer) == Some(self.key);
            return Step::Done {
                reward: f64::from(u8::from(right)),
                success: right,
                turn_reward: 0.0,
            };
        }
        let asked = line.strip_prefix("L:").and_then(number);
        match asked.and_then(|k| Some((k, self.demo.lookup(k)?))) {
            Some((k, value)) if self.hop < self.demo.hops => {
                let right = k == self.key && !self.doomed;
                self.doomed |= !right;
                self.hop += 1;
                self.key = value;
                Step::Continue {
                    observation: format!("={value}\n"),
                    turn_reward: if right {
                        1.0 / self.demo.hops as f64
                    } else {
                        0.0
                    },
                }
            }
            _ => Step::Done {
                reward: 0.0,
                success: false,
                turn_reward: 0.0,
            },
        }
    }
}

/// Options of `agentrl train demo`.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Which task.
    pub task: DemoTask,
    /// Lookups per chain (chain task).
    pub hops: usize,
    /// Turn-level or broadcast credit.
    pub credit: Credit,
    /// Seed of everything.
    pub seed: u64,
    /// Time budget of the GRPO phase.
    pub minutes: f64,
    /// Where the files go.
    pub out: PathBuf,
    /// Demonstrations for the warm-up.
    pub demonstrations: usize,
    /// Held-out success that ends the GRPO phase early.
    pub target: f64,
    /// Cap on GRPO steps.
    pub max_steps: u64,
    /// SFT epochs over the demonstrations.
    pub sft_epochs: u32,
    /// DAPO dynamic sampling (`grpo.dynamic_sampling`); off, every step trains on the same
    /// number of rollouts whatever the credit.
    pub dynamic_sampling: bool,
}

impl DemoOptions {
    /// The documented demo: ≤ 15 minutes on 2 cores.
    #[must_use]
    pub fn new(task: DemoTask, credit: Credit, seed: u64, minutes: f64, out: PathBuf) -> Self {
        Self {
            task,
            hops: DEFAULT_HOPS,
            credit,
            seed,
            minutes,
            out,
            demonstrations: 2000,
            target: 0.95,
            max_steps: 400,
            sft_epochs: 12,
            dynamic_sampling: true,
        }
    }
}

/// The demo's model: a Qwen2 of ~100k parameters, its end-of-sequence token id 0.
///
/// # Errors
/// A vocabulary of no tokens.
pub fn demo_model_config(vocab: usize) -> std::result::Result<ModelConfig, String> {
    ModelConfig::tiny_qwen2(vocab, 64, 2, 4, 2)?.with(&[("eos_token_id", json!(0))])
}

/// The demo's training config.
#[must_use]
pub fn demo_config(o: &DemoOptions) -> TrainConfig {
    let mut c = TrainConfig {
        seed: o.seed,
        checkpoint_every: 0,
        // The chain task's 22 held-out keys are cheap to evaluate: every other step resolves
        // the credit comparison more finely.
        eval_every: match o.task {
            DemoTask::Calc => 5,
            DemoTask::Chain => 2,
        },
        micro_batch_tokens: Some(8192),
        ..TrainConfig::default()
    };
    c.sft.epochs = o.sft_epochs;
    c.sft.learning_rate = 3e-3;
    c.sft.batch_size = 32;
    c.grpo.learning_rate = 1e-3;
    c.grpo.group_size = 8;
    c.grpo.batch_prompts = 16;
    c.grpo.temperature = 1.0;
    c.grpo.max_new_tokens = 10;
    c.grpo.credit = o.credit;
    c.grpo.dynamic_sampling = o.dynamic_sampling;
    c.eval.max_prompts = 200;
    c
}

/// Writes a fresh demo model (random weights from `seed`, [`demo_model_config`]) with a
/// character tokenizer of `alphabet` to `dir`, in the Hugging Face layout; returns the
/// tokenizer.
///
/// # Errors
/// An alphabet with a repeated character, I/O.
pub fn write_base_model(dir: &Path, alphabet: &str, seed: u64) -> Result<Tok> {
    let tok = Tok::char_level(alphabet, &["<|endoftext|>"]).map_err(TrainError::Data)?;
    let model = Model::init(
        demo_model_config(tok.vocab_size()).map_err(|e| TrainError::config("model", e))?,
        seed,
        DType::F32,
        &Device::Cpu,
    )?;
    model.save_hf(dir, u64::MAX)?;
    std::fs::write(dir.join("tokenizer.json"), tok.json())?;
    Ok(tok)
}

/// The name a value serialises as (`calc`, `turn`).
fn wire_name(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// Runs the demo and returns `run.json`.
///
/// # Errors
/// I/O, tensor failures.
pub fn run(o: &DemoOptions) -> Result<RunReport> {
    let base = o.out.join("base");
    let tok = write_base_model(&base, ALPHABET, o.seed)?;
    // Train what was written, through the same loader as `train run`.
    let model = Model::load(&base, DType::F32, &Device::Cpu)?;
    let demo = Demo::new(o.task, o.hops, o.seed, 200);
    let examples = demo.demonstrations(&tok, o.demonstrations, o.seed)?;
    let config = demo_config(o);
    let identity = Identity {
        base_model_sha256: hash_model_dir(&base)?,
        data_sha256: format!("demo:{:?}:{}", o.task, o.seed),
        init_adapter: None,
    };
    let mut trainer = Trainer::new(model, tok, config, &o.out, identity)?;
    let (before_sft, _) = trainer.evaluate(&demo)?;
    trainer.sft(&examples)?;
    let (before, before_reward) = trainer.evaluate(&demo)?;
    tracing::info!(before_sft, eval_success = before, "after the SFT warm-up");
    trainer.deadline = Some(Instant::now() + Duration::from_secs_f64(o.minutes * 60.0));
    trainer.grpo_online(&demo, o.max_steps, Some(o.target))?;
    let (after, after_reward) = trainer.evaluate(&demo)?;
    let rows = trainer.metrics.rows();
    let reached = rows
        .iter()
        .position(|m| m.phase == "grpo" && m.eval_success.is_some_and(|s| s >= 0.9));
    let steps_to_target = reached.map(|i| rows[i].step);
    let rollouts_to_target =
        reached.map(|i| rows[..i].iter().filter_map(|m| m.rollouts).sum::<usize>());
    let outcome = RunOutcome::Demo {
        scores: OnlineScores {
            eval_prompts: demo.eval_len(),
            eval_success_before: before,
            eval_reward_before: before_reward,
            eval_success_after: after,
            eval_reward_after: after_reward,
        },
        demo: DemoSummary {
            task: wire_name(o.task),
            hops: o.hops,
            credit: wire_name(o.credit),
            dynamic_sampling: o.dynamic_sampling,
            seed: o.seed,
            demonstrations: o.demonstrations,
            eval_success_untrained: before_sft,
            steps_to_0_9: steps_to_target,
            rollouts_to_0_9: rollouts_to_target,
        },
    };
    let sft = SftCounts {
        examples: examples.len(),
        ..SftCounts::default()
    };
    trainer.finish(sft, outcome)
}
