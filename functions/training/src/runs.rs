//! The training-run use cases: create a run once and launch its job, read it with its
//! progress, list, cancel, follow its job's state, start runs for a ready dataset.

use agentrl_core::{
    FieldError, TenantId,
    contracts::{DatasetReady, Manifest},
    training::{
        RunStatus, architecture::ModelConfig, config::TrainConfig, cost_estimate, curve_lines,
        placement::Placement, run_id,
    },
};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    retry::{Contended, optimistic},
};
use serde_json::{Value, value::RawValue};

use crate::{
    TrainingState,
    launch::{JobSpec, LogTail},
    repo::{AgentRecord, BaseRef, JobRef, RunRecord, lost_race},
    versions::{self, RegisterOutcome},
};

/// The largest training config accepted (it travels on the job's command line).
pub const MAX_CONFIG_BYTES: usize = 16 * 1024;

/// A run to create, as parsed from the request.
pub(crate) struct NewRun {
    pub agent_id: String,
    pub dataset_id: String,
    /// `None`: the agent's deployed version, else its base model.
    pub base: Option<BaseRef>,
    pub config: Value,
}

/// Why a run was not created.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CreateError {
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// The base version has no loadable weights.
    #[error("{0}")]
    NotTrainable(String),
    #[error("the training job could not be submitted: {0}")]
    Launch(String),
    #[error("the run is being created concurrently")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Contended for CreateError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

/// Why a run could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("no such training run")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a run was not cancelled.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CancelError {
    #[error("no such training run")]
    NotFound,
    #[error("the run is already {0}")]
    Finished(RunStatus),
    #[error("the run is being changed concurrently")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Contended for CancelError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

/// What a job reported.
#[derive(Debug, Clone, PartialEq)]
pub enum JobState {
    /// It started training.
    Running,
    /// It exited successfully.
    Succeeded,
    /// It failed, with the reason.
    Failed(String),
}

/// How long a submit claimed by a creator that never recorded a job blocks another attempt.
const CLAIM_MS: u64 = 10 * 60 * 1000;

/// Creates the run of (agent, dataset, base, config) and submits its job, or returns the run
/// those inputs already made (`false`): a retried request or a redelivered event never starts
/// a second job.
pub(crate) async fn create(
    state: &TrainingState,
    t: &TenantId,
    new: NewRun,
    trigger: &str,
) -> Result<(RunRecord, bool), CreateError> {
    if new.config.to_string().len() > MAX_CONFIG_BYTES {
        return Err(FieldError::new("config", format!("at most {MAX_CONFIG_BYTES} bytes")).into());
    }
    let (agent, _) = state
        .repo
        .agent(t, &new.agent_id)
        .await?
        .ok_or(CreateError::NotFound("agent"))?;
    let (base, base_prefix) = base_of(state, t, &agent, new.base).await?;
    let placement = placement(state, &base, &base_prefix, &new.config).await?;
    let tenant = format!("tenant={}", state.partition(t));
    let dataset_prefix = format!("datasets/{tenant}/{}/", new.dataset_id);
    if state
        .objects
        .get(&format!("{dataset_prefix}manifest.json"))
        .await?
        .is_none()
    {
        return Err(CreateError::NotFound("dataset"));
    }
    let base_name = match &base {
        BaseRef::Model(m) => format!("model:{m}"),
        BaseRef::Version(v) => format!("version:{v}"),
    };
    let id = run_id(&agent.agent_id, &new.dataset_id, &base_name, &new.config);
    let fresh = RunRecord {
        run_id: id.clone(),
        agent_id: agent.agent_id.clone(),
        dataset_id: new.dataset_id.clone(),
        base,
        base_prefix,
        config: new.config,
        status: RunStatus::Queued,
        reason: None,
        job: None,
        dataset_prefix,
        output_prefix: format!("training-runs/{tenant}/{id}/"),
        trigger: trigger.to_owned(),
        created_at_ms: now_ms(),
        started_at_ms: None,
        finished_at_ms: None,
        model_version: None,
        submit_claimed_at_ms: None,
    };
    let (run, created) = optimistic(|| claim(state, t, &fresh)).await?;
    let Some(run) = run else {
        let (existing, _) = state
            .repo
            .run(t, &id)
            .await?
            .ok_or(CreateError::NotFound("training run"))?;
        return Ok((existing, false));
    };
    Ok((submit(state, t, run, placement).await?, created))
}

