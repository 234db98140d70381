//! Request and response bodies, and their checks (each error names its field).

use agentrl_core::{
    FieldError,
    training::{Arm, ArmStats, Canary, Evaluation, GateDecision, RunStatus, config::TrainConfig},
    trajectory::check_id,
};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::{
    agents::{AgentPatch, NewAgent},
    repo::{AgentRecord, BaseRef, Deployment, JobRef, ModelRef, VersionRecord},
    runs::{NewRun, RunProgress},
    versions::Outcome,
};

const MAX_NAME: usize = 256;
/// Longest system prompt, in characters.
const MAX_PROMPT: usize = 64 * 1024;
/// Most outcomes one report carries.
pub(crate) const MAX_OUTCOMES: usize = 1_000;

fn check_text(field: &str, text: &str, max: usize) -> Result<(), FieldError> {
    let n = text.chars().count();
    if n == 0 || n > max || text.chars().any(char::is_control) {
        return Err(FieldError::new(
            field,
            format!("must be 1 to {max} characters without control characters"),
        ));
    }
    Ok(())
}

/// Counted in characters, as the document's `maxLength` counts.
fn check_prompt(prompt: &str) -> Result<(), FieldError> {
    if prompt.chars().count() > MAX_PROMPT {
        return Err(FieldError::new(
            "base_prompt",
            format!("at most {MAX_PROMPT} characters"),
        ));
    }
    Ok(())
}

fn check_model(model: &ModelRef) -> Result<(), FieldError> {
    check_text("model.provider", &model.provider, MAX_NAME)?;
    check_text("model.name", &model.name, MAX_NAME)
}

pub(crate) use agentrl_core::training::check_base_model;

/// A dataset id as the dataset job writes them (`2026-11-24-37d7a5748e2a`): it becomes a path
/// segment under the tenant's partition, so nothing that could leave it (`/`, `..`) passes.
fn check_dataset_id(id: &str) -> Result<(), FieldError> {
    let ok = (1..=128).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(FieldError::new(
            "dataset_id",
            "must be 1 to 128 characters of A-Z a-z 0-9 . _ - (not starting with .)",
        ))
    }
}

/// The trainer's config, checked as the trainer checks it (docs/training.md): an unknown key
/// or a value out of range names its path under `field`.
fn check_config(field: &str, config: &Value) -> Result<(), FieldError> {
    if !config.is_object() {
        return Err(FieldError::new(
            field,
            "must be a JSON object (the trainer's config)",
        ));
    }
    TrainConfig::from_value(config, field).map(drop)
}

/// `Some(None)` for an explicit null, `None` for an absent field.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

fn default_true() -> bool {
    true
}

/// `POST /v1/agents`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateAgentBody {
    /// The id the agent's trajectories and events carry; a UUIDv7 is assigned when absent.
    #[schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$")]
    agent_id: Option<String>,
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
    )]
    name: String,
    /// What kind of agent (`coding`, `support`, …).
    #[serde(rename = "type")]
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
    )]
    agent_type: String,
    model: ModelRef,
    /// Its system prompt.
    #[serde(default)]
    #[schema(max_length = 65_536)]
    base_prompt: String,
    /// A shared base model under `models/` that runs start from until a version is deployed.
    #[schema(
        max_length = 200,
        pattern = r"^([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)(/([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+))*$"
    )]
    base_model: Option<String>,
    /// The trainer config of the runs a ready dataset starts for this agent; absent: datasets
    /// start no runs for it.
    #[schema(value_type = Option<Object>)]
    auto_train: Option<Value>,
    #[serde(default = "default_true")]
    active: bool,
}

impl TryFrom<CreateAgentBody> for NewAgent {
    type Error = FieldError;

