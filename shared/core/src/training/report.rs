//! `run.json`: what a finished training run reports. The trainer writes it last (its presence
//! means the run finished); the training service reads it to register the model version. One
//! type for both, so a field renamed on one side cannot go unread on the other.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Evaluation;

/// `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// sha256 over the base model's config and weight files.
    pub base_model_sha256: String,
    /// The data's content hash (a dataset's manifest hash; the prompt files' sha256 online).
    pub dataset_content_hash: String,
    /// sha256 of `tokenizer.json`.
    pub tokenizer_sha256: String,
    /// The training config as run (every default filled in).
    pub config: Value,
    /// The model trained.
    pub model: ModelSummary,
    /// SFT optimizer steps.
    pub sft_steps: u64,
    /// GRPO optimizer steps.
    pub grpo_steps: u64,
    /// What the SFT file gave.
    pub sft: SftCounts,
    /// The last optimizer step's metrics.
    pub final_metrics: Option<Metrics>,
    /// Seconds the process trained.
    pub wall_time_s: f64,
    /// Peak resident memory, MiB.
    pub peak_rss_mb: Option<f64>,
    /// The device, as candle names it.
    pub device: String,
    /// The trainer's version.
    pub trainer_version: String,
    /// What the run measured, by the kind of run (`mode`).
    #[serde(flatten)]
    pub outcome: RunOutcome,
}

impl RunReport {
    /// The held-out scores of an online run (prompts or the demo).
    #[must_use]
    pub fn online_scores(&self) -> Option<&OnlineScores> {
        match &self.outcome {
            RunOutcome::Prompts(scores) | RunOutcome::Demo { scores, .. } => Some(scores),
            RunOutcome::Dataset { .. } => None,
        }
    }
}

/// The model a run trained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// `config.json`'s `architectures`.
    pub architectures: Vec<String>,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Vocabulary rows.
    pub vocab_size: usize,
    /// Scalars trained.
    pub trainable_parameters: usize,
    /// A LoRA adapter was trained (the base weights stayed frozen).
    pub lora: bool,
}

/// What a run measured, by its `mode`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum RunOutcome {
    /// Offline GRPO on a dataset.
    Dataset {
        /// What the safe-training gate did to `train.parquet`.
        gate: GateCounts,
        /// The base and trained models on `validation.parquet`.
        validation: Validation,
    },
    /// Online GRPO on a prompts file.
    Prompts(OnlineScores),
    /// `agentrl train demo`.
    Demo {
        /// Held-out scores.
        #[serde(flatten)]
        scores: OnlineScores,
        /// The demo's settings and milestones.
        demo: DemoSummary,
    },
}

/// Scores of an offline run on the dataset's validation split.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// The base model (none without a validation split).
    pub before: Option<Evaluation>,
    /// The trained model.
    pub after: Option<Evaluation>,
}

/// Greedy scores on the held-out prompts of an online run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OnlineScores {
    /// Held-out prompts.
    pub eval_prompts: usize,
    /// Success rate before GRPO (after the SFT warm-up).
    pub eval_success_before: f64,
    /// Mean reward before GRPO.
    pub eval_reward_before: f64,
    /// Success rate at the end.
    pub eval_success_after: f64,
    /// Mean reward at the end.
    pub eval_reward_after: f64,
}

/// The demo's settings and when it reached 0.9 held-out success.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DemoSummary {
    /// `calc` or `chain`.
    pub task: String,
    /// Lookups per chain.
    pub hops: usize,
    /// `broadcast` or `turn`.
    pub credit: String,
    /// DAPO dynamic sampling.
    pub dynamic_sampling: bool,
    /// The seed.
    pub seed: u64,
    /// Warm-up demonstrations.
    pub demonstrations: usize,
    /// Held-out success of the untrained model.
    pub eval_success_untrained: f64,
    /// GRPO steps until held-out success reached 0.9.
    pub steps_to_0_9: Option<u64>,
    /// Episodes sampled until then.
    pub rollouts_to_0_9: Option<usize>,
}

/// What reading the SFT file did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SftCounts {
    /// Examples trained on.
    pub examples: usize,
    /// Examples cut to `max_seq_len` (the end of their completion dropped: those do not teach
    /// stopping).
    pub truncated: usize,
    /// Examples dropped: the prompt alone reaches `max_seq_len`.
    pub too_long: usize,
}

