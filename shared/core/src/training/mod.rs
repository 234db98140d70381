//! Training as a service: the rules of training runs (their life cycle and identity, the cost
//! estimate), of promoting a model version (the evaluation gate) and of rolling one out to a
//! share of an agent's traffic first (the canary); the trainer's config and the base model's
//! architecture as both the service and the trainer read them, and the memory plan and GPU
//! placement they imply.

pub mod architecture;
mod base_model;
mod canary;
pub mod config;
mod cost;
mod curve;
mod gate;
pub mod placement;
pub mod plan;
mod report;
mod run;

pub use base_model::{MAX_BASE_MODEL, check_base_model};
pub use canary::{Arm, Canary, bucket, rolled_out};
pub use cost::{cost_estimate, hourly_price};
pub use curve::curve_lines;
pub use gate::{ArmStats, Check, Evaluation, GateConfig, GateDecision, GateInputs, evaluate_gate};
pub use report::{
    DemoSummary, GateCounts, Metrics, ModelSummary, OnlineScores, RunOutcome, RunReport, SftCounts,
    Validation,
};
pub use run::{RunStatus, TransitionError, run_id};