    fn try_from(b: CreateAgentBody) -> Result<Self, FieldError> {
        if let Some(id) = &b.agent_id {
            check_id("agent_id", id)?;
        }
        check_text("name", &b.name, MAX_NAME)?;
        check_text("type", &b.agent_type, MAX_NAME)?;
        check_model(&b.model)?;
        check_prompt(&b.base_prompt)?;
        if let Some(m) = &b.base_model {
            check_base_model("base_model", m)?;
        }
        if let Some(c) = &b.auto_train {
            check_config("auto_train", c)?;
        }
        Ok(Self {
            agent_id: b.agent_id,
            name: b.name,
            agent_type: b.agent_type,
            model: b.model,
            base_prompt: b.base_prompt,
            base_model: b.base_model,
            auto_train: b.auto_train,
            active: b.active,
        })
    }
}

/// `PATCH /v1/agents/{id}` (JSON merge patch: absent fields stay, `null` clears an optional
/// one). The deployed version changes only through a promotion.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PatchAgentBody {
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
    )]
    name: Option<String>,
    #[serde(rename = "type")]
    #[schema(
        min_length = 1,
        max_length = 256,
        pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"
    )]
    agent_type: Option<String>,
    model: Option<ModelRef>,
    #[schema(max_length = 65_536)]
    base_prompt: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, max_length = 200, pattern = r"^([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)(/([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+))*$")]
    base_model: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<Object>)]
    auto_train: Option<Option<Value>>,
    active: Option<bool>,
}

impl TryFrom<PatchAgentBody> for AgentPatch {
    type Error = FieldError;

    fn try_from(b: PatchAgentBody) -> Result<Self, FieldError> {
        if let Some(v) = &b.name {
            check_text("name", v, MAX_NAME)?;
        }
        if let Some(v) = &b.agent_type {
            check_text("type", v, MAX_NAME)?;
        }
        if let Some(m) = &b.model {
            check_model(m)?;
        }
        if let Some(p) = &b.base_prompt {
            check_prompt(p)?;
        }
        if let Some(Some(m)) = &b.base_model {
            check_base_model("base_model", m)?;
        }
        if let Some(Some(c)) = &b.auto_train {
            check_config("auto_train", c)?;
        }
        Ok(Self {
            name: b.name,
            agent_type: b.agent_type,
            model: b.model,
            base_prompt: b.base_prompt,
            base_model: b.base_model,
            auto_train: b.auto_train,
            active: b.active,
        })
    }
}

/// An agent.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AgentView {
    agent_id: String,
    name: String,
    #[serde(rename = "type")]
    agent_type: String,
    model: ModelRef,
    base_prompt: String,
    base_model: Option<String>,
    #[schema(value_type = Option<Object>)]
    auto_train: Option<Value>,
    /// The record's revision: incremented by every change.
    version: u64,
    active: bool,
    /// The model version serving its traffic (outside a canary's share).
    deployed_version: Option<String>,
    /// A version going out to part of its traffic.
    canary: Option<Canary>,
    /// Every version deployed to all traffic, oldest first.
    history: Vec<Deployment>,
    created_at_ms: u64,
    updated_at_ms: u64,
}

impl From<AgentRecord> for AgentView {
    fn from(a: AgentRecord) -> Self {
        Self {
            agent_id: a.agent_id,
            name: a.name,
            agent_type: a.agent_type,
            model: a.model,
            base_prompt: a.base_prompt,
            base_model: a.base_model,
            auto_train: a.auto_train,
            version: a.version,
            active: a.active,
            deployed_version: a.deployed_version,
            canary: a.canary,
            history: a.history,
            created_at_ms: a.created_at_ms,
            updated_at_ms: a.updated_at_ms,
        }
    }
}

/// A page of agents.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AgentPage {
    pub agents: Vec<AgentView>,
    pub next_cursor: Option<String>,
}

/// `POST /v1/training-runs`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateRunBody {
    #[schema(pattern = "^[A-Za-z0-9_.:@/-]{1,128}$")]
    agent_id: String,
    /// A dataset of this tenant (`dataset_id` of `training.dataset.ready` or of the manifest).
    #[schema(pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$")]
    dataset_id: String,
    /// Start from this shared base model under `models/`.
    #[schema(
        max_length = 200,
        pattern = r"^([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)(/([A-Za-z0-9_-][A-Za-z0-9._-]*|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+))*$"
    )]
    base_model: Option<String>,
    /// Or from this model version of the agent (not both: giving both is a 400 naming
    /// `base_version`); neither: the deployed version, else the agent's base model.
    #[schema(pattern = "^v[0-9]{1,19}$")]
    base_version: Option<String>,
    /// The trainer's config (docs/training.md); `{}` or absent: its defaults.
    #[schema(value_type = Option<Object>)]
    config: Option<Value>,
}

