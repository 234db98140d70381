//! The trainer's config (JSON): every key optional, every default documented in
//! `docs/training.md` with the anchor it comes from, every value range-checked with its path.
//! The training service checks a run's config with it before submitting the job, and plans
//! the run's memory from it ([`super::plan`]); the trainer runs what it says.

mod lora;
mod optimizer;
mod size;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use lora::{LORA_MODULES, LoraConfig};
pub use optimizer::{OptimizerConfig, Schedule};
pub use size::ByteSize;

use super::plan::Target;
use crate::FieldError;

type Result<T> = std::result::Result<T, FieldError>;

/// The field path of an error about the config as a whole.
const ROOT: &str = "(root)";

/// The whole config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// Seeds weights of new adapters, sampling, shuffling and dropout.
    pub seed: u64,
    /// Upper bound on tokens per micro-batch, its sequences packed end to end with no padding
    /// (attention kept within each); gradients are accumulated over micro-batches, so memory
    /// follows this, not the batch or dataset size.
    /// `null`: the largest that fits the device's memory, from the run's plan
    /// ([`crate::plan`]).
    pub micro_batch_tokens: Option<usize>,
    /// Longest sequence (prompt and response) trained on or sampled; longer rows keep their
    /// start and are counted. `null`: the model's `max_position_embeddings`.
    pub max_seq_len: Option<usize>,
    /// The precision of the forward: `auto` (bf16 on a GPU, fp32 on the CPU), `bf16`, `fp32`.
    pub dtype: Precision,
    /// Recompute each decoder layer in the backward instead of keeping its activations
    /// (`null`: on with a GPU, off on the CPU).
    pub gradient_checkpointing: Option<bool>,
    /// Write a resumable checkpoint every N optimizer steps (0 = only at the end).
    pub checkpoint_every: u64,
    /// With an `s3://` output, mirror `metrics.jsonl` (the run's progress) at most every N
    /// seconds between checkpoints (0 = after every line).
    pub progress_every_s: u64,
    /// Evaluate every N GRPO steps (0 = only before and after).
    pub eval_every: u64,
    /// Also write merged full weights when training LoRA.
    pub merge_lora: bool,
    /// Largest weight file: bigger state is sharded as transformers shards it
    /// (`model-00001-of-0000N.safetensors` and `model.safetensors.index.json`). Bytes, or a
    /// string as transformers counts it (`"5GB"` = 5·10⁹, `"5GiB"` = 5·2³⁰).
    pub max_shard_size: ByteSize,
    /// Resumable checkpoints kept (locally and on S3): older ones are deleted once a newer
    /// one is complete.
    pub keep_checkpoints: usize,
    /// What a finished run keeps besides its outputs: `weights` (its resumable checkpoints are
    /// deleted, optimizer state and all) or `all`.
    pub keep_after_finish: KeepAfterFinish,
    /// `null`: full fine-tuning; otherwise LoRA.
    pub lora: Option<LoraConfig>,
    /// The supervised warm-up.
    pub sft: SftConfig,
    /// The RL phase.
    pub grpo: GrpoConfig,
    /// AdamW and the schedule.
    pub optimizer: OptimizerConfig,
    /// Evaluation of online runs.
    pub eval: EvalConfig,
    /// Tokenizer names rows may carry, mapped to the sha256 of their `tokenizer.json`.
    pub tokenizers: BTreeMap<String, String>,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            micro_batch_tokens: None,
            max_seq_len: None,
            dtype: Precision::Auto,
            gradient_checkpointing: None,
            checkpoint_every: 50,
            progress_every_s: 30,
            eval_every: 10,
            merge_lora: false,
            max_shard_size: ByteSize(5_000_000_000),
            keep_checkpoints: 2,
            keep_after_finish: KeepAfterFinish::Weights,
            lora: None,
            sft: SftConfig::default(),
            grpo: GrpoConfig::default(),
            optimizer: OptimizerConfig::default(),
            eval: EvalConfig::default(),
            tokenizers: BTreeMap::new(),
        }
    }
}

/// `keep_after_finish`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeepAfterFinish {
    /// The outputs alone: resumable checkpoints (optimizer state and all) are deleted.
    #[default]
    Weights,
    /// The outputs and the last `keep_checkpoints` checkpoints.
    All,
}

