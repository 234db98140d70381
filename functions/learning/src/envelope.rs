//! The queue message of a learning event: the event with the tenant it belongs to.

use agentrl_core::learning::Event;
use serde::{Deserialize, Serialize};

/// What travels on the work queue. The tenant is set by the API from the caller's identity;
/// producers that write to the queue directly are trusted by the queue's access policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventEnvelope {
    /// The envelope version ([`agentrl_core::envelope`]); absent in version-0 messages.
    #[serde(default)]
    pub version: u32,
    /// The tenant (as authenticated).
    pub tenant: String,
    /// When the event was accepted (epoch ms).
    pub received_at_ms: i64,
    /// The event, with `occurred_at_ms` filled in.
    pub event: Event,
}

/// Only the field that tells a learning-event message from a trajectory message.
#[derive(Deserialize)]
struct Probe {
    event: Option<serde::de::IgnoredAny>,
}

/// Whether a work-queue message body carries a learning event (an `event` field) rather than
/// a trajectory; a body that is not JSON is neither, and the trajectory worker dead-letters it.
pub fn is_event_message(body: &str) -> bool {
    serde_json::from_str::<Probe>(body).is_ok_and(|p| p.event.is_some())
}