impl TryFrom<CreateRunBody> for NewRun {
    type Error = FieldError;

    fn try_from(b: CreateRunBody) -> Result<Self, FieldError> {
        check_id("agent_id", &b.agent_id)?;
        check_dataset_id(&b.dataset_id)?;
        let base = match (b.base_model, b.base_version) {
            (Some(_), Some(_)) => {
                return Err(FieldError::new(
                    "base_version",
                    "give base_model or base_version, not both",
                ));
            }
            (Some(m), None) => {
                check_base_model("base_model", &m)?;
                Some(BaseRef::Model(m))
            }
            (None, Some(v)) => {
                if crate::repo::version_number(&v).is_none() {
                    return Err(FieldError::new(
                        "base_version",
                        "must be a version id such as v3",
                    ));
                }
                Some(BaseRef::Version(v))
            }
            (None, None) => None,
        };
        let config = b
            .config
            .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        check_config("config", &config)?;
        Ok(Self {
            agent_id: b.agent_id,
            dataset_id: b.dataset_id,
            base,
            config,
        })
    }
}

/// What a run starts from.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BaseView {
    /// `model` (a shared base model) or `version` (one of the agent's).
    kind: &'static str,
    name: String,
}

impl From<BaseRef> for BaseView {
    fn from(base: BaseRef) -> Self {
        match base {
            BaseRef::Model(name) => Self {
                kind: "model",
                name,
            },
            BaseRef::Version(name) => Self {
                kind: "version",
                name,
            },
        }
    }
}

/// How far a run is.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RunProgress)]
pub(crate) struct ProgressView {
    /// `sft` or `grpo`, from the latest metrics line.
    phase: Option<String>,
    /// The step of that phase.
    step: Option<u64>,
    /// GRPO steps the config asks for.
    steps_total: Option<u64>,
    /// 0 to 1 (1 once succeeded).
    fraction: f64,
}

/// Where a run's files are.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ArtifactsView {
    /// Object prefix of everything it writes (`run.json`, `metrics.jsonl`, weights, plots).
    output: String,
    /// Object prefix of the dataset it trains on.
    dataset: String,
    /// Object prefix of the base model's files.
    base_model: String,
}

/// The job executing a run.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct JobView {
    /// `batch` or `local`.
    launcher: String,
    job_id: String,
    instance_type: String,
    /// The GPU class (job queue) its memory plan chose on AWS Batch: the first, smallest
    /// GPU first, that holds the plan's peak.
    gpu_class: Option<String>,
    /// The plan's peak GPU memory on that class, GiB (`agentrl train plan`'s `peak_gb`).
    planned_peak_gb: Option<f64>,
}

/// A training run.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RunView {
    run_id: String,
    agent_id: String,
    dataset_id: String,
    base: BaseView,
    #[schema(value_type = Object)]
    config: Value,
    status: RunStatus,
    /// Why it failed or was cancelled.
    reason: Option<String>,
    progress: ProgressView,
    /// The latest line of its `metrics.jsonl` (loss, reward, KL, …).
    #[schema(value_type = Option<Object>)]
    metrics: Option<Value>,
    artifacts: ArtifactsView,
    job: Option<JobView>,
    /// USD, from the instance type's hourly price and the time it ran (an estimate).
    cost_estimate_usd: Option<f64>,
    /// `request` or `dataset.ready`.
    trigger: String,
    /// The model version it registered.
    model_version: Option<String>,
    created_at_ms: u64,
    started_at_ms: Option<u64>,
    finished_at_ms: Option<u64>,
}