/// `dtype`: what the matmuls compute in. Norm statistics, the attention and logit softmaxes,
/// the loss and the optimizer are fp32 whatever it says; trained weights have fp32 masters;
/// frozen weights (a LoRA base, the KL reference) are held in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// bf16 on a GPU, fp32 on the CPU.
    #[default]
    Auto,
    /// bf16 (on the CPU too: the tests' path; slower there than fp32).
    Bf16,
    /// fp32 everywhere.
    Fp32,
}

impl Precision {
    /// Whether the forward computes in bf16 on `target`.
    #[must_use]
    pub fn bf16_on(self, target: Target) -> bool {
        match (self, target) {
            (Self::Fp32, _) | (Self::Auto, Target::Cpu) => false,
            (Self::Bf16, _) | (Self::Auto, Target::Cuda) => true,
        }
    }
}

/// `sft`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SftConfig {
    /// Passes over the SFT examples (0 = skip the phase).
    pub epochs: u32,
    /// Peak learning rate.
    pub learning_rate: f64,
    /// Examples per optimizer step.
    pub batch_size: usize,
}

impl Default for SftConfig {
    fn default() -> Self {
        Self {
            epochs: 1,
            learning_rate: 1e-5,
            batch_size: 8,
        }
    }
}

/// `grpo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GrpoConfig {
    /// Optimizer steps when the command line gives none.
    pub steps: u64,
    /// Peak learning rate.
    pub learning_rate: f64,
    /// Completions sampled per prompt (G).
    pub group_size: usize,
    /// Sampling temperature of online rollouts.
    pub temperature: f64,
    /// Nucleus sampling mass (1 = off).
    pub top_p: f64,
    /// Sample among the most likely tokens only (0 = off).
    pub top_k: usize,
    /// Episodes sampled at once (the key/value cache holds their rows; the others wait for
    /// a row to free). `null`: a step's `batch_prompts × group_size`.
    pub max_rollout_rows: Option<usize>,
    /// Groups per optimizer step (prompts in online mode, dataset groups offline).
    pub batch_prompts: usize,
    /// Longest completion (per model turn) in tokens.
    pub max_new_tokens: usize,
    /// Strings that end a completion besides the end-of-sequence token.
    pub stop: Vec<String>,
    /// Render `--prompts` and `--sft` text as a user turn (and the assistant's answer) through
    /// the tokenizer's chat template (`false`: the text as written).
    pub chat_template: bool,
    /// ε_low of the clipped ratio.
    pub epsilon_low: f64,
    /// ε_high (DAPO clip-higher).
    pub epsilon_high: f64,
    /// Dual-clip constant c for negative advantages.
    pub dual_clip: f64,
    /// Advantage scaling.
    pub std_scaling: StdScaling,
    /// Loss aggregation.
    pub aggregation: Aggregation,
    /// β of the k3 KL to the initial policy (0 = off, no reference kept).
    pub kl_beta: f64,
    /// Where each turn's credit comes from.
    pub credit: Credit,
    /// Discount of per-turn returns (`credit = turn`).
    pub gamma: f64,
    /// Policy updates per batch of rollouts (TRL `num_iterations`, μ).
    pub updates_per_batch: u32,
    /// Truncation C of off-policy importance weights.
    pub importance_cap: f64,
    /// The version the base model is (rows of another version are off-policy by that much).
    pub policy_version: Option<i64>,
    /// Rows more than this many versions older than `policy_version` are dropped.
    pub max_staleness: Option<i64>,
    /// DAPO dynamic sampling: keep drawing prompts until the batch has `batch_prompts` groups
    /// whose rewards differ.
    pub dynamic_sampling: bool,
    /// Cap on prompts drawn per step, as a multiple of `batch_prompts`.
    pub max_draws: usize,
}

impl Default for GrpoConfig {
    fn default() -> Self {
        Self {
            steps: 100,
            learning_rate: 1e-6,
            group_size: 8,
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            max_rollout_rows: None,
            batch_prompts: 8,
            max_new_tokens: 256,
            stop: Vec::new(),
            chat_template: false,
            epsilon_low: 0.2,
            epsilon_high: 0.28,
            dual_clip: 3.0,
            std_scaling: StdScaling::Group,
            aggregation: Aggregation::TokenMean,
            kl_beta: 0.0,
            credit: Credit::Broadcast,
            gamma: 1.0,
            updates_per_batch: 1,
            importance_cap: 2.0,
            policy_version: None,
            max_staleness: None,
            dynamic_sampling: true,
            max_draws: 4,
        }
    }
}

