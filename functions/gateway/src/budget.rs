//! Thinking budgets enforced on calls: a call under a budget (`x-agentrl-budget`, or the
//! budget its session named first) goes with its completion limit lowered to what the
//! budget's ceiling still allows, is refused with a 429 naming the budget once nothing is
//! left (or the loop limit handed the task to a human), and its usage is charged to the
//! budget once, under the call's id, through the ledger's exactly-once report path.

use agentrl_budget::{Ledger, ReportError};
use agentrl_core::TenantId;
use agentrl_core::budget::{Decision, Status};
use agentrl_core::gateway::{CallRecord, limit};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Map, Value};

use crate::upstream::OpenAiError;

/// The budget a call is made under.
pub(crate) const BUDGET_HEADER: &str = "x-agentrl-budget";
/// What the budget says after the call: `CONTINUE`, `ESCALATED`, `EXHAUSTED`, `ESCALATE_TO_HUMAN`.
const ACTION_HEADER: &str = "x-agentrl-budget-action";
/// What the budget's allocation has left after the call.
const REMAINING_HEADER: &str = "x-agentrl-budget-remaining";

/// A call's debt to its budget, settled when its answer is complete.
pub(crate) struct Charge {
    ledger: Ledger,
    tenant: TenantId,
    budget_id: String,
    call_id: String,
    /// The most the call can produce (every choice at its limit): what it is charged when
    /// the upstream reports neither usage nor token ids.
    most: u64,
}

/// Lowers `request`'s completion limit to what budget `id` allows, or refuses the call.
pub(crate) async fn enforce(
    ledger: &Ledger,
    tenant: &TenantId,
    id: &str,
    call_id: &str,
    request: &mut Map<String, Value>,
) -> Result<Charge, OpenAiError> {
    let budget = ledger.budget(tenant, id).await?.ok_or_else(|| {
        OpenAiError::new(
            StatusCode::NOT_FOUND,
            format!("no such budget: {id}"),
            "budget_not_found",
        )
        .with_field(BUDGET_HEADER)
    })?;
    let refused = |code, why: String| {
        OpenAiError::new(StatusCode::TOO_MANY_REQUESTS, why, code)
            .with_field(BUDGET_HEADER)
            .final_answer()
    };
    let allowance = budget.allowance().map_err(|status| match status {
        Status::HandedToHuman => refused(
            "escalate_to_human",
            format!(
                "budget {id} handed the task to a human after {} loops",
                budget.loops_completed
            ),
        ),
        Status::Completed => refused("budget_completed", format!("budget {id} is completed")),
        Status::Active | Status::Exhausted => refused(
            "budget_exhausted",
            format!(
                "budget {id} has spent its ceiling of {} tokens",
                budget.max_total_tokens
            ),
        ),
    })?;
    let per_choice = limit::per_choice(allowance, request).ok_or_else(|| {
        refused(
            "budget_exhausted",
            format!("budget {id} has {allowance} tokens left, less than one per choice"),
        )
    })?;
    let given = limit::clamp(request, per_choice);
    let n = request.get("n").and_then(Value::as_u64).unwrap_or(1).max(1);
    Ok(Charge {
        ledger: ledger.clone(),
        tenant: tenant.clone(),
        budget_id: id.to_owned(),
        call_id: call_id.to_owned(),
        most: given.saturating_mul(n),
    })
}

impl Charge {
    /// Charges the call's completion tokens; the budget's decision, unless the charge failed
    /// (logged: the answer is not withheld for it).
    pub(crate) async fn settle(self, record: &CallRecord) -> Option<Decision> {
        let tokens = record.completion_tokens().unwrap_or(self.most);
        match self
            .ledger
            .charge(&self.tenant, &self.budget_id, &self.call_id, tokens)
            .await
        {
            Ok(decision) => Some(decision),
            // Closed meanwhile (completed, handed over): nothing more to count.
            Err(ReportError::Closed(_)) => None,
            Err(e) => {
                tracing::error!(error = %e, budget_id = %self.budget_id, call_id = %self.call_id,
                    tokens, "a gateway call's usage could not be charged to its budget");
                None
            }
        }
    }

    /// [`Charge::settle`] behind a streamed answer, whose usage is known when it ends.
    pub(crate) fn settle_behind(self, record: CallRecord) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { self.settle(&record).await });
            }
            Err(_) => tracing::error!(budget_id = %self.budget_id, call_id = %self.call_id,
                "no runtime to charge a streamed call's usage on"),
        }
    }
}

/// The budget's decision on the answer's headers.
pub(crate) fn headers(headers: &mut HeaderMap, decision: &Decision) {
    if let Some(action) = serde_json::to_value(decision.action)
        .ok()
        .and_then(|v| v.as_str().and_then(|s| HeaderValue::from_str(s).ok()))
    {
        headers.insert(ACTION_HEADER, action);
    }
    let left = decision
        .allocated_tokens
        .saturating_sub(decision.consumed_tokens);
    headers.insert(REMAINING_HEADER, HeaderValue::from(left));
}