impl From<RunProgress> for RunView {
    fn from(p: RunProgress) -> Self {
        let r = p.run;
        let phase = p
            .latest
            .as_ref()
            .and_then(|m| m.get("phase"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let step = p
            .latest
            .as_ref()
            .and_then(|m| m.get("step"))
            .and_then(Value::as_u64);
        let fraction = match (r.status, phase.as_deref(), step, p.steps_total) {
            (RunStatus::Succeeded, ..) => 1.0,
            (_, Some("grpo"), Some(s), Some(total)) if total > 0 => {
                (s as f64 / total as f64).min(1.0)
            }
            _ => 0.0,
        };
        Self {
            run_id: r.run_id,
            agent_id: r.agent_id,
            dataset_id: r.dataset_id,
            base: r.base.into(),
            config: r.config,
            status: r.status,
            reason: r.reason,
            progress: ProgressView {
                phase,
                step,
                steps_total: p.steps_total,
                fraction,
            },
            metrics: p.latest,
            artifacts: ArtifactsView {
                output: r.output_prefix,
                dataset: r.dataset_prefix,
                base_model: r.base_prefix,
            },
            job: r.job.map(|j: JobRef| JobView {
                launcher: j.launcher,
                job_id: j.job_id,
                instance_type: j.instance_type,
                gpu_class: j.gpu_class,
                planned_peak_gb: j.planned_peak_gb,
            }),
            cost_estimate_usd: p.cost_estimate_usd,
            trigger: r.trigger,
            model_version: r.model_version,
            created_at_ms: r.created_at_ms,
            started_at_ms: r.started_at_ms,
            finished_at_ms: r.finished_at_ms,
        }
    }
}

/// A page of runs, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RunPage {
    pub runs: Vec<RunView>,
    pub next_cursor: Option<String>,
}

/// The end of a run's job log.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LogTailView {
    pub run_id: String,
    /// Its last lines, oldest first (empty when the job has not written any, or when the log
    /// is kept elsewhere).
    pub lines: Vec<String>,
    /// Where the log is kept when this deployment does not read it (AWS Batch's CloudWatch
    /// Logs stream); null when `lines` is the log.
    pub location: Option<String>,
}

impl LogTailView {
    pub(crate) fn new(run_id: String, tail: crate::launch::LogTail) -> Self {
        let (lines, location) = match tail {
            crate::launch::LogTail::Lines(lines) => (lines, None),
            crate::launch::LogTail::Elsewhere(location) => (Vec::new(), Some(location)),
        };
        Self {
            run_id,
            lines,
            location,
        }
    }
}

/// A dataset as its manifest describes it (fields a manifest of an older schema lacks are
/// null).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DatasetSummary {
    pub dataset_id: Option<String>,
    pub schema_version: Option<u64>,
    /// Epoch ms.
    pub created_at_ms: Option<u64>,
    /// Rows and trajectories per split, examples, groups, preference pairs, duplicates removed.
    #[schema(value_type = Option<Object>)]
    pub counts: Option<Value>,
    /// SHA-256 over the files' hashes: the dataset's identity.
    pub content_hash: Option<String>,
    /// Bytes over every file.
    pub bytes: u64,
    /// Its files by name (`train`, `validation`, `sft`, …).
    pub files: Vec<String>,
}

impl DatasetSummary {
    pub(crate) fn of(manifest: &Value) -> Self {
        let files = manifest.get("files").and_then(Value::as_object);
        Self {
            dataset_id: manifest["dataset_id"].as_str().map(str::to_owned),
            schema_version: manifest["schema_version"].as_u64(),
            created_at_ms: manifest["created_at_ms"].as_u64(),
            counts: manifest.get("counts").cloned(),
            content_hash: manifest["content_hash"].as_str().map(str::to_owned),
            bytes: files
                .map(|f| f.values().filter_map(|file| file["bytes"].as_u64()).sum())
                .unwrap_or(0),
            files: files
                .map(|f| f.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }
}

/// A page of datasets, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DatasetPage {
    pub datasets: Vec<DatasetSummary>,
    /// Present while more may follow: pass it as `cursor`.
    pub next_cursor: Option<String>,
}

/// A run's curves: the lines of its `metrics.jsonl`, all of them or an even sample.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MetricSeriesView {
    pub run_id: String,
    /// Lines in `metrics.jsonl` so far.
    pub total: usize,
    /// Whether `points` is a sample (the run has more lines than `max_points`).
    pub downsampled: bool,
    /// The lines kept, in order, each with `line`, its 0-based position in the file: one per
    /// optimizer step (`phase`, `step`, `loss`, `reward_mean`, `reward_std`, `kl`,
    /// `clip_fraction`, `entropy`, `lr`, …) or per evaluation (`eval_success`, `eval_reward`).
    #[schema(value_type = Vec<Object>)]
    pub points: Vec<Box<serde_json::value::RawValue>>,
}

