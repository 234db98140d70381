//! Where every source of trajectories — the trajectory API, the gateway's ended sessions,
//! traced conversations — hands one to the ingest worker.

use agentrl_core::{
    TenantId,
    envelope::{Envelope, Source},
    trajectory::Trajectory,
};
use agentrl_store::{
    StoreError, claims,
    ports::{Objects, Queue},
};

use crate::kpis::KpiLedger;

/// Enqueues `trajectory` of `tenant`, received by `source` at `received_at_ms`, in a versioned
/// envelope
/// (by claim check when it is larger than a queue message), then counts it in the tenant's
/// KPIs; returns the message id. The caller has validated it.
///
/// # Errors
/// The queue or the object store failed; nothing was counted.
pub async fn enqueue_trajectory(
    queue: &dyn Queue,
    objects: &dyn Objects,
    kpis: &KpiLedger,
    tenant: &TenantId,
    received_at_ms: u64,
    trajectory: Trajectory,
    source: Source,
) -> Result<String, StoreError> {
    let stamp = i64::try_from(received_at_ms).unwrap_or(i64::MAX);
    let envelope = Envelope::new(tenant.as_str(), stamp, trajectory, source);
    let counts = envelope.counts();
    let body = serde_json::to_string(&envelope).map_err(|e| StoreError::Backend(e.into()))?;
    let id = claims::send(queue, objects, &claims::prefix(tenant), &body).await?;
    kpis.record(tenant, received_at_ms, &counts).await;
    Ok(id)
}