/// Creates the run with the submit claimed, or claims the submit of an existing run that has
/// no job and whose claim expired; `None` when someone else owns the submit or it is done.
async fn claim(
    state: &TrainingState,
    t: &TenantId,
    fresh: &RunRecord,
) -> Result<(Option<RunRecord>, bool), CreateError> {
    let now = now_ms();
    match state.repo.run(t, &fresh.run_id).await? {
        None => {
            let mut run = fresh.clone();
            run.submit_claimed_at_ms = Some(now);
            state
                .repo
                .create_run(t, &run, !state.launcher.resumes_after_restart())
                .await
                .map_err(|e| lost_race(e, CreateError::Contended))?;
            Ok((Some(run), true))
        }
        Some((mut run, at)) => {
            let stale = run
                .submit_claimed_at_ms
                .is_none_or(|c| now.saturating_sub(c) > CLAIM_MS);
            if run.job.is_some() || run.status != RunStatus::Queued || !stale {
                return Ok((None, false));
            }
            run.submit_claimed_at_ms = Some(now);
            state
                .repo
                .update_run(t, &run, at)
                .await
                .map_err(|e| lost_race(e, CreateError::Contended))?;
            Ok((Some(run), false))
        }
    }
}

/// Submits the claimed run's job and records it; a refused submit fails the run.
async fn submit(
    state: &TrainingState,
    t: &TenantId,
    run: RunRecord,
    placement: Option<Placement>,
) -> Result<RunRecord, CreateError> {
    let spec = JobSpec {
        tenant: t.clone(),
        run_id: run.run_id.clone(),
        model_prefix: run.base_prefix.clone(),
        dataset_prefix: run.dataset_prefix.clone(),
        output_prefix: run.output_prefix.clone(),
        config: run.config.clone(),
        placement,
    };
    let submitted = state.launcher.submit(&spec).await;
    let placement = spec.placement.as_ref();
    let job = submitted.as_ref().ok().map(|job_id| JobRef {
        launcher: state.launcher.name().to_owned(),
        job_id: job_id.clone(),
        instance_type: state.launcher.instance_type(placement),
        gpu_class: placement.map(|p| p.class.name.clone()),
        planned_peak_gb: placement.map(|p| p.plan.peak_gb),
    });
    let failure = submitted.as_ref().err().map(|e| format!("{e:#}"));
    let run_id = run.run_id.clone();
    let updated = optimistic(|| {
        let (job, failure, run_id) = (job.clone(), failure.clone(), run_id.clone());
        async move {
            let (mut run, at) = state
                .repo
                .run(t, &run_id)
                .await?
                .ok_or(CreateError::NotFound("training run"))?;
            if run.status.is_finished() {
                return Ok(run);
            }
            run.job = job;
            if let Some(reason) = failure {
                run.status = RunStatus::Failed;
                run.reason = Some(format!("the job could not be submitted: {reason}"));
                run.finished_at_ms = Some(now_ms());
            }
            state
                .repo
                .update_run(t, &run, at)
                .await
                .map_err(|e| lost_race(e, CreateError::Contended))?;
            Ok::<_, CreateError>(run)
        }
    })
    .await?;
    match failure {
        Some(reason) => {
            state.metrics.count("training_runs_failed", 1);
            Err(CreateError::Launch(reason))
        }
        None => Ok(updated),
    }
}

/// The base model's object prefix: a shared model under `models/`, or a version's weights.
async fn base_of(
    state: &TrainingState,
    t: &TenantId,
    agent: &AgentRecord,
    asked: Option<BaseRef>,
) -> Result<(BaseRef, String), CreateError> {
    let base = match asked {
        Some(base) => base,
        None => match (&agent.deployed_version, &agent.base_model) {
            (Some(v), _) => BaseRef::Version(v.clone()),
            (None, Some(m)) => BaseRef::Model(m.clone()),
            (None, None) => {
                return Err(FieldError::new(
                    "base_model",
                    "required: the agent has no deployed version and no base model",
                )
                .into());
            }
        },
    };
    let prefix = match &base {
        BaseRef::Model(name) => format!("{}{name}/", crate::MODELS_PREFIX),
        BaseRef::Version(v) => {
            let version = state
                .repo
                .version(t, &agent.agent_id, v)
                .await?
                .ok_or(CreateError::NotFound("model version"))?;
            version.model_prefix.ok_or_else(|| {
                CreateError::NotTrainable(format!(
                    "version {v} is a LoRA adapter without merged weights: train it with \
                     \"merge_lora\": true to start runs from it"
                ))
            })?
        }
    };
    Ok((base, prefix))
}