/// `POST /v1/training-runs/{id}/promote`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PromoteBody {
    /// Share of the agent's traffic, 0 to 100 (default 100: the deployed version; less: a
    /// canary).
    #[schema(minimum = 0, maximum = 100)]
    pub percent: Option<f64>,
}

/// What a promotion did.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PromoteView {
    pub agent_id: String,
    /// The version promoted.
    pub version: String,
    pub deployed_version: Option<String>,
    pub canary: Option<Canary>,
    /// The version had been deployed before: a rollback, not gated.
    pub rollback: bool,
    /// The gate's decision with every number compared.
    pub decision: GateDecision,
}

/// Which version serves a key.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RouteView {
    pub agent_id: String,
    pub key: String,
    /// `None` while no version is deployed or rolling out.
    pub version: Option<String>,
    pub arm: Arm,
    /// The key's bucket (0 to 9 999): the candidate serves buckets below percent × 100.
    pub bucket: u32,
}

/// One outcome of a request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutcomeBody {
    /// The version that served it (from the route).
    #[schema(pattern = "^v[0-9]{1,19}$")]
    version: String,
    /// Its reward, −1 to 1.
    #[schema(minimum = -1, maximum = 1)]
    reward: f64,
    #[serde(default)]
    safety_violation: bool,
    #[serde(default)]
    reward_hacking: bool,
}

/// `POST /v1/agents/{id}/outcomes`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutcomesBody {
    #[schema(min_items = 1, max_items = 1000)]
    outcomes: Vec<OutcomeBody>,
}

impl TryFrom<OutcomesBody> for Vec<Outcome> {
    type Error = FieldError;

    fn try_from(b: OutcomesBody) -> Result<Self, FieldError> {
        if b.outcomes.is_empty() || b.outcomes.len() > MAX_OUTCOMES {
            return Err(FieldError::new(
                "outcomes",
                format!("must hold 1 to {MAX_OUTCOMES} outcomes"),
            ));
        }
        b.outcomes
            .into_iter()
            .enumerate()
            .map(|(i, o)| {
                if crate::repo::version_number(&o.version).is_none() {
                    return Err(FieldError::new(
                        format!("outcomes[{i}].version"),
                        "must be a version id such as v3",
                    ));
                }
                if !(o.reward.is_finite() && (-1.0..=1.0).contains(&o.reward)) {
                    return Err(FieldError::new(
                        format!("outcomes[{i}].reward"),
                        "must be between -1 and 1",
                    ));
                }
                Ok(Outcome {
                    version: o.version,
                    reward: o.reward,
                    safety_violation: o.safety_violation,
                    reward_hacking: o.reward_hacking,
                })
            })
            .collect()
    }
}

/// A version's live statistics: what the agent platform reported of the requests it served.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct LiveView {
    pub stats: ArmStats,
    pub reward_mean: f64,
    pub safety_violation_rate: f64,
    pub reward_hacking_rate: f64,
}

impl From<ArmStats> for LiveView {
    fn from(stats: ArmStats) -> Self {
        Self {
            reward_mean: stats.reward_mean(),
            safety_violation_rate: stats.safety_violation_rate(),
            reward_hacking_rate: stats.reward_hacking_rate(),
            stats,
        }
    }
}

/// One version's live statistics.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ArmView {
    pub version: String,
    #[serde(flatten)]
    pub live: LiveView,
}

