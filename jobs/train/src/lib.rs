//! The GRPO trainer: SFT warm-up, LoRA or full fine-tuning, off-policy GRPO with turn-level
//! credit, online GRPO on verifiable prompts, on candle, writing checkpoints that
//! `transformers` and PEFT load unchanged. See `docs/training.md`.

pub mod advantage;
pub mod cli;
pub mod config;
pub mod data;
pub mod demo;
pub mod error;
pub mod evaluate;
pub mod federate;
pub mod generate;
pub mod loss;
pub mod model;
pub mod optim;
pub mod process;
mod pyjson;
pub mod remote;
pub mod report;
pub mod rollout;
pub mod run;
pub mod sampler;
pub mod step;
pub mod task;
pub mod tokenizer;
pub mod trainer;
pub mod turn_store;

pub use agentrl_core::training::plan;
pub use error::TrainError;