/// Where the launcher runs a run of `config` on the base model under `prefix`: the config
/// checked as the trainer checks it, the base model's `config.json` read as the trainer reads
/// it, and the run planned — what the trainer would refuse is refused before a job exists.
async fn placement(
    state: &TrainingState,
    base: &BaseRef,
    prefix: &str,
    config: &Value,
) -> Result<Option<Placement>, CreateError> {
    let config = TrainConfig::from_value(config, "config")?;
    let model = architecture(state, base, prefix).await?;
    state
        .launcher
        .place(&model, &config)
        .map_err(|e| FieldError::new("config", e.to_string()).into())
}

/// The base model's architecture, from the `config.json` under `prefix`.
async fn architecture(
    state: &TrainingState,
    base: &BaseRef,
    prefix: &str,
) -> Result<ModelConfig, CreateError> {
    let (field, missing) = match base {
        BaseRef::Model(_) => ("base_model", "base model"),
        BaseRef::Version(_) => ("base_version", "model version"),
    };
    let bytes = state
        .objects
        .get(&format!("{prefix}config.json"))
        .await?
        .ok_or(CreateError::NotFound(missing))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| e.to_string())
        .and_then(ModelConfig::from_json)
        .map_err(|e| FieldError::new(field, format!("its config.json: {e}")).into())
}

/// The reason a cancelled run's job is terminated with: the Batch job definitions' retry
/// strategies exit on a status reason starting `agentrl:` (a Spot reclaim's SIGTERM is
/// retried, a cancel's is not).
pub(crate) const CANCEL_REASON: &str = "agentrl: cancelled on request";

/// A run with what its output says about its progress so far.
pub(crate) struct RunProgress {
    pub run: RunRecord,
    /// The last line of its `metrics.jsonl`.
    pub latest: Option<Value>,
    /// GRPO steps the config asks for.
    pub steps_total: Option<u64>,
    /// Dollars so far, from the instance's price and the time it ran.
    pub cost_estimate_usd: Option<f64>,
}

/// Reads a run with its progress.
pub(crate) async fn read(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
) -> Result<RunProgress, ReadError> {
    let (run, _) = state.repo.run(t, id).await?.ok_or(ReadError::NotFound)?;
    Ok(with_progress(state, run).await?)
}

/// `run` with its progress from its output's `metrics.jsonl`.
pub(crate) async fn with_progress(
    state: &TrainingState,
    run: RunRecord,
) -> Result<RunProgress, StoreError> {
    let metrics = state
        .objects
        .get(&format!("{}metrics.jsonl", run.output_prefix))
        .await?;
    let latest = metrics.and_then(|bytes| {
        bytes
            .split(|&b| b == b'\n')
            .rev()
            .find(|line| !line.is_empty())
            .and_then(|line| serde_json::from_slice(line).ok())
    });
    Ok(RunProgress {
        latest,
        ..summary(run)
    })
}

/// Why a run's log is not shown.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogError {
    #[error("no such training run")]
    NotFound,
    /// The run's job ran on another launcher than this process's (its log is not here).
    #[error("the run's job ran on the {0} launcher, which this deployment does not use")]
    OtherLauncher(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("its log could not be read: {0}")]
    Launcher(anyhow::Error),
}

/// The last `lines` lines of run `id`'s job log, or where it is kept.
pub(crate) async fn log_tail(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
    lines: usize,
) -> Result<LogTail, LogError> {
    let (run, _) = state.repo.run(t, id).await?.ok_or(LogError::NotFound)?;
    let Some(job) = run.job else {
        return Ok(LogTail::Lines(Vec::new()));
    };
    if job.launcher != state.launcher.name() {
        return Err(LogError::OtherLauncher(job.launcher));
    }
    state
        .launcher
        .log_tail(&job.job_id, lines)
        .await
        .map_err(LogError::Launcher)
}

/// The lines of `id`'s `metrics.jsonl` a curve of at most `max_points` draws (see
/// [`curve_lines`]), each as the trainer wrote it with its position added as `line`; and how
/// many lines there are.
pub(crate) async fn metric_lines(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
    max_points: usize,
) -> Result<(usize, Vec<Box<RawValue>>), ReadError> {
    let (run, _) = state.repo.run(t, id).await?.ok_or(ReadError::NotFound)?;
    let bytes = state
        .objects
        .get(&format!("{}metrics.jsonl", run.output_prefix))
        .await?
        .unwrap_or_default();
    // A line being written when the file was mirrored does not parse: it is left out.
    let lines: Vec<(&str, bool)> = bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let object: serde_json::Map<String, Value> = serde_json::from_slice(line).ok()?;
            Some((
                std::str::from_utf8(line).ok()?.trim(),
                object.contains_key("eval_success"),
            ))
        })
        .collect();
    let is_eval: Vec<bool> = lines.iter().map(|(_, eval)| *eval).collect();
    let points = curve_lines(&is_eval, max_points)
        .into_iter()
        .map(|i| with_line(lines[i].0, i))
        .collect();
    Ok((lines.len(), points))
}

