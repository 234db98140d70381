//! The budget use cases, one function per operation: read what the decision needs, let the
//! domain decide (`agentrl_core::budget`), write the result under optimistic concurrency.
//! No HTTP here: each operation returns its own error, which the route maps to a status.

use agentrl_core::{
    TenantId,
    budget::{
        self, Budget, Completion, Decision, Outcome, Report, Status, TaskDescription, assess,
    },
    kpi::KpiCounts,
};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    retry::{Contended, optimistic},
};

use agentrl_http::kpis::KpiLedger;

use crate::repo::{BudgetRepo, SaveError, StoredReport};

/// A budget to open, as parsed from the request.
pub(crate) struct NewBudget {
    pub task_id: String,
    pub task: TaskDescription,
    /// Skip the assessment and use this tier.
    pub complexity: Option<budget::Complexity>,
}

/// A consumption report, as parsed from the request.
pub(crate) struct NewReport {
    /// Idempotency key: the same id counts once.
    pub report_id: String,
    /// Fingerprint of the request, to tell a retry from a reuse of the id.
    pub fingerprint: String,
    pub report: Report,
}

/// Why a budget could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("no such budget")]
    NotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a report was not applied.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The tenant has no such budget.
    #[error("no such budget")]
    NotFound,
    /// The budget is completed or handed to a human.
    #[error("the budget is {0:?} and takes no more reports")]
    Closed(Status),
    /// The report id was counted with another body.
    #[error("report_id was already used with a different body")]
    ReportReused,
    /// Other reports kept winning the budget.
    #[error("too many concurrent reports on this budget")]
    Contended,
    /// The table failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a budget could not be completed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompleteError {
    #[error("no such budget")]
    NotFound,
    #[error(transparent)]
    OtherOutcome(#[from] budget::CompleteError),
    #[error("too many concurrent updates")]
    Contended,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Contended for ReportError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

impl Contended for CompleteError {
    fn is_contended(&self) -> bool {
        matches!(self, Self::Contended)
    }
}

/// Opens a budget: the tier from the task's features (or the override), the allocation from
/// the tier's base or, when adaptive allocation is on for this task (the flag, and the task
/// inside its rollout share), from the tier's learned history.
pub(crate) async fn open(
    repo: &BudgetRepo,
    tenant: &TenantId,
    new: NewBudget,
) -> Result<Budget, StoreError> {
    let config = repo.config(tenant).await?;
    let assessment = assess(&new.task, new.complexity);
    let tier = config.tier(assessment.complexity);
    let base = if config.adaptive_for(tenant.as_str(), &new.task_id) {
        let (history, _) = repo.usage(tenant, assessment.complexity).await?;
        history.allocation(
            tier.base_tokens,
            config.ceiling(assessment.complexity),
            &config.adaptive,
        )
    } else {
        tier.base_tokens
    };
    let budget = Budget::open(
        uuid::Uuid::now_v7().to_string(),
        new.task_id,
        assessment,
        base,
        &config,
        now_ms(),
    );
    repo.create(tenant, &budget).await?;
    Ok(budget)
}

/// A budget of the tenant.
pub(crate) async fn read(
    repo: &BudgetRepo,
    tenant: &TenantId,
    id: &str,
) -> Result<Budget, ReadError> {
    let (budget, _) = repo.budget(tenant, id).await?.ok_or(ReadError::NotFound)?;
    Ok(budget)
}

/// Applies a report exactly once: the budget (at the version read) and the report (if not
/// yet counted) are written in one transaction, so `consumed_tokens` is the sum of the
/// accepted tokens of distinct reports under any number of concurrent reporters. A report
/// counted before gets its stored answer back.
pub(crate) async fn report(
    repo: &BudgetRepo,
    tenant: &TenantId,
    id: &str,
    new: &NewReport,
) -> Result<Decision, ReportError> {
    optimistic(move || async move {
        let (mut budget, version) = repo
            .budget(tenant, id)
            .await?
            .ok_or(ReportError::NotFound)?;
        let config = repo.config(tenant).await?;
        let decision = match budget.apply(new.report, &config, now_ms()) {
            Ok(decision) => decision,
            // A retry of a report applied before the budget closed still gets its answer.
            Err(budget::ReportError::Closed(status)) => {
                return replay(repo, tenant, id, new)
                    .await?
                    .ok_or(ReportError::Closed(status));
            }
        };
        let stored = StoredReport {
            request: new.fingerprint.clone(),
            decision,
        };
        match repo
            .apply_report(tenant, &budget, version, &new.report_id, &stored)
            .await
        {
            Ok(()) => Ok(stored.decision),
            // Counted by an earlier delivery of this report: its answer, if the body is the same.
            Err(SaveError::ReportAlreadyCounted) => replay(repo, tenant, id, new)
                .await?
                .ok_or(ReportError::Contended),
            Err(SaveError::BudgetChanged) => Err(ReportError::Contended),
            Err(SaveError::Store(e)) => Err(e.into()),
        }
    })
    .await
}

/// The stored answer to the report, if it was counted: the same answer for the same body,
/// [`ReportError::ReportReused`] for another body.
async fn replay(
    repo: &BudgetRepo,
    tenant: &TenantId,
    id: &str,
    new: &NewReport,
) -> Result<Option<Decision>, ReportError> {
    let Some(stored) = repo.report(tenant, id, &new.report_id).await? else {
        return Ok(None);
    };
    if stored.request != new.fingerprint {
        return Err(ReportError::ReportReused);
    }
    Ok(Some(stored.decision))
}

/// Completes a budget with the task's outcome (the domain decides whether this is a retry or
/// a conflict). A success's consumption is recorded, exactly once, in the tier's history
/// that adaptive allocation learns from.
pub(crate) async fn complete(
    repo: &BudgetRepo,
    kpis: &KpiLedger,
    tenant: &TenantId,
    id: &str,
    outcome: Outcome,
) -> Result<Budget, CompleteError> {
    let (budget, changed) = optimistic(move || async move {
        let (mut budget, version) = repo
            .budget(tenant, id)
            .await?
            .ok_or(CompleteError::NotFound)?;
        if budget.complete(outcome, now_ms())? == Completion::Unchanged {
            return Ok((budget, false));
        }
        let usage = if outcome == Outcome::Success {
            let config = repo.config(tenant).await?;
            let (mut history, v) = repo.usage(tenant, budget.complexity()).await?;
            history.record(budget.consumed_tokens, config.adaptive.window);
            Some((history, v))
        } else {
            None
        };
        match repo.complete(tenant, &budget, version, usage).await {
            Ok(()) => Ok((budget, true)),
            Err(SaveError::Store(e)) => Err(e.into()),
            Err(SaveError::BudgetChanged | SaveError::ReportAlreadyCounted) => {
                Err(CompleteError::Contended)
            }
        }
    })
    .await?;
    if changed {
        kpis.record(
            tenant,
            budget.updated_at_ms,
            &completion_counts(&budget, outcome),
        )
        .await;
    }
    Ok(budget)
}

/// What a closed budget adds to the KPIs.
fn completion_counts(budget: &Budget, outcome: Outcome) -> KpiCounts {
    KpiCounts {
        budgets_completed: 1,
        budgets_succeeded: u64::from(outcome == Outcome::Success),
        budgets_escalated: u64::from(!budget.escalations.is_empty()),
        tokens_used: budget.consumed_tokens,
        tokens_allocated: budget.allocated_tokens,
        ..KpiCounts::default()
    }
}
