//! `POST /v1/attributions/sessions/{id}/values`: measured values in, next proposals out.
//!
//! Read the session → submit → propose → save at the version read (with the final
//! attribution, in the same transaction, when the session finishes). A lost race re-reads
//! and resubmits: values already on record are accepted again, so a retry is harmless.

use agentrl_core::{
    TenantId,
    attribution::{Coalition, InteractiveShapley, SessionStatus, SubmitError},
};
use agentrl_http::{ApiError, Problem, Tenant, ValidJson};
use agentrl_store::StoreError;
use axum::{
    Json,
    extract::{Path, State},
};

use super::{MAX_ATTEMPTS, back_off, now_ms, session::view};
use crate::{
    AttributionState,
    compute::{AttributionRecord, coalition, coalition_members, shape},
    repo::{AttributionRepo, SessionHead},
    wire::{MethodName, SessionValuesBody, SessionView, agent_index},
};

fn submit_error(agents: &[String], e: SubmitError) -> ApiError {
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
    ApiError::invalid("values", detail)
}

/// The session's final estimates as an attribution (method `monte_carlo`).
fn final_record(
    head: &SessionHead,
    session: &InteractiveShapley,
    now: u64,
) -> Result<AttributionRecord, ApiError> {
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

/// One attempt: Ok(None) when another request won the race.
async fn attempt(
    repo: &AttributionRepo,
    tenant: &TenantId,
    id: &str,
    body: &SessionValuesBody,
) -> Result<Option<SessionView>, ApiError> {
    let (mut head, version, mut session) = repo
        .session(tenant, id)
        .await?
        .ok_or_else(|| ApiError::not_found("session"))?;
    if session.progress().status != SessionStatus::Running {
        return Ok(Some(view(&head, &session, &[])));
    }
    let index = agent_index(&head.agents)?;
    let n = head.agents.len();
    let mut measurements: Vec<(Coalition, f64)> = Vec::with_capacity(body.values.len());
    for (k, v) in body.values.iter().enumerate() {
        let field = format!("values[{k}]");
        if !v.value.is_finite() {
            return Err(ApiError::invalid(
                format!("{field}.value"),
                "must be finite",
            ));
        }
        let members = coalition_members(&field, &index, &v.members)?;
        let c = coalition(&field, &members)?;
        if c.is_empty() {
            head.v_empty.get_or_insert(v.value);
        } else if c.len() == n {
            head.v_full.get_or_insert(v.value);
        }
        measurements.push((c, v.value));
    }
    session
        .submit(&measurements)
        .map_err(|e| submit_error(&head.agents, e))?;
    if session.outstanding().is_empty() {
        session.propose();
    }
    let now = now_ms();
    head.updated_at_ms = now;
    let done = session.progress().status != SessionStatus::Running;
    let extra = if done {
        let record = final_record(&head, &session, now)?;
        repo.final_attribution_writes(tenant, &record).await?
    } else {
        Vec::new()
    };
    match repo
        .save_session(tenant, &head, Some(version), &session, extra)
        .await
    {
        Ok(()) => Ok(Some(view(&head, &session, &session.outstanding()))),
        Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Post measured values of proposed coalitions.
///
/// The answer's `proposals` are every coalition still to measure: the unanswered ones of the
/// last batch, or a new batch once all were answered (empty when done). Values may arrive in
/// any order and in several posts; a value already on record may be sent again, a different
/// one is refused. When the stopping rule or the cap is reached the session is done and its
/// estimates become the task's attribution (`GET /v1/attributions/{task_id}`). Posting to a
/// finished session returns it unchanged.
#[utoipa::path(post, path = "/v1/attributions/sessions/{id}/values", tag = "attribution",
    params(("id" = String, Path, description = "The session id")),
    request_body = SessionValuesBody,
    responses(
        (status = 200, description = "The next proposals and the progress", body = SessionView),
        (status = 400, description = "A value not finite, a coalition not proposed, or conflicting", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such session for this tenant", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Too many concurrent posts; retry", body = Problem, content_type = "application/problem+json"),
    ))]
#[tracing::instrument(skip_all, fields(session_id = %id))]
pub(crate) async fn post_values(
    State(state): State<AttributionState>,
    Tenant(tenant): Tenant,
    Path(id): Path<String>,
    ValidJson(body): ValidJson<SessionValuesBody>,
) -> Result<Json<SessionView>, ApiError> {
    for n in 0..MAX_ATTEMPTS {
        if let Some(view) = attempt(&state.repo, &tenant, &id, &body).await? {
            return Ok(Json(view));
        }
        back_off(n).await;
    }
    Err(ApiError::conflict(
        "too many concurrent posts to this session; retry",
    ))
}
