//! The trajectory API's use cases: enqueue a validated trajectory for the worker, and read
//! the tenant's privacy accounting. Turning trajectories into rows is the worker's.

use std::sync::Arc;

use agentrl_core::{FieldError, TenantId, trajectory::Trajectory};
use agentrl_http::{kpis::KpiLedger, trajectory_queue::enqueue_trajectory};
use agentrl_store::{
    StoreError,
    clock::now_ms,
    ports::{Objects, Queue, Table},
    tenant_config::TenantConfig,
};

use crate::{IngestConfig, ledger};

/// Why a trajectory was not enqueued.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubmitError {
    #[error(transparent)]
    Invalid(#[from] FieldError),
    /// [`StoreError::Invalid`] when the queue refuses the message (too large).
    #[error(transparent)]
    Queue(#[from] StoreError),
}

/// The ε a tenant has spent, and its budget when differential privacy is on.
pub(crate) struct PrivacySpend {
    pub spent: f64,
    pub budget: Option<f64>,
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
    )
    .await?;
    Ok(id)
}

/// The tenant's privacy accounting.
pub(crate) async fn privacy_spend(
    table: &dyn Table,
    configs: &TenantConfig<IngestConfig>,
    tenant: &TenantId,
) -> Result<PrivacySpend, StoreError> {
    Ok(PrivacySpend {
        spent: ledger::spent(table, tenant).await?,
        budget: configs
            .get(tenant)
            .await?
            .differential_privacy
            .map(|dp| dp.budget),
    })
}
