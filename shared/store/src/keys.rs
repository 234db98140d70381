//! How tenant-scoped keys are built: the tenant is the first segment of every partition key.

use agentrl_core::TenantId;

/// `tenant#kind#id`: the partition key of a tenant's record of `kind`.
///
/// Tenant ids cannot contain `#` (see [`TenantId`]), so no two tenants can produce the
/// same key, whatever the `id` holds.
pub fn partition(tenant: &TenantId, kind: &str, id: &str) -> String {
    format!("{tenant}#{kind}#{id}")
}

/// The partition of a tenant's agents registry, one item per agent under its id: written by
/// the training function, read by the gateway.
pub fn agents(tenant: &TenantId) -> String {
    partition(tenant, "agents", "all")
}