/// How advantages are scaled after subtracting the group mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StdScaling {
    /// By the group's standard deviation (TRL `scale_rewards="group"`, verl).
    Group,
    /// By the batch's standard deviation (TRL `"batch"`).
    Batch,
    /// Not scaled (Dr. GRPO).
    None,
}

/// Where the credit of each turn comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Credit {
    /// The episode advantage on every turn.
    Broadcast,
    /// Discounted per-turn returns against the group's per-turn baseline.
    Turn,
    /// Per-turn values already in the data.
    Precomputed,
}

/// How token losses are averaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregation {
    /// Every response token of the batch weighs the same (DAPO, TRL's default).
    TokenMean,
    /// Every rollout weighs the same, its tokens sharing its weight (original GRPO).
    SequenceMean,
    /// Divided by a constant: rollouts × the longest allowed response (Dr. GRPO).
    DrGrpo,
}

/// `eval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalConfig {
    /// Fraction of the prompts held out for evaluation (never trained on).
    pub holdout_fraction: f64,
    /// Most held-out prompts evaluated (greedy decoding).
    pub max_prompts: usize,
}

impl Default for EvalConfig {
    fn default() -> Self {
        Self {
            holdout_fraction: 0.1,
            max_prompts: 256,
        }
    }
}

fn positive(field: &str, x: f64) -> Result<()> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(FieldError::new(field, "must be a positive number"))
    }
}

fn within(field: &str, x: f64, lo: f64, hi: f64) -> Result<()> {
    if (lo..=hi).contains(&x) {
        Ok(())
    } else {
        Err(FieldError::new(field, format!("must be in [{lo}, {hi}]")))
    }
}

fn count(field: &str, x: usize, lo: usize, hi: usize) -> Result<()> {
    if (lo..=hi).contains(&x) {
        Ok(())
    } else {
        Err(FieldError::new(field, format!("must be in {lo}..={hi}")))
    }
}

impl TrainConfig {
    /// The longest sequence of a run on a model whose `max_position_embeddings` is
    /// `model_positions`.
    #[must_use]
    pub fn seq_limit(&self, model_positions: usize) -> usize {
        self.max_seq_len.unwrap_or(model_positions)
    }

    /// Whether decoder layers are recomputed in the backward on `target`.
    #[must_use]
    pub fn checkpointing(&self, target: Target) -> bool {
        self.gradient_checkpointing
            .unwrap_or(target == Target::Cuda)
    }

    /// Parses and validates JSON text: unknown keys and wrong types are errors naming their
    /// path.
    ///
    /// # Errors
    /// The field at fault.
    pub fn parse(text: &str) -> Result<Self> {
        let de = &mut serde_json::Deserializer::from_str(text);
        Self::checked(serde_path_to_error::deserialize(de))
    }

    /// Parses and validates a JSON value received as `field` of a request (a run's `config`,
    /// an agent's `auto_train`): errors name their path under it.
    ///
    /// # Errors
    /// The field at fault.
    pub fn from_value(value: &serde_json::Value, field: &str) -> Result<Self> {
        Self::checked(serde_path_to_error::deserialize(value)).map_err(|e| {
            if e.field == ROOT {
                FieldError::new(field, e.reason)
            } else {
                e.within(field)
            }
        })
    }

