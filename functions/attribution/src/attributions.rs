//! The attribution use cases other than sessions: compute and store a task's attribution,
//! read it, page through the history, record a contribution, rank agents and summarise how
//! each shaping strategy paid out. The rules are `agentrl_core::attribution`'s; the routes
//! parse and present.

use std::collections::{BTreeMap, BTreeSet};

use agentrl_core::{
    FieldError, TenantId,
    attribution::{AgentAggregate, Contribution, ContributionTracker, RankBy, RecordError, Window},
};
use agentrl_store::{StoreError, clock::now_ms};

use crate::{
    compute::{AttributionRecord, Job},
    repo::{AttributionRepo, ContributionEntry},
};

/// Why an attribution operation did not happen (the operations fail in the same few ways).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttributionError {
    #[error("no such attribution")]
    NotFound,
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// The computation's worker thread died, or the stored history is inconsistent.
    #[error(transparent)]
    Internal(Box<dyn std::error::Error + Send + Sync>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A contribution to score and record, as parsed from the request.
pub(crate) struct NewContribution {
    pub agent_id: String,
    pub task_id: String,
    pub quality_before: f64,
    pub quality_after: f64,
    pub effort_ratio: f64,
    pub impact_multiplier: f64,
    /// When it happened (epoch ms); now when absent.
    pub timestamp_ms: Option<u64>,
}

/// Computes the attribution of `job` off the async workers and stores it, replacing any
/// earlier attribution of the task.
pub(crate) async fn compute(
    repo: &AttributionRepo,
    tenant: &TenantId,
    job: Job,
) -> Result<AttributionRecord, AttributionError> {
    let created_at_ms = now_ms();
    let record = tokio::task::spawn_blocking(move || job.run(created_at_ms))
        .await
        .map_err(|e| AttributionError::Internal(e.into()))??;
    repo.put_attribution(tenant, &record).await?;
    Ok(record)
}

/// The task's attribution.
pub(crate) async fn read(
    repo: &AttributionRepo,
    tenant: &TenantId,
    task_id: &str,
) -> Result<AttributionRecord, AttributionError> {
    let (record, _) = repo
        .attribution(tenant, task_id)
        .await?
        .ok_or(AttributionError::NotFound)?;
    Ok(record)
}

/// One page of the history in `window`, oldest first, and the next cursor.
///
/// # Errors
/// [`StoreError::Invalid`] for a cursor the store cannot use.
pub(crate) async fn history(
    repo: &AttributionRepo,
    tenant: &TenantId,
    window: (u64, u64),
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<AttributionRecord>, Option<String>), StoreError> {
    repo.history(tenant, window, limit, cursor).await
}

/// Calls `each` with every attribution of the window, oldest first, a page at a time.
pub(crate) async fn for_each_in(
    repo: &AttributionRepo,
    tenant: &TenantId,
    window: (u64, u64),
    mut each: impl FnMut(&AttributionRecord),
) -> Result<(), AttributionError> {
    let mut cursor = None;
    loop {
        let (records, next) = repo.history(tenant, window, 1_000, cursor).await?;
        records.iter().for_each(&mut each);
        match next {
            Some(n) => cursor = Some(n),
            None => return Ok(()),
        }
    }
}

/// Scores a contribution (the domain validates it) and adds it to the tenant's history;
/// returns the entry and how many of the oldest entries the cap evicted.
pub(crate) async fn contribute(
    repo: &AttributionRepo,
    tenant: &TenantId,
    new: NewContribution,
) -> Result<(ContributionEntry, u64), AttributionError> {
    let timestamp_ms = new.timestamp_ms.unwrap_or_else(now_ms);
    let score = ContributionTracker::default()
        .record(Contribution {
            agent: 0,
            timestamp_ms,
            quality_before: new.quality_before,
            quality_after: new.quality_after,
            impact_multiplier: new.impact_multiplier,
            effort_ratio: new.effort_ratio,
        })
        .map_err(|e| match e {
            RecordError::NonFinite { field } | RecordError::Negative { field, .. } => {
                FieldError::new(field, e.to_string())
            }
            RecordError::ScoreOverflow => FieldError::new("effort_ratio", e.to_string()),
        })?;
    let entry = ContributionEntry {
        id: uuid::Uuid::now_v7().to_string(),
        agent_id: new.agent_id,
        task_id: new.task_id,
        quality_before: new.quality_before,
        quality_after: new.quality_after,
        effort_ratio: new.effort_ratio,
        impact_multiplier: new.impact_multiplier,
        timestamp_ms,
        score,
    };
    let evicted = repo.record_contribution(tenant, &entry).await?;
    Ok((entry, evicted))
}

/// The agents with contributions in `window`, best first by `by`, at most `limit`; ties
/// go to the smaller agent id.
pub(crate) async fn ranking(
    repo: &AttributionRepo,
    tenant: &TenantId,
    (from, to): (u64, u64),
    by: RankBy,
    limit: usize,
) -> Result<Vec<(String, AgentAggregate)>, AttributionError> {
    let window = Window::new(from, to).map_err(|e| FieldError::new("from", e.to_string()))?;
    let entries = repo.contributions(tenant, (from, to)).await?;
    // Agents are numbered in id order, so the domain's tie-break by index is by id.
    let ids: BTreeSet<&str> = entries.iter().map(|e| e.agent_id.as_str()).collect();
    let names: Vec<&str> = ids.into_iter().collect();
    let index: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    // The entries were validated when recorded: a failure here means corrupt history.
    let mut tracker = ContributionTracker::new(entries.len().max(1))
        .map_err(|e| AttributionError::Internal(e.into()))?;
    for e in &entries {
        tracker
            .record(Contribution {
                agent: index[e.agent_id.as_str()],
                timestamp_ms: e.timestamp_ms,
                quality_before: e.quality_before,
                quality_after: e.quality_after,
                impact_multiplier: e.impact_multiplier,
                effort_ratio: e.effort_ratio,
            })
            .map_err(|e| AttributionError::Internal(e.into()))?;
    }
    Ok(tracker
        .ranking(window, by)
        .into_iter()
        .take(limit)
        .map(|a| (names[a.agent].to_owned(), a))
        .collect())
}
