//! Where runs execute: the launcher port and its two adapters, AWS Batch ([`BatchLauncher`])
//! and a child process of `agentrl serve` ([`LocalLauncher`]).
//!
//! A launcher only starts and stops jobs. What a job did comes back through the use cases:
//! Batch's job-state events (`training-events`) or the local runner call
//! [`crate::runs::job_state`], which reads the run's `run.json` from the object store and
//! registers the model version.

mod batch;
mod local;

use agentrl_core::TenantId;
use agentrl_core::training::{
    architecture::ModelConfig,
    config::TrainConfig,
    placement::{NoFit, Placement},
};
use async_trait::async_trait;
use serde_json::Value;

pub use batch::{BatchLauncher, BatchSettings};
pub use local::{LocalJobs, LocalLauncher, LocalRunner, Storage};

/// One training job: `train run --model M --dataset D --out O --config-json C`, with object
/// prefixes that each launcher turns into its own locations (local paths or `s3://` URIs).
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Whose run.
    pub tenant: TenantId,
    /// The run (also the job's name).
    pub run_id: String,
    /// Prefix of the base model's files.
    pub model_prefix: String,
    /// Prefix of the dataset.
    pub dataset_prefix: String,
    /// Prefix the run writes to.
    pub output_prefix: String,
    /// The trainer's configuration.
    pub config: Value,
    /// The GPU class it runs on, when the launcher chooses one.
    pub placement: Option<Placement>,
}

impl JobSpec {
    /// The trainer's arguments, with `location` turning a prefix into a path or URI.
    pub fn args(&self, location: impl Fn(&str) -> String) -> Vec<String> {
        vec![
            "run".into(),
            "--model".into(),
            location(&self.model_prefix),
            "--dataset".into(),
            location(&self.dataset_prefix),
            "--out".into(),
            location(&self.output_prefix),
            "--config-json".into(),
            self.config.to_string(),
        ]
    }
}

/// What a launcher can show of a job's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTail {
    /// Its last lines, oldest first.
    Lines(Vec<String>),
    /// The log lives where this process does not read it: where to look.
    Elsewhere(String),
}

/// Starts and stops training jobs.
#[async_trait]
pub trait Launcher: Send + Sync + 'static {
    /// `batch` or `local`, as runs record it.
    fn name(&self) -> &'static str;

    /// Where a run of `config` on `model` goes: a GPU class whose memory holds its plan
    /// (Batch), or `None` where the trainer plans against the machine it finds (the local
    /// runner).
    ///
    /// # Errors
    /// No GPU class holds the run.
    fn place(&self, model: &ModelConfig, config: &TrainConfig) -> Result<Option<Placement>, NoFit>;

    /// The instance type a job placed so runs on (the cost estimate's price).
    fn instance_type(&self, placement: Option<&Placement>) -> String;

    /// Whether unfinished runs must be found again after a restart (the local runner forgets
    /// its jobs when its process stops; Batch does not).
    fn resumes_after_restart(&self) -> bool;

    /// Starts `job`; returns the launcher's job id.
    ///
    /// # Errors
    /// When the job could not be submitted.
    async fn submit(&self, job: &JobSpec) -> anyhow::Result<String>;

    /// Stops the job `job_id` (nothing when it already ended).
    ///
    /// # Errors
    /// When the launcher could not be reached.
    async fn cancel(&self, job_id: &str, reason: &str) -> anyhow::Result<()>;

    /// The last `lines` lines of job `job_id`'s log (no lines when it wrote none yet).
    ///
    /// # Errors
    /// When the launcher or the log could not be read.
    async fn log_tail(&self, job_id: &str, lines: usize) -> anyhow::Result<LogTail>;
}