    fn checked<E: std::fmt::Display>(
        parsed: std::result::Result<Self, serde_path_to_error::Error<E>>,
    ) -> Result<Self> {
        let config = parsed.map_err(|e| {
            let path = e.path().to_string();
            FieldError::new(
                if path == "." { ROOT.into() } else { path },
                e.inner().to_string(),
            )
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Range checks.
    ///
    /// # Errors
    /// The field at fault.
    pub fn validate(&self) -> Result<()> {
        if let Some(tokens) = self.micro_batch_tokens {
            count("micro_batch_tokens", tokens, 16, 1 << 24)?;
        }
        if self.max_shard_size.0 == 0 {
            return Err(FieldError::new("max_shard_size", "must be positive"));
        }
        count("keep_checkpoints", self.keep_checkpoints, 1, 1000)?;
        if let Some(len) = self.max_seq_len {
            count("max_seq_len", len, 2, 1 << 24)?;
        }
        positive("sft.learning_rate", self.sft.learning_rate)?;
        within("sft.learning_rate", self.sft.learning_rate, 0.0, 1.0)?;
        count("sft.batch_size", self.sft.batch_size, 1, 1 << 16)?;
        count("sft.epochs", self.sft.epochs as usize, 0, 10_000)?;
        let g = &self.grpo;
        positive("grpo.learning_rate", g.learning_rate)?;
        within("grpo.learning_rate", g.learning_rate, 0.0, 1.0)?;
        count("grpo.group_size", g.group_size, 2, 1024)?;
        within("grpo.temperature", g.temperature, 0.05, 10.0)?;
        within("grpo.top_p", g.top_p, 1e-6, 1.0)?;
        count("grpo.batch_prompts", g.batch_prompts, 1, 1 << 16)?;
        count("grpo.max_new_tokens", g.max_new_tokens, 1, 1 << 16)?;
        within("grpo.epsilon_low", g.epsilon_low, 0.0, 1.0)?;
        within("grpo.epsilon_high", g.epsilon_high, 0.0, 10.0)?;
        within("grpo.dual_clip", g.dual_clip, 1.0, 1e6)?;
        within("grpo.kl_beta", g.kl_beta, 0.0, 10.0)?;
        within("grpo.gamma", g.gamma, 0.0, 1.0)?;
        count(
            "grpo.updates_per_batch",
            g.updates_per_batch as usize,
            1,
            64,
        )?;
        within("grpo.importance_cap", g.importance_cap, 1.0, 1e6)?;
        count("grpo.max_draws", g.max_draws, 1, 1024)?;
        if let Some(rows) = g.max_rollout_rows {
            count("grpo.max_rollout_rows", rows, 1, 1 << 20)?;
        }
        if g.max_staleness.is_some_and(|s| s < 0) {
            return Err(FieldError::new("grpo.max_staleness", "must be ≥ 0"));
        }
        if g.stop.iter().any(String::is_empty) {
            return Err(FieldError::new(
                "grpo.stop",
                "stop strings must not be empty",
            ));
        }
        within(
            "eval.holdout_fraction",
            self.eval.holdout_fraction,
            0.0,
            0.9,
        )?;
        if let Some(lora) = &self.lora {
            lora.validate().map_err(|e| e.within("lora"))?;
        }
        self.optimizer.validate().map_err(|e| e.within("optimizer"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_anchors() {
        let c = TrainConfig::parse("{}").unwrap();
        assert_eq!(
            (c.grpo.epsilon_low, c.grpo.epsilon_high, c.grpo.dual_clip),
            (0.2, 0.28, 3.0)
        );
        assert_eq!(c.grpo.group_size, 8);
        assert_eq!(c.grpo.kl_beta, 0.0);
        assert_eq!(c.grpo.aggregation, Aggregation::TokenMean);
        assert!(c.lora.is_none());
    }

    #[test]
    fn shard_sizes_count_as_transformers_counts() {
        let size = |v: &str| {
            TrainConfig::parse(&format!(r#"{{"max_shard_size": {v}}}"#)).map(|c| c.max_shard_size.0)
        };
        assert_eq!(size(r#""5GB""#).unwrap(), 5_000_000_000);
        assert_eq!(size(r#""2GiB""#).unwrap(), 2 << 30);
        assert_eq!(size(r#""500MB""#).unwrap(), 500_000_000);
        assert_eq!(size(r#""80Mb""#).unwrap(), 10_000_000);
        assert_eq!(size("3000000").unwrap(), 3_000_000);
        assert_eq!(TrainConfig::default().max_shard_size.0, 5_000_000_000);
        let e = size(r#""5 parsecs""#).unwrap_err().to_string();
        assert!(e.contains("max_shard_size"), "{e}");
    }

    #[test]
    fn errors_name_the_field() {
        let e = TrainConfig::parse(r#"{"grpo": {"group_size": 1}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("grpo.group_size"), "{e}");
        let e = TrainConfig::parse(r#"{"sft": {"epochs": "two"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("sft.epochs"), "{e}");
        let e = TrainConfig::parse(r#"{"grpo": {"learning_rat": 1}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("learning_rat"), "{e}");
        let e = TrainConfig::parse(
            r#"{"lora": {"rank": 8, "alpha": 16, "target_modules": ["qproj"]}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("lora.target_modules[0]"), "{e}");
        let c = TrainConfig::parse(r#"{"lora": {"rank": 8, "alpha": 16, "dropout": 0.05, "target_modules": ["q_proj", "v_proj"]}}"#).unwrap();
        assert_eq!(c.lora.unwrap().rank, 8);
    }
}