/// The statistics after a report.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OutcomesView {
    pub arms: Vec<ArmView>,
}

/// A model version.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct VersionView {
    version: String,
    agent_id: String,
    run_id: String,
    dataset_id: String,
    dataset_hash: Option<String>,
    base: BaseView,
    base_model_sha256: Option<String>,
    /// Object prefix of loadable weights (`None`: a LoRA adapter only).
    model_prefix: Option<String>,
    artifacts: Vec<String>,
    #[schema(value_type = Object)]
    metrics: Value,
    /// Its scores on its run's validation set.
    evaluation: Option<Evaluation>,
    /// The base model's scores on the same set.
    base_evaluation: Option<Evaluation>,
    created_at_ms: u64,
    /// Its live statistics as a canary or deployed arm (`None`: no outcome reported yet).
    live: Option<LiveView>,
}

impl VersionView {
    /// `v` with its arm's live statistics.
    pub(crate) fn new(v: VersionRecord, live: Option<ArmStats>) -> Self {
        Self {
            live: live.map(Into::into),
            version: v.version,
            agent_id: v.agent_id,
            run_id: v.run_id,
            dataset_id: v.dataset_id,
            dataset_hash: v.dataset_hash,
            base: v.base.into(),
            base_model_sha256: v.base_model_sha256,
            model_prefix: v.model_prefix,
            artifacts: v.artifacts,
            metrics: v.metrics,
            evaluation: v.evaluation,
            base_evaluation: v.base_evaluation,
            created_at_ms: v.created_at_ms,
        }
    }
}

/// A promotion the gate decided.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GateDecisionView {
    pub run_id: String,
    pub version: String,
    /// The share of traffic asked for (100: deploy; less: a canary).
    pub percent: f64,
    /// A version deployed before: promoted without the gate.
    pub rollback: bool,
    /// Passed: the version was promoted; refused: nothing changed.
    pub decision: GateDecision,
    /// Epoch ms.
    pub at_ms: u64,
}

impl From<crate::repo::GateRecord> for GateDecisionView {
    fn from(r: crate::repo::GateRecord) -> Self {
        Self {
            run_id: r.run_id,
            version: r.version,
            percent: r.percent,
            rollback: r.rollback,
            decision: r.decision,
            at_ms: r.at_ms,
        }
    }
}

/// A page of gate decisions, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GateDecisionPage {
    pub decisions: Vec<GateDecisionView>,
    pub next_cursor: Option<String>,
}

