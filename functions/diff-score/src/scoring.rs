//! The diff-score use case: score one change with the tenant's weights, off the async
//! workers (parsing and tree distances are CPU-bound).

use std::collections::BTreeMap;

use agentrl_core::TenantId;
use agentrl_diff::{InputError, Lang, Report, Request};
use agentrl_store::StoreError;
use agentrl_store::clock::now_ms;

use crate::DiffState;

/// A change to score, as parsed from the request.
pub(crate) struct Change {
    pub before: BTreeMap<String, String>,
    pub after: BTreeMap<String, String>,
    pub tests_passed: bool,
    /// Parse every file as this language instead of by extension.
    pub lang: Option<Lang>,
}

/// Why a change was not scored.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScoreError {
    /// The files are over a limit or unusable.
    #[error(transparent)]
    Invalid(#[from] InputError),
    /// The scoring thread died.
    #[error("the scorer failed: {0}")]
    Scorer(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The score of `change` under the tenant's weights.
pub(crate) async fn score(
    state: &DiffState,
    tenant: &TenantId,
    change: Change,
) -> Result<Report, ScoreError> {
    let request = Request {
        lang: change.lang,
        tests_passed: change.tests_passed,
        weights: state.weights.get(tenant).await?,
    };
    let scorer = state.scorer.clone();
    let report =
        tokio::task::spawn_blocking(move || scorer.score(&change.before, &change.after, &request))
            .await??;
    let counts = agentrl_core::kpi::KpiCounts {
        diffs_scored: 1,
        reward_hacking_flagged: u64::from(!report.flags.is_empty()),
        ..Default::default()
    };
    state.kpis.record(tenant, now_ms(), &counts).await;
    Ok(report)
}
