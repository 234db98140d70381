//! The interactive-attribution use cases: start a session, read it, take measured values.
//!
//! Posting values reads the session, submits them, proposes the next batch and saves at the
//! version read (with the final attribution, in the same transaction, when the session
//! finishes). A lost race re-reads and resubmits: values already on record are accepted
//! again, so a retry is harmless.

use agentrl_core::{
    FieldError, TenantId,
    attribution::{Coalition, InteractiveConfig, InteractiveShapley, SessionStatus, SubmitError},
};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    retry::{Contended, optimistic},
};

use crate::{
    MIN_PERMUTATIONS,
    compute::{AttributionRecord, coalition, coalition_members, shape},
    model::{MethodName, Strategy},
    repo::{AttributionRepo, SessionHead},
    wire::{SamplingParams, agent_index},
};

/// A session to start, as parsed from the request.
pub(crate) struct NewSession {
    pub task_id: String,
    pub agents: Vec<String>,
    pub total_reward: f64,
    pub strategy: Strategy,
    pub sampling: SamplingParams,
    pub batch_size: usize,
}

/// The measured value of one coalition, named by its members' ids.
pub(crate) struct Measured {
    pub members: Vec<String>,
    pub value: f64,
}

/// A session as it stands, and the coalitions it asks to measure next.
pub(crate) struct Session {
    pub head: SessionHead,
    pub state: InteractiveShapley,
    pub proposals: Vec<Coalition>,
}

/// Why a session operation did not happen.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("no such session")]
    NotFound,
    #[error(transparent)]
    Invalid(#[from] FieldError),
    #[error("too many concurrent posts to this session")]
    Contended,
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for SessionError {
    fn from(e: StoreError) -> Self {
        if e.is_contended() {
            Self::Contended
        } else {
            Self::Store(e)
        }
    }
}

impl Contended for SessionError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

/// Starts a session and proposes its first batch.
pub(crate) async fn start(
    repo: &AttributionRepo,
    tenant: &TenantId,
    new: NewSession,
) -> Result<Session, SessionError> {
    let config = InteractiveConfig {
        seed: new.sampling.seed,
        target_error: new.sampling.target_error,
        min_permutations: MIN_PERMUTATIONS.min(new.sampling.max_permutations),
        max_permutations: new.sampling.max_permutations,
        batch_size: new.batch_size,
    };
    let mut state = InteractiveShapley::new(new.agents.len(), config)
        .map_err(|e| FieldError::new("agents", e.to_string()))?;
    state.propose();
    let now = now_ms();
    let head = SessionHead {
        session_id: uuid::Uuid::now_v7().to_string(),
        task_id: new.task_id,
        agents: new.agents,
        total_reward: new.total_reward,
        strategy: new.strategy,
        created_at_ms: now,
        updated_at_ms: now,
        v_empty: None,
        v_full: None,
        generation: 0,
        parts: 0,
    };
    repo.save_session(tenant, &head, None, &state, Vec::new())
        .await?;
    Ok(Session {
        proposals: state.outstanding(),
        head,
        state,
    })
}

/// A session of the tenant.
pub(crate) async fn read(
    repo: &AttributionRepo,
    tenant: &TenantId,
    id: &str,
) -> Result<Session, SessionError> {
    let (head, _, state) = repo
        .session(tenant, id)
        .await?
        .ok_or(SessionError::NotFound)?;
    Ok(Session {
        proposals: state.outstanding(),
        head,
        state,
    })
}

/// Takes measured values of proposed coalitions; answers with every coalition still to
/// measure (a new batch once all were answered; none when done). A finished session is
/// returned unchanged.
pub(crate) async fn post_values(
    repo: &AttributionRepo,
    tenant: &TenantId,
    id: &str,
    values: &[Measured],
) -> Result<Session, SessionError> {
    optimistic(move || async move {
        let (mut head, version, mut state) = repo
            .session(tenant, id)
            .await?
            .ok_or(SessionError::NotFound)?;
        if state.progress().status != SessionStatus::Running {
            return Ok(Session {
                head,
                state,
                proposals: Vec::new(),
            });
        }
        let measurements = measurements(&mut head, values)?;
        state
            .submit(&measurements)
            .map_err(|e| submit_error(&head.agents, e))?;
        if state.outstanding().is_empty() {
            state.propose();
        }
        let now = now_ms();
        head.updated_at_ms = now;
        let extra = if state.progress().status == SessionStatus::Running {
            Vec::new()
        } else {
            let record = final_record(&head, &state, now)?;
            repo.final_attribution_writes(tenant, &record).await?
        };
        repo.save_session(tenant, &head, Some(version), &state, extra)
            .await?;
        Ok(Session {
            proposals: state.outstanding(),
            head,
            state,
        })
    })
    .await
}

/// The values as coalitions over the session's agent indices; v(∅) and v(N), the first
/// time they are seen, go into the head (the final attribution's efficiency gap needs them).
fn measurements(
    head: &mut SessionHead,
    values: &[Measured],
) -> Result<Vec<(Coalition, f64)>, FieldError> {
    let index = agent_index(&head.agents)?;
    let n = head.agents.len();
    let mut out = Vec::with_capacity(values.len());
    for (k, v) in values.iter().enumerate() {
        let field = format!("values[{k}]");
        if !v.value.is_finite() {
            return Err(FieldError::new(format!("{field}.value"), "must be finite"));
        }
        let members = coalition_members(&field, &index, &v.members)?;
        let c = coalition(&field, &members)?;
        if c.is_empty() {
            head.v_empty.get_or_insert(v.value);
        } else if c.len() == n {
            head.v_full.get_or_insert(v.value);
        }
        out.push((c, v.value));
    }
    Ok(out)
}

fn submit_error(agents: &[String], e: SubmitError) -> FieldError {
    let names = |m: &[usize]| -> Vec<&str> { m.iter().map(|i| agents[*i].as_str()).collect() };
    let detail = match &e {
        SubmitError::NonFinite { members, .. } => {
            format!("the value of {:?} is not finite", names(members))
        }
        SubmitError::NotRequested { members } => {
            format!(
                "coalition {:?} was not proposed (or is no longer needed)",
                names(members)
            )
        }
        SubmitError::ConflictingValue {
            members,
            known,
            submitted,
        } => format!(
            "coalition {:?} already has value {known}, got {submitted}",
            names(members)
        ),
    };
    FieldError::new("values", detail)
}

/// The session's final estimates as an attribution (method `monte_carlo`).
fn final_record(
    head: &SessionHead,
    session: &InteractiveShapley,
    now: u64,
) -> Result<AttributionRecord, FieldError> {
    let p = session.progress();
    let n = head.agents.len();
    let grand = head.v_full.unwrap_or(0.0) - head.v_empty.unwrap_or(0.0);
    let (rewards, reward_stats) = shape(&p.estimates, head.total_reward, head.strategy)?;
    Ok(AttributionRecord {
        task_id: head.task_id.clone(),
        agents: head.agents.clone(),
        efficiency_gap: p.estimates.iter().sum::<f64>() - grand,
        contributions: p.estimates,
        std_errors: p.std_errors.unwrap_or_else(|| vec![0.0; n]),
        method: MethodName::MonteCarlo,
        permutations: Some(p.permutations_completed),
        target_reached: Some(p.status == SessionStatus::TargetReached),
        banzhaf: None,
        hoeffding_95: None,
        additive: false,
        total_reward: head.total_reward,
        rewards,
        strategy: head.strategy,
        reward_stats,
        computation_time_ms: now.saturating_sub(head.created_at_ms),
        created_at_ms: now,
    })
}