/// A page of versions, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct VersionPage {
    pub versions: Vec<VersionView>,
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use agentrl_core::training::MAX_BASE_MODEL;
    use agentrl_core::trajectory::Limits;
    use utoipa::OpenApi;

    use super::*;

    /// The document's schema of `field` in the component `schema`.
    fn property(schema: &str, field: &str) -> Value {
        let doc = serde_json::to_value(crate::TrainingApi::openapi()).unwrap();
        doc["components"]["schemas"][schema]["properties"][field].clone()
    }

    /// Whether `text` is valid by a string schema's pattern and lengths (in characters).
    fn valid(schema: &Value, text: &str) -> bool {
        let chars = text.chars().count() as u64;
        let pattern = regex::Regex::new(schema["pattern"].as_str().unwrap()).unwrap();
        pattern.is_match(text)
            && schema["minLength"].as_u64().is_none_or(|min| chars >= min)
            && schema["maxLength"].as_u64().is_none_or(|max| chars <= max)
    }

    /// A string schema's rule: pattern and lengths.
    fn rule(schema: &str, field: &str) -> [Value; 3] {
        let p = property(schema, field);
        [&p["pattern"], &p["minLength"], &p["maxLength"]].map(Value::clone)
    }

    #[test]
    fn the_documents_limits_are_the_checks() {
        // Each copy of a rule is the one the next test compares with its check.
        let text = rule("CreateAgentBody", "name");
        assert_eq!(text[2], MAX_NAME);
        for (schema, field) in [
            ("CreateAgentBody", "type"),
            ("PatchAgentBody", "name"),
            ("PatchAgentBody", "type"),
            ("ModelRef", "provider"),
            ("ModelRef", "name"),
        ] {
            assert_eq!(rule(schema, field), text, "{schema}.{field}");
        }
        let base_model = rule("CreateRunBody", "base_model");
        assert_eq!(base_model[2], MAX_BASE_MODEL);
        for schema in ["CreateAgentBody", "PatchAgentBody"] {
            assert_eq!(rule(schema, "base_model"), base_model, "{schema}");
            assert_eq!(property(schema, "base_prompt")["maxLength"], MAX_PROMPT);
        }
        assert_eq!(
            rule("CreateAgentBody", "agent_id"),
            rule("CreateRunBody", "agent_id")
        );
        assert_eq!(
            rule("CreateRunBody", "base_version"),
            rule("OutcomeBody", "version")
        );
        assert_eq!(
            property("OutcomesBody", "outcomes")["maxItems"],
            MAX_OUTCOMES
        );
        let id = format!("^[A-Za-z0-9_.:@/-]{{1,{}}}$", Limits::MAX_ID_CHARS);
        assert_eq!(
            property("CreateRunBody", "agent_id")["pattern"],
            id.as_str()
        );
    }

    /// A property's schema, the server's check of it, and samples to try both on.
    type Case<'a> = (Value, &'a dyn Fn(&str) -> bool, Vec<String>);

    #[test]
    fn the_documents_patterns_accept_what_the_checks_accept() {
        let long = |n: usize| "x".repeat(n);
        let cases: [Case; 5] = [
            (
                property("CreateAgentBody", "name"),
                &|s| check_text("name", s, MAX_NAME).is_ok(),
                ["", "a", "é 名", "a\u{7f}", "\t", "a\u{9f}b", "\u{a0}", "\n"]
                    .map(String::from)
                    .into_iter()
                    .chain([long(MAX_NAME), long(MAX_NAME + 1)])
                    .collect(),
            ),
            (
                property("CreateRunBody", "base_model"),
                &|s| check_base_model("base_model", s).is_ok(),
                [
                    "qwen2.5-0.5b",
                    "org/m_1",
                    ".",
                    "..",
                    "...",
                    ".a",
                    "..a",
                    "a/.",
                    "a/..",
                    "./a",
                    "a//b",
                    "/a",
                    "a/",
                    "a b",
                    "é",
                    "",
                ]
                .map(String::from)
                .into_iter()
                .chain([long(MAX_BASE_MODEL), long(MAX_BASE_MODEL + 1)])
                .collect(),
            ),
            (
                property("CreateRunBody", "dataset_id"),
                &|s| check_dataset_id(s).is_ok(),
                [
                    "2026-11-24-37d7a5748e2a",
                    ".a",
                    "a.",
                    "_a",
                    "-",
                    "",
                    "a/b",
                    "a b",
                ]
                .map(String::from)
                .into_iter()
                .chain([long(128), long(129)])
                .collect(),
            ),
            (
                property("CreateRunBody", "agent_id"),
                &|s| check_id("agent_id", s).is_ok(),
                ["a", "a:b@c/d-e_f.g", "", "a b", "é", "a#b"]
                    .map(String::from)
                    .into_iter()
                    .chain([long(Limits::MAX_ID_CHARS), long(Limits::MAX_ID_CHARS + 1)])
                    .collect(),
            ),
            (
                property("OutcomeBody", "version"),
                &|s| crate::repo::version_number(s).is_some(),
                [
                    "v3", "v0", "v007", "v+3", "v-3", "v", "3", "V3", "v 3", "v3 ", "v٣",
                ]
                .map(String::from)
                .into_iter()
                .chain([
                    format!("v{}", "9".repeat(19)),
                    format!("v{}", "9".repeat(20)),
                ])
                .collect(),
            ),
        ];
        for (schema, check, samples) in cases {
            for s in samples {
                assert_eq!(valid(&schema, &s), check(&s), "{s:?} against {schema}");
            }
        }
    }
}