/// The JSON object `object` (as text) with `"line": i` first, its other members untouched.
fn with_line(object: &str, i: usize) -> Box<RawValue> {
    let members = object[1..].trim_start();
    let text = if members.starts_with('}') {
        format!("{{\"line\":{i}}}")
    } else {
        format!("{{\"line\":{i},{members}")
    };
    RawValue::from_string(text).expect("an object with one more member is an object")
}

/// `run` with what its record alone says (a listing reads no run's output).
pub(crate) fn summary(run: RunRecord) -> RunProgress {
    let steps_total = TrainConfig::from_value(&run.config, "config")
        .ok()
        .map(|c| c.grpo.steps);
    let cost_estimate_usd = match (&run.job, run.started_at_ms) {
        (Some(job), Some(started)) => {
            let end = run.finished_at_ms.unwrap_or_else(now_ms);
            cost_estimate(
                &job.instance_type,
                end.saturating_sub(started) as f64 / 1000.0,
            )
        }
        _ => None,
    };
    RunProgress {
        run,
        latest: None,
        steps_total,
        cost_estimate_usd,
    }
}

/// A page of runs, newest first, of one agent or of the tenant.
pub(crate) async fn list(
    state: &TrainingState,
    t: &TenantId,
    agent: Option<&str>,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<RunRecord>, Option<String>), StoreError> {
    let (ids, next) = state.repo.run_ids(t, agent, limit, cursor).await?;
    Ok((state.repo.runs(t, &ids).await?, next))
}

/// Cancels an unfinished run and stops its job.
pub(crate) async fn cancel(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
) -> Result<RunRecord, CancelError> {
    let run = optimistic(|| async move {
        let (mut run, at) = state.repo.run(t, id).await?.ok_or(CancelError::NotFound)?;
        run.status = run
            .status
            .transition(RunStatus::Cancelled)
            .map_err(|e| CancelError::Finished(e.from))?;
        run.reason = Some("cancelled on request".into());
        run.finished_at_ms = Some(now_ms());
        state
            .repo
            .update_run(t, &run, at)
            .await
            .map_err(|e| lost_race(e, CancelError::Contended))?;
        Ok::<_, CancelError>(run)
    })
    .await?;
    if let Some(job) = &run.job
        && let Err(e) = state.launcher.cancel(&job.job_id, CANCEL_REASON).await
    {
        tracing::warn!(run = %run.run_id, error = %format!("{e:#}"), "the job could not be stopped");
    }
    Ok(run)
}

