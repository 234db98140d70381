//! The queue message: a trajectory with the tenant it belongs to and when it was accepted.

use agentrl_core::trajectory::Trajectory;
use serde::{Deserialize, Serialize};

/// What travels on the queue. The tenant is set by the API from the caller's identity;
/// producers that write to the queue directly are trusted by the queue's access policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The envelope version ([`agentrl_core::envelope`]); absent in version-0 messages.
    #[serde(default)]
    pub version: u32,
    /// The tenant (as authenticated, not yet pseudonymised).
    pub tenant: String,
    /// When the trajectory was accepted (epoch ms): its date partition, stable across
    /// redeliveries.
    pub received_at_ms: i64,
    /// The trajectory as posted.
    pub trajectory: Trajectory,
}
