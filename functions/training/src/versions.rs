//! Model versions: registered from a succeeded run's report, promoted through the evaluation
//! gate (all of the traffic, or a canary share first), and the live outcomes of each canary
//! arm.

use agentrl_core::{
    TenantId,
    training::{
        Arm, ArmStats, Canary, Evaluation, GateDecision, GateInputs, RunOutcome, RunReport,
        RunStatus, bucket, evaluate_gate,
    },
};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    retry::{Contended, optimistic},
};

use crate::{
    TrainingState,
    repo::{AgentRecord, BaseRef, GateRecord, RegisterError, RunRecord, VersionRecord, lost_race},
};

/// What registering a run's version did.
pub(crate) enum RegisterOutcome {
    /// The version id and its validation scores.
    Registered(String, Option<Evaluation>),
    /// The run had already finished (a repeated report).
    AlreadyFinished,
    /// The run wrote no usable `run.json`: the reason to fail it with.
    NoReport(String),
}

impl From<RegisterError> for crate::runs::JobStateError {
    fn from(e: RegisterError) -> Self {
        match e {
            RegisterError::Changed => Self::Contended,
            RegisterError::Store(e) => Self::Store(e),
        }
    }
}

/// Registers the model version of a run whose job succeeded: reads `run.json` and the file
/// list of its output, then writes the version, the run (`succeeded`) and the agent's next
/// version number in one transaction.
pub(crate) async fn register(
    state: &TrainingState,
    t: &TenantId,
    run: &RunRecord,
) -> Result<RegisterOutcome, crate::runs::JobStateError> {
    let out = &run.output_prefix;
    let Some(bytes) = state.objects.get(&format!("{out}run.json")).await? else {
        return Ok(RegisterOutcome::NoReport(
            "the job ended without writing run.json".into(),
        ));
    };
    let report: RunReport = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => return Ok(RegisterOutcome::NoReport(format!("run.json: {e}"))),
    };
    // The resumable checkpoints are the run's working state, not its product.
    let checkpoints = format!("{out}checkpoints/");
    let artifacts: Vec<String> = state
        .objects
        .list(out)
        .await?
        .into_iter()
        .map(|m| m.path)
        .filter(|p| !p.starts_with(&checkpoints))
        .collect();
    let has = |name: &str| artifacts.iter().any(|p| p == &format!("{out}{name}"));
    // Weights in one file or sharded (an index beside the shards), as transformers writes.
    let weights = |dir: &str| {
        has(&format!("{dir}model.safetensors"))
            || has(&format!("{dir}model.safetensors.index.json"))
    };
    let model_prefix = if weights("") && has("config.json") {
        Some(out.clone())
    } else if weights("merged/") {
        Some(format!("{out}merged/"))
    } else {
        None
    };
    let (before, after) = match report.outcome {
        RunOutcome::Dataset { validation, .. } => (validation.before, validation.after),
        RunOutcome::Prompts(_) | RunOutcome::Demo { .. } => (None, None),
    };
    let metrics = serde_json::to_value(&report.final_metrics).unwrap_or_default();
    let report = &(
        Some(report.base_model_sha256),
        Some(report.dataset_content_hash),
        metrics,
    );
    let (artifacts, model_prefix, before, after) = (&artifacts, &model_prefix, &before, &after);
    optimistic(|| async move {
        let Some((mut run, run_at)) = state.repo.run(t, &run.run_id).await? else {
            return Ok(RegisterOutcome::AlreadyFinished);
        };
        if run.status.is_finished() {
            return Ok(RegisterOutcome::AlreadyFinished);
        }
        let (mut agent, agent_at) = state.repo.agent(t, &run.agent_id).await?.ok_or_else(|| {
            StoreError::Backend(anyhow::anyhow!("run {} of a missing agent", run.run_id))
        })?;
        let version = format!("v{}", agent.next_version);
        let record = VersionRecord {
            version: version.clone(),
            agent_id: agent.agent_id.clone(),
            run_id: run.run_id.clone(),
            dataset_id: run.dataset_id.clone(),
            dataset_hash: report.1.clone(),
            base: run.base.clone(),
            base_model_sha256: report.0.clone(),
            model_prefix: model_prefix.clone(),
            artifacts: artifacts.clone(),
            metrics: report.2.clone(),
            evaluation: after.clone(),
            base_evaluation: before.clone(),
            created_at_ms: now_ms(),
        };
        let now = now_ms();
        run.status = RunStatus::Succeeded;
        run.model_version = Some(version.clone());
        run.finished_at_ms = Some(now);
        run.started_at_ms.get_or_insert(now);
        agent.next_version += 1;
        state
            .repo
            .register_version(t, &record, (&run, run_at), (&agent, agent_at))
            .await?;
        Ok(RegisterOutcome::Registered(version, after.clone()))
    })
    .await
}