/// Why a job's state was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum JobStateError {
    /// The run changed concurrently every time.
    #[error("the run is being changed concurrently")]
    Contended,
    /// The run's report could not be read.
    #[error("the run's report: {0}")]
    Report(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Contended for JobStateError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

/// Records what a job reported. Returns false when the run is unknown or already finished
/// (a late or repeated report changes nothing). A success registers the model version from
/// the run's `run.json`; a success without one fails the run.
///
/// # Errors
/// A failing store, or a run whose version kept changing.
pub async fn job_state(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
    reported: JobState,
) -> Result<bool, JobStateError> {
    let Some((run, _)) = state.repo.run(t, id).await? else {
        tracing::warn!(run = %id, "a job reported on an unknown run");
        return Ok(false);
    };
    if run.status.is_finished() {
        return Ok(false);
    }
    let reported = match reported {
        JobState::Succeeded => match versions::register(state, t, &run).await? {
            RegisterOutcome::Registered(v, evaluation) => {
                tracing::info!(run = %id, version = %v, "model version registered");
                state.metrics.count("training_runs_succeeded", 1);
                if let Some(e) = evaluation {
                    state.metrics.record("validation_reward", e.reward, "None");
                }
                return Ok(true);
            }
            RegisterOutcome::AlreadyFinished => return Ok(false),
            RegisterOutcome::NoReport(reason) => JobState::Failed(reason),
        },
        other => other,
    };
    let changed = optimistic(|| {
        let reported = reported.clone();
        async move {
            let Some((mut run, at)) = state.repo.run(t, id).await? else {
                return Ok(false);
            };
            // A success was turned into a registration or a failure above.
            let to = match &reported {
                JobState::Running => RunStatus::Running,
                JobState::Failed(_) | JobState::Succeeded => RunStatus::Failed,
            };
            let Ok(status) = run.status.transition(to) else {
                return Ok(false);
            };
            run.status = status;
            let now = now_ms();
            match reported {
                JobState::Running => {
                    run.started_at_ms.get_or_insert(now);
                }
                JobState::Failed(reason) => {
                    run.reason = Some(reason);
                    run.finished_at_ms = Some(now);
                    run.started_at_ms.get_or_insert(now);
                }
                JobState::Succeeded => {}
            }
            state
                .repo
                .update_run(t, &run, at)
                .await
                .map_err(|e| lost_race(e, JobStateError::Contended))?;
            Ok::<_, JobStateError>(true)
        }
    })
    .await?;
    if changed && let JobState::Failed(reason) = &reported {
        tracing::warn!(run = %id, reason, "training run failed");
        state.metrics.count("training_runs_failed", 1);
    }
    Ok(changed)
}

/// Starts a run for every active agent of the dataset's tenant that trains on ready datasets
/// (`auto_train`) and that the dataset selected. Returns the runs created or found.
///
/// # Errors
/// A failing store, or a manifest that is not JSON.
pub(crate) async fn on_dataset_ready(
    state: &TrainingState,
    event: &DatasetReady,
) -> anyhow::Result<Vec<String>> {
    let Some(t) = state.repo.partition_tenant(&event.tenant).await? else {
        tracing::info!(partition = %event.tenant, "a dataset of a tenant without registered agents: no run");
        return Ok(Vec::new());
    };
    let manifest = state
        .objects
        .get(&format!(
            "datasets/tenant={}/{}/manifest.json",
            event.tenant, event.dataset_id
        ))
        .await?
        .ok_or_else(|| anyhow::anyhow!("dataset {} has no manifest", event.dataset_id))?;
    let manifest: Manifest = serde_json::from_slice(&manifest)?;
    manifest.check_version().map_err(anyhow::Error::msg)?;
    let selected: std::collections::HashSet<&str> = manifest
        .agents
        .iter()
        .filter(|a| a.selected)
        .map(|a| a.agent_id.as_str())
        .collect();
    let mut runs = Vec::new();
    let mut cursor = None;
    loop {
        let (agents, next) = state.repo.agents(&t, 100, cursor).await?;
        for agent in agents {
            let Some(config) = agent.auto_train.clone() else {
                continue;
            };
            if !agent.active || !selected.contains(agent.agent_id.as_str()) {
                continue;
            }
            let new = NewRun {
                agent_id: agent.agent_id.clone(),
                dataset_id: event.dataset_id.clone(),
                base: None,
                config,
            };
            match create(state, &t, new, "dataset.ready").await {
                Ok((run, _)) => runs.push(run.run_id),
                // What a retry cannot cure (no base model, a bad config) is logged, not retried.
                Err(
                    e @ (CreateError::Invalid(_)
                    | CreateError::NotFound(_)
                    | CreateError::NotTrainable(_)),
                ) => {
                    tracing::warn!(agent = %agent.agent_id, error = %e, "no run for a ready dataset");
                }
                Err(e) => return Err(anyhow::anyhow!("{e}")),
            }
        }
        match next {
            Some(n) => cursor = Some(n),
            None => return Ok(runs),
        }
    }
}

/// Submits again every unfinished run the previous process of a local launcher left
/// (the trainer resumes from its newest checkpoint in the same output); returns how many.
///
/// # Errors
/// A failing store.
pub(crate) async fn resume_unfinished(state: &TrainingState) -> Result<usize, CreateError> {
    let mut resumed = 0;
    for (t, id) in state.repo.active_runs().await? {
        let Some((run, _)) = state.repo.run(&t, &id).await? else {
            continue;
        };
        if run.status.is_finished() {
            continue;
        }
        let placement = placement(state, &run.base, &run.base_prefix, &run.config).await?;
        submit(state, &t, run, placement).await?;
        resumed += 1;
    }
    Ok(resumed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_line_keeps_its_text_and_gains_its_position() {
        assert_eq!(
            with_line(r#"{"loss": 0.09090909090909091, "phase":"sft"}"#, 7).get(),
            r#"{"line":7,"loss": 0.09090909090909091, "phase":"sft"}"#
        );
        assert_eq!(with_line("{ }", 0).get(), r#"{"line":0}"#);
    }
}
