//! The dataset job: reads the turn table (`trajectories/tenant=…/date=…/*.parquet`), keeps the
//! episodes of agents that meet the rules, removes near duplicates, splits by conversation and
//! writes, per tenant, `datasets/tenant=…/<dataset_id>/`:
//!
//! - `train.parquet`, `validation.parquet`: turn rows (turn-table schema), no conversation in both;
//! - `sft.jsonl`: positive episodes as prompt messages → final assistant completion;
//! - `preferences.jsonl`: per GRPO group, its best against its worst episode;
//! - `groups.jsonl`: GRPO groups with their reward mean/std and a zero-variance flag;
//! - `openai-chat.jsonl`, `openai-chat-validation.jsonl`: positive episodes in the OpenAI chat
//!   fine-tuning format; `few-shot.json`: the best of them per agent;
//! - `manifest.json`: schema version, counts, content hashes, source objects, the rules used.
//!
//! Then it sends `training.dataset.ready` on the event queue and the training queue.
//!
//! Two triggers: a schedule (every tenant, agents by the rules) and the dataset queue
//! (`dataset.generation.requested`: the agents the learning service names, on its counts).
//! Runs locally (`agentrl dataset build`, and `agentrl serve` drains the dataset queue) and on
//! AWS in the dataset Lambda (`bin/dataset.rs`), which hands tables past its limit to an AWS
//! Batch job running the same binary.

mod build;
mod dispatch;
mod exports;
mod progress;
mod read;
mod requests;
mod spill;
mod upload;

pub use agentrl_core::contracts::Manifest;
pub use build::{DATASETS_PREFIX, build};
pub use dispatch::{BatchDatasets, BatchJob, DEFAULT_LAMBDA_MAX_BYTES, Datasets, Outcome};
pub use requests::{DatasetRequests, REQUESTED};
