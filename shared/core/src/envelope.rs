//! Versions of the messages on the work and evaluation queues (trajectory, learning-event and
//! evaluation envelopes). Writers stamp [`ENVELOPE_VERSION`]; readers take it and every older
//! version they can upgrade, and refuse the rest with a reason (the queue's dead letter),
//! checked before the message is parsed in full so a newer shape is named as such rather
//! than reported as a malformed message.
//!
//! | version | shape | read as |
//! |---|---|---|
//! | 0 (no `version` field) | the envelope before versions | upgraded: the same fields |
//! | 1 | `{version: 1, …}` | upgraded: no `source` |
//! | 2 | `{version: 2, …}`; a trajectory envelope may name its `source` | current |

use serde::{Deserialize, Serialize};

use crate::trajectory::{Trajectory, Turn};

/// The version writers stamp.
pub const ENVELOPE_VERSION: u32 = 2;

/// Whether a reader of this build takes a message body's envelope version.
///
/// # Errors
/// The version and what this reader takes, for the dead letter's reason. A body that is not a
/// JSON object, or whose `version` is not a number, passes: the full parse reports it.
pub fn check_version(body: &str) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        version: u32,
    }
    match serde_json::from_str::<Probe>(body).map(|p| p.version) {
        Ok(v) if v > ENVELOPE_VERSION => Err(format!(
            "envelope version {v} is not supported: this reader takes versions 0 to \
             {ENVELOPE_VERSION}"
        )),
        _ => Ok(()),
    }
}

/// A trajectory on the work queue. The tenant is set from the caller's identity by whoever
/// accepted it (the trajectories API, the gateway); producers that write to the queue
/// directly are trusted by the queue's access policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// The envelope version; absent in version-0 messages.
    #[serde(default)]
    pub version: u32,
    /// The tenant (as authenticated, not yet pseudonymised).
    pub tenant: String,
    /// When the trajectory was accepted (epoch ms): its date partition, stable across
    /// redeliveries.
    pub received_at_ms: i64,
    /// The trajectory as posted.
    pub trajectory: Trajectory,
    /// Which path accepted it (version 2); `None` in older envelopes, where it is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
}

/// The path a trajectory came in by, kept in the trajectory index for the console's filters
/// and because a gateway's or a trace's trajectory was not written by the agent itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = TrajectorySource))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `POST /v1/trajectories`.
    Api,
    /// A gateway session that ended.
    Gateway,
    /// A conversation traced over OTLP.
    Traces,
}

impl Source {
    /// The name as the API spells it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Gateway => "gateway",
            Self::Traces => "traces",
        }
    }
}

impl Envelope {
    /// What accepting the trajectory counts: one trajectory, with tools or not, succeeded or
    /// not.
    #[must_use]
    pub fn counts(&self) -> crate::kpi::KpiCounts {
        let t = &self.trajectory;
        crate::kpi::KpiCounts {
            trajectories: 1,
            trajectories_with_tools: u64::from(t.turns.iter().any(Turn::has_calls)),
            trajectories_succeeded: u64::from(t.final_outcome.as_ref().is_some_and(|o| o.success)),
            ..crate::kpi::KpiCounts::default()
        }
    }

    /// `trajectory` of `tenant`, accepted by `source` at `received_at_ms`, at the current
    /// version.
    #[must_use]
    pub fn new(tenant: &str, received_at_ms: i64, trajectory: Trajectory, source: Source) -> Self {
        Self {
            version: ENVELOPE_VERSION,
            tenant: tenant.to_owned(),
            received_at_ms,
            trajectory,
            source: Some(source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_and_older_versions_pass_and_newer_ones_are_named() {
        assert_eq!(check_version(r#"{"tenant": "t"}"#), Ok(()));
        assert_eq!(check_version(r#"{"version": 0, "tenant": "t"}"#), Ok(()));
        assert_eq!(check_version(r#"{"version": 1, "tenant": "t"}"#), Ok(()));
        assert_eq!(check_version(r#"{"version": 2, "tenant": "t"}"#), Ok(()));
        let e = check_version(r#"{"version": 3, "tenant": "t", "new": true}"#).expect_err("newer");
        assert!(e.contains("version 3") && e.contains("0 to 2"), "{e}");
        // Malformed bodies are left to the full parse.
        assert_eq!(check_version("not json"), Ok(()));
        assert_eq!(check_version(r#"{"version": "x"}"#), Ok(()));
    }
}
