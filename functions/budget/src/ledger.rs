//! The budget ledger as other functions use it: the gateway reads a budget to clamp a call
//! and charges the call's usage to it, through the same exactly-once report path as
//! `POST /v1/budgets/{id}/consumption`.

use agentrl_core::{
    TenantId,
    budget::{Budget, Decision, Report},
};
use agentrl_store::{StoreError, ports::Table};
use std::sync::Arc;

use crate::budgets::{self, NewReport, ReportError};
use crate::repo::BudgetRepo;

/// Reads and charges budgets.
#[derive(Clone)]
pub struct Ledger {
    repo: BudgetRepo,
}

impl Ledger {
    /// The ledger over `table`.
    pub fn new(table: Arc<dyn Table>) -> Self {
        Self {
            repo: BudgetRepo::new(table),
        }
    }

    /// The tenant's budget `id`, if it has one.
    ///
    /// # Errors
    /// The table failed.
    pub async fn budget(&self, t: &TenantId, id: &str) -> Result<Option<Budget>, StoreError> {
        Ok(self.repo.budget(t, id).await?.map(|(b, _)| b))
    }

    /// Charges `tokens` to budget `id` once per `charge_id` (a retry gets the same decision).
    ///
    /// # Errors
    /// As a consumption report: no such budget, closed, contended, the table failed.
    pub async fn charge(
        &self,
        t: &TenantId,
        id: &str,
        charge_id: &str,
        tokens: u64,
    ) -> Result<Decision, ReportError> {
        let report = NewReport {
            report_id: charge_id.to_owned(),
            fingerprint: format!("charge:{tokens}"),
            report: Report {
                tokens,
                confidence: None,
                trigger: None,
                loop_completed: false,
            },
        };
        budgets::report(&self.repo, t, id, &report).await
    }
}
