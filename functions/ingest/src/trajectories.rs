//! The trajectory API's use cases: enqueue a validated trajectory for the worker, list the
//! trajectories the worker indexed, read one back with its turn rows, and read the tenant's
//! privacy accounting. Turning trajectories into rows is the worker's.

use std::sync::Arc;

use agentrl_core::{FieldError, TenantId, federation::FederationOptIn, trajectory::Trajectory};
use agentrl_http::{kpis::KpiLedger, trajectory_queue::enqueue_trajectory};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    ports::{Objects, Queue, Table},
    tenant_config::TenantConfig,
};
use agentrl_turns::{TurnRow, read_turns};
use anyhow::Context;

use crate::{
    IngestConfig, ledger,
    repo::{self, Filter, Summary},
};

/// Why a trajectory was not enqueued.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubmitError {
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// [`StoreError::Invalid`] when the queue refuses the message (too large).
    #[error(transparent)]
    Queue(#[from] StoreError),
}

/// The ε a tenant has spent on rewards, and its budget when differential privacy is on;
/// beside it, never added to it, what its federated rounds spent.
pub(crate) struct PrivacySpend {
    pub spent: f64,
    pub budget: Option<f64>,
    pub federation: FederationSpend,
}

/// A tenant's federated rounds: its opt-in's budget and the ε its rounds spent at its δ.
pub(crate) struct FederationSpend {
    pub opt_in: FederationOptIn,
    pub rounds: u64,
    /// ε of its rounds' summed ρ at its δ (`None` when it is not finite: a δ of 0 after rounds).
    pub epsilon_spent: Option<f64>,
}

/// Validates `trajectory` in full, then enqueues it in an envelope naming the tenant and the
/// receipt time (by claim check when it is larger than a queue message); returns the
/// message id.
pub(crate) async fn submit(
    queue: &Arc<dyn Queue>,
    objects: &Arc<dyn Objects>,
    kpis: &KpiLedger,
    tenant: &TenantId,
    trajectory: Trajectory,
) -> Result<String, SubmitError> {
    trajectory.validate()?;
    let id = enqueue_trajectory(
        queue.as_ref(),
        objects.as_ref(),
        kpis,
        tenant,
        now_ms(),
        trajectory,
        agentrl_core::envelope::Source::Api,
    )
    .await?;
    Ok(id)
}

/// The tenant's privacy accounting.
pub(crate) async fn privacy_spend(
    table: &dyn Table,
    configs: &TenantConfig<IngestConfig>,
    opt_ins: &TenantConfig<FederationOptIn>,
    tenant: &TenantId,
) -> Result<PrivacySpend, StoreError> {
    let rounds = agentrl_store::federation::spent(table, tenant).await?;
    let opt_in = opt_ins.get(tenant).await?;
    let epsilon = agentrl_core::privacy::rdp::rho_epsilon(rounds.rho, opt_in.delta);
    Ok(PrivacySpend {
        spent: ledger::spent(table, tenant).await?,
        budget: configs
            .get(tenant)
            .await?
            .differential_privacy
            .map(|dp| dp.budget),
        federation: FederationSpend {
            opt_in,
            rounds: rounds.rounds,
            epsilon_spent: epsilon.is_finite().then_some(epsilon),
        },
    })
}

/// A page of the tenant's trajectories, newest first, and the next page's cursor.
pub(crate) async fn list(
    table: &dyn Table,
    tenant: &TenantId,
    filter: &Filter<'_>,
    limit: usize,
    cursor: Option<String>,
) -> Result<(Vec<Summary>, Option<String>), StoreError> {
    repo::list(table, tenant, filter, limit, cursor).await
}

/// The summary of `trajectory_id` and its turn rows in order, read from the objects its
/// summary names (only the rows of its own message: an object holds a whole batch); `None`
/// when the tenant has no such trajectory.
pub(crate) async fn get(
    table: &dyn Table,
    objects: &dyn Objects,
    tenant: &TenantId,
    trajectory_id: &str,
) -> Result<Option<(Summary, Vec<TurnRow>)>, StoreError> {
    let Some(summary) = repo::summary(table, tenant, trajectory_id).await? else {
        return Ok(None);
    };
    let mut turns = Vec::new();
    for path in &summary.objects {
        let bytes = objects
            .get(path)
            .await?
            .with_context(|| format!("{path}, named by the index, is gone"))?;
        let (id, message) = (summary.trajectory_id.clone(), summary.message_id.clone());
        let path = path.clone();
        // Decoding is CPU-bound: keep it off the async workers.
        let rows = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<TurnRow>> {
            let mut rows = Vec::new();
            for row in read_turns(bytes).with_context(|| format!("reading {path}"))? {
                let row = row.with_context(|| format!("reading {path}"))?;
                if row.trajectory_id == id && row.message_id == message {
                    rows.push(row);
                }
            }
            Ok(rows)
        })
        .await
        .context("the Parquet decoder panicked")??;
        turns.extend(rows);
    }
    turns.sort_by_key(|r| r.turn_index);
    Ok(Some((summary, turns)))
}
