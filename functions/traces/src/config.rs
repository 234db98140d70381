//! Per-tenant settings of trace ingest: how long a conversation stays quiet before it is
//! ingested.

use agentrl_core::FieldError;
use serde::{Deserialize, Serialize};

/// The name of the configuration document (`tenant#config#traces`).
pub(crate) const CONFIG_NAME: &str = "traces";

/// A tenant's trace-ingest settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TracesConfig {
    /// A conversation whose root span has ended is ingested once no span of it has arrived
    /// for this long (seconds, 1 to 3600).
    #[schema(minimum = 1, maximum = 3600)]
    pub quiet_seconds: u64,
    /// A conversation whose root span never arrives is ingested once no span of it has
    /// arrived for this long (seconds, 1 to 86400).
    #[schema(minimum = 1, maximum = 86400)]
    pub orphan_seconds: u64,
}

impl Default for TracesConfig {
    fn default() -> Self {
        Self {
            quiet_seconds: 30,
            orphan_seconds: 600,
        }
    }
}

impl TracesConfig {
    /// Checks the bounds; the error names the field.
    pub(crate) fn validate(&self) -> Result<(), FieldError> {
        if !(1..=3600).contains(&self.quiet_seconds) {
            return Err(FieldError::new("quiet_seconds", "must be 1 to 3600"));
        }
        if !(1..=86_400).contains(&self.orphan_seconds) {
            return Err(FieldError::new("orphan_seconds", "must be 1 to 86400"));
        }
        Ok(())
    }
}