/// Why a promotion did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PromoteError {
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("a {0} run has no model version to promote")]
    NotSucceeded(RunStatus),
    /// The gate refused, with its numbers.
    #[error("the evaluation gate refused the version: {}", .0.reasons.join("; "))]
    Refused(GateDecision),
    #[error(transparent)]
    Invalid(#[from] agentrl_core::FieldError),
    #[error("the agent is being changed concurrently")]
    Contended,
    /// The model server did not serve the version: nothing is routed to it.
    #[error("the model server does not serve {name}: {reason}")]
    NotServed { name: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Contended for PromoteError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

/// What a promotion did.
pub(crate) struct Promoted {
    pub agent: AgentRecord,
    pub version: String,
    pub decision: GateDecision,
    /// The version had been deployed before: a rollback, not gated.
    pub rollback: bool,
    /// The versions routed before.
    was_routed: Vec<String>,
}

/// Promotes the version of run `id` to `percent` of its agent's traffic: 100 makes it the
/// deployed version, less starts (or moves) a canary. A version deployed before is a rollback
/// and skips the gate; any other goes through it. With a model server, the version is served
/// before the agent routes to it (a refusal blocks the promotion), and the versions no longer
/// routed are retired after.
pub(crate) async fn promote(
    state: &TrainingState,
    t: &TenantId,
    id: &str,
    percent: f64,
) -> Result<Promoted, PromoteError> {
    Canary {
        version: String::new(),
        percent,
    }
    .validate()?;
    let (run, _) = state
        .repo
        .run(t, id)
        .await?
        .ok_or(PromoteError::NotFound("training run"))?;
    let (RunStatus::Succeeded, Some(version)) = (run.status, run.model_version.clone()) else {
        return Err(PromoteError::NotSucceeded(run.status));
    };
    let candidate = state
        .repo
        .version(t, &run.agent_id, &version)
        .await?
        .ok_or(PromoteError::NotFound("model version"))?;
    let gate = state.repo.gates().get(t).await?;
    let (candidate, version, gate, agent_id) = (&candidate, &version, &gate, &run.agent_id);
    let attempt = optimistic(|| async move {
        let (mut agent, at) = state
            .repo
            .agent(t, agent_id)
            .await?
            .ok_or(PromoteError::NotFound("agent"))?;
        let rollback = agent.history.iter().any(|d| &d.version == version);
        let decision = if rollback {
            GateDecision {
                passed: true,
                reasons: Vec::new(),
                checks: Vec::new(),
            }
        } else {
            decide(state, t, &agent, candidate, gate).await?
        };
        if !decision.passed {
            return Err(PromoteError::Refused(decision));
        }
        if let Some(server) = &state.server {
            let served = candidate.served();
            server
                .serve(t, &served)
                .await
                .map_err(|reason| PromoteError::NotServed {
                    name: served.name,
                    reason,
                })?;
        }
        let was_routed = crate::serving::routed(&agent);
        let now = now_ms();
        if percent >= 100.0 {
            if agent.deployed_version.as_deref() != Some(version.as_str()) {
                agent.history.push(crate::repo::Deployment {
                    version: version.clone(),
                    at_ms: now,
                });
            }
            agent.deployed_version = Some(version.clone());
            agent.canary = None;
        } else {
            agent.canary = Some(Canary {
                version: version.clone(),
                percent,
            });
        }
        agent.version += 1;
        agent.updated_at_ms = now;
        state
            .repo
            .put_agent(t, &agent, Some(at))
            .await
            .map_err(|e| lost_race(e, PromoteError::Contended))?;
        Ok(Promoted {
            agent,
            version: version.clone(),
            decision,
            rollback,
            was_routed,
        })
    })
    .await;
    record_gate(state, t, &run, version, percent, &attempt).await;
    let promoted = attempt?;
    if let Some(server) = &state.server {
        crate::serving::retire_unrouted(server.as_ref(), t, &promoted.was_routed, &promoted.agent)
            .await;
    }
    Ok(promoted)
}

/// Keeps the gate's decision of a promotion that was decided (promoted, or refused by the
/// gate), for `GET /v1/agents/{id}/gate-decisions`. The promotion's answer does not depend
/// on it: a failed write is logged.
async fn record_gate(
    state: &TrainingState,
    t: &TenantId,
    run: &RunRecord,
    version: &str,
    percent: f64,
    attempt: &Result<Promoted, PromoteError>,
) {
    let (decision, rollback) = match attempt {
        Ok(p) => (p.decision.clone(), p.rollback),
        Err(PromoteError::Refused(decision)) => (decision.clone(), false),
        Err(_) => return,
    };
    let record = GateRecord {
        agent_id: run.agent_id.clone(),
        run_id: run.run_id.clone(),
        version: version.to_owned(),
        percent,
        rollback,
        decision,
        at_ms: now_ms(),
    };
    if let Err(e) = state.repo.record_gate(t, &record).await {
        tracing::warn!(error = %e, run = %run.run_id, "a gate decision was not kept");
    }
}

/// The gate's decision on `candidate` against the model serving `agent` now.
async fn decide(
    state: &TrainingState,
    t: &TenantId,
    agent: &AgentRecord,
    candidate: &VersionRecord,
    gate: &agentrl_core::training::GateConfig,
) -> Result<GateDecision, StoreError> {
    let serving = match &candidate.evaluation {
        Some(e) => serving_scores(state, t, agent, candidate, &e.validation_set).await?,
        None => None,
    };
    let live = match (&agent.canary, &agent.deployed_version) {
        (Some(c), Some(d)) if c.version == candidate.version => {
            let stats = async |v: &str| -> Result<ArmStats, StoreError> {
                let arm = state.repo.arm(t, &agent.agent_id, v).await?;
                Ok(arm.map(|(s, _)| s).unwrap_or_default())
            };
            let candidate_arm = stats(&candidate.version).await?;
            let deployed_arm = stats(d).await?;
            Some((candidate_arm, deployed_arm))
        }
        _ => None,
    };
    Ok(evaluate_gate(
        GateInputs {
            candidate: candidate.evaluation.as_ref(),
            serving: serving.as_ref(),
            live: live.as_ref().map(|(c, d)| (c, d)),
        },
        gate,
    ))
}

/// The scores of the model serving `agent` now (its deployed version, else its base model)
/// on the validation set `set`. Every run scores its base model before training, so they are
/// the `base_evaluation` of a version trained from the serving model on that set — the
/// candidate itself, usually — or the deployed version's own scores on it.
async fn serving_scores(
    state: &TrainingState,
    t: &TenantId,
    agent: &AgentRecord,
    candidate: &VersionRecord,
    set: &str,
) -> Result<Option<Evaluation>, StoreError> {
    let serving = match (&agent.deployed_version, &agent.base_model) {
        (Some(v), _) => BaseRef::Version(v.clone()),
        (None, Some(m)) => BaseRef::Model(m.clone()),
        (None, None) => return Ok(None),
    };
    let on_set = |e: &Option<Evaluation>| e.clone().filter(|e| e.validation_set == set);
    if candidate.base == serving
        && let Some(e) = on_set(&candidate.base_evaluation)
    {
        return Ok(Some(e));
    }
    let (versions, _) = state.repo.versions(t, &agent.agent_id, 1000, None).await?;
    Ok(versions.iter().find_map(|v| match &serving {
        BaseRef::Version(d) if &v.version == d && on_set(&v.evaluation).is_some() => {
            on_set(&v.evaluation)
        }
        _ if v.base == serving => on_set(&v.base_evaluation),
        _ => None,
    }))
}

/// Which version serves a request.
pub(crate) struct Route {
    pub version: Option<String>,
    pub arm: Arm,
    pub bucket: u32,
}

/// The version that serves `key` for the agent: the canary's for the keys in its share, the
/// deployed one for the others.
pub(crate) fn route(t: &TenantId, agent: &AgentRecord, key: &str) -> Route {
    let b = bucket(t.as_str(), &agent.agent_id, key);
    match (&agent.canary, &agent.deployed_version) {
        (Some(c), _) if c.arm(b) == Arm::Candidate => Route {
            version: Some(c.version.clone()),
            arm: Arm::Candidate,
            bucket: b,
        },
        (_, deployed) => Route {
            version: deployed.clone(),
            arm: Arm::Deployed,
            bucket: b,
        },
    }
}

/// One outcome of a request served by a version.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub version: String,
    pub reward: f64,
    pub safety_violation: bool,
    pub reward_hacking: bool,
}

/// Why outcomes were not recorded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OutcomeError {
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("the version's outcomes are being changed concurrently")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Contended for OutcomeError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

/// Adds outcomes to their versions' live statistics; returns each version's statistics after.
pub(crate) async fn record_outcomes(
    state: &TrainingState,
    t: &TenantId,
    agent_id: &str,
    outcomes: &[Outcome],
) -> Result<Vec<(String, ArmStats)>, OutcomeError> {
    if state.repo.agent(t, agent_id).await?.is_none() {
        return Err(OutcomeError::NotFound("agent"));
    }
    let mut by_version: std::collections::BTreeMap<&str, Vec<&Outcome>> = Default::default();
    for o in outcomes {
        by_version.entry(o.version.as_str()).or_default().push(o);
    }
    let mut after = Vec::new();
    for (version, outcomes) in by_version {
        if state.repo.version(t, agent_id, version).await?.is_none() {
            return Err(OutcomeError::NotFound("model version"));
        }
        let outcomes = &outcomes;
        let stats = optimistic(|| async move {
            let (mut stats, at) = match state.repo.arm(t, agent_id, version).await? {
                Some((s, at)) => (s, Some(at)),
                None => (ArmStats::default(), None),
            };
            for o in outcomes {
                stats.outcomes += 1;
                stats.reward_sum += o.reward;
                stats.safety_violations += u64::from(o.safety_violation);
                stats.reward_hacking += u64::from(o.reward_hacking);
            }
            state
                .repo
                .put_arm(t, agent_id, version, &stats, at)
                .await
                .map_err(|e| lost_race(e, OutcomeError::Contended))?;
            Ok::<_, OutcomeError>(stats)
        })
        .await?;
        after.push((version.to_owned(), stats));
    }
    Ok(after)
}

/// One listed version and its arm's live statistics, if any were reported.
pub(crate) type ListedVersion = (VersionRecord, Option<ArmStats>);

/// A page of an agent's versions, newest first, each with its live statistics.
/// A page of an agent's gate decisions, newest first, refusals included.
pub(crate) async fn gate_decisions(
    state: &TrainingState,
    t: &TenantId,
    agent_id: &str,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<GateRecord>, Option<String>), crate::agents::AgentError> {
    if state.repo.agent(t, agent_id).await?.is_none() {
        return Err(crate::agents::AgentError::NotFound);
    }
    Ok(state
        .repo
        .gate_decisions(t, agent_id, limit, cursor)
        .await?)
}

pub(crate) async fn list(
    state: &TrainingState,
    t: &TenantId,
    agent_id: &str,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<ListedVersion>, Option<String>), crate::agents::AgentError> {
    if state.repo.agent(t, agent_id).await?.is_none() {
        return Err(crate::agents::AgentError::NotFound);
    }
    let (versions, next) = state.repo.versions(t, agent_id, limit, cursor).await?;
    let arms = futures::future::try_join_all(
        versions
            .iter()
            .map(|v| state.repo.arm(t, agent_id, &v.version)),
    )
    .await?;
    let listed = versions
        .into_iter()
        .zip(arms)
        .map(|(v, arm)| (v, arm.map(|(stats, _)| stats)))
        .collect();
    Ok((listed, next))
}