/// What the safe-training gate did to a dataset's trajectories.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateCounts {
    /// Trajectories read.
    pub trajectories: usize,
    /// Trajectories kept.
    pub kept: usize,
    /// Dropped: a turn violated a safety rule.
    pub safety_violation: usize,
    /// Dropped: response ids, logprobs and loss mask of a row disagree in length.
    pub inconsistent_lengths: usize,
    /// Dropped: the rows name a tokenizer that is not the model's.
    pub tokenizer_mismatch: usize,
    /// Dropped: a token id outside the model's vocabulary.
    pub token_out_of_vocab: usize,
    /// Dropped: a reward missing, non-finite or outside [−1, 1].
    pub reward_out_of_range: usize,
    /// Dropped: older than `grpo.max_staleness` policy versions.
    pub stale: usize,
    /// Dropped: no model turn to train on.
    pub no_model_turn: usize,
    /// Dropped: the model's chat template failed on a row's text.
    pub chat_template_error: usize,
    /// Dropped: a turn's prompt alone reaches `max_seq_len`.
    pub too_long: usize,
    /// Kept, but the rows name no tokenizer (trained on, unverified).
    pub unverified_tokenizer: usize,
    /// Model turns with no token ids, tokenised from text (re-tokenised text drifts).
    pub retokenized_turns: usize,
    /// Model turns whose behaviour logprobs serve as π_old (off-policy importance weights).
    pub off_policy_turns: usize,
    /// Model turns trained with the on-policy surrogate (no usable behaviour logprobs).
    pub on_policy_surrogate_turns: usize,
    /// Model turns kept but cut to `max_seq_len` (the end of their response dropped).
    pub truncated_turns: usize,
    /// Rows dropped: they came after their trajectory's `turn_count` rows had been read.
    pub late_turns: usize,
}

/// One line of `metrics.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Optimizer step within its phase (1-based).
    pub step: u64,
    /// `sft` or `grpo`.
    pub phase: String,
    /// The objective.
    pub loss: f64,
    /// Mean reward of the step's rollouts (0 in SFT).
    pub reward_mean: f64,
    /// Their standard deviation.
    pub reward_std: f64,
    /// Mean k3 KL to the reference (0 when off).
    pub kl: f64,
    /// Fraction of clipped tokens.
    pub clip_fraction: f64,
    /// Mean policy entropy at loss tokens.
    pub entropy: f64,
    /// Gradient norm before clipping.
    pub grad_norm: f64,
    /// Learning rate of the step.
    pub lr: f64,
    /// Loss tokens of the step.
    pub tokens: usize,
    /// Loss tokens per second of the step (sampling included).
    pub tokens_per_s: f64,
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// Success rate of the step's rollouts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<f64>,
    /// Episodes sampled for the step, dynamic sampling's extra draws included (online).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollouts: Option<usize>,
    /// Tokens the step's rollouts sampled per second of sampling (online).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_tokens_per_s: Option<f64>,
    /// Groups with signal under the configured credit / groups drawn (dynamic sampling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub informative_fraction: Option<f64>,
    /// Groups dropped for zero variance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zero_variance_groups: Option<usize>,
    /// Mean truncated importance weight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub importance_weight: Option<f64>,
    /// Greedy success on held-out prompts (evaluation lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eval_success: Option<f64>,
    /// Mean reward on held-out prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eval_reward: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcome: RunOutcome) -> RunReport {
        RunReport {
            base_model_sha256: "b".into(),
            dataset_content_hash: "d".into(),
            tokenizer_sha256: "t".into(),
            config: serde_json::json!({"seed": 1}),
            model: ModelSummary {
                architectures: vec!["Qwen2ForCausalLM".into()],
                hidden_size: 8,
                num_hidden_layers: 1,
                vocab_size: 16,
                trainable_parameters: 100,
                lora: false,
            },
            sft_steps: 2,
            grpo_steps: 3,
            sft: SftCounts::default(),
            final_metrics: Some(Metrics {
                step: 3,
                phase: "grpo".into(),
                ..Metrics::default()
            }),
            wall_time_s: 1.5,
            peak_rss_mb: None,
            device: "Cpu".into(),
            trainer_version: "0".into(),
            outcome,
        }
    }

    #[test]
    fn every_mode_round_trips_with_its_fields_at_the_top_level() {
        let online = OnlineScores {
            eval_prompts: 4,
            eval_success_after: 0.75,
            ..OnlineScores::default()
        };
        for outcome in [
            RunOutcome::Dataset {
                gate: GateCounts {
                    kept: 3,
                    ..GateCounts::default()
                },
                validation: Validation::default(),
            },
            RunOutcome::Prompts(online.clone()),
            RunOutcome::Demo {
                scores: online,
                demo: DemoSummary {
                    task: "calc".into(),
                    hops: 4,
                    credit: "turn".into(),
                    dynamic_sampling: true,
                    seed: 0,
                    demonstrations: 10,
                    eval_success_untrained: 0.0,
                    steps_to_0_9: Some(7),
                    rollouts_to_0_9: None,
                },
            },
        ] {
            let r = report(outcome);
            let json = serde_json::to_value(&r).unwrap();
            assert!(json["mode"].is_string());
            if json["mode"] != "dataset" {
                assert_eq!(json["eval_success_after"], 0.75);
            }
            assert_eq!(serde_json::from_value::<RunReport>(json).unwrap(), r);
        }
    }
}
