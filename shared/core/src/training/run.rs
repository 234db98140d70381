//! A training run's life cycle and identity.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where a training run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Created, waiting for its job to start.
    Queued,
    /// Its job is training.
    Running,
    /// It finished and registered a model version.
    Succeeded,
    /// Its job failed (the reason is on the run).
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

/// A status change that the life cycle does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a {from} run cannot become {to}")]
pub struct TransitionError {
    /// The current status.
    pub from: RunStatus,
    /// The one asked for.
    pub to: RunStatus,
}

impl RunStatus {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether nothing can happen to the run any more.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }

    /// The status after a change to `to`, or why not.
    ///
    /// A finished run never changes again, so a late or redelivered job-state event cannot
    /// resurrect a cancelled run or fail a succeeded one; `queued → queued` and
    /// `running → running` are no-ops (progress reports); `running → queued` is refused.
    ///
    /// # Errors
    /// [`TransitionError`] for any other change.
    pub fn transition(self, to: Self) -> Result<Self, TransitionError> {
        let allowed = match self {
            Self::Queued => true,
            Self::Running => to != Self::Queued,
            Self::Succeeded | Self::Failed | Self::Cancelled => false,
        };
        if allowed {
            Ok(to)
        } else {
            Err(TransitionError { from: self, to })
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The id of the one run of `agent` on `dataset` from `base_model` with `config`: the same
/// inputs always name the same run, so a redelivered `training.dataset.ready` or a retried
/// request finds the run instead of starting a second job.
///
/// `config` is hashed in its canonical form (object keys sorted, no whitespace: what
/// `serde_json` writes for a `Value` built without `preserve_order`), so two spellings of the
/// same configuration are one run.
pub fn run_id(agent: &str, dataset: &str, base_model: &str, config: &serde_json::Value) -> String {
    let mut hash = Sha256::new();
    for part in [agent, dataset, base_model, &canonical(config)] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let digest = hash.finalize();
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("run-{hex}")
}

/// `value` with every object's keys in order, written without whitespace.
fn canonical(value: &serde_json::Value) -> String {
    use serde_json::Value;
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finished_runs_never_change() {
        use RunStatus::*;
        for from in [Succeeded, Failed, Cancelled] {
            for to in [Queued, Running, Succeeded, Failed, Cancelled] {
                assert!(from.transition(to).is_err(), "{from} → {to}");
            }
        }
        assert_eq!(Queued.transition(Running), Ok(Running));
        assert_eq!(Running.transition(Running), Ok(Running));
        assert_eq!(Running.transition(Succeeded), Ok(Succeeded));
        assert_eq!(Queued.transition(Cancelled), Ok(Cancelled));
        assert!(Running.transition(Queued).is_err());
    }

    #[test]
    fn one_run_per_agent_dataset_model_and_config() {
        let a = run_id(
            "a",
            "d",
            "m",
            &json!({"seed": 1, "grpo": {"steps": 2, "group_size": 4}}),
        );
        let b = run_id(
            "a",
            "d",
            "m",
            &json!({"grpo": {"group_size": 4, "steps": 2}, "seed": 1}),
        );
        assert_eq!(a, b, "key order is not identity");
        assert!(a.starts_with("run-") && a.len() == 28);
        assert_ne!(
            a,
            run_id(
                "a",
                "d",
                "m",
                &json!({"seed": 2, "grpo": {"steps": 2, "group_size": 4}})
            )
        );
        assert_ne!(
            run_id("ab", "c", "m", &json!({})),
            run_id("a", "bc", "m", &json!({}))
        );
        assert_ne!(
            run_id("a", "d", "m", &json!({})),
            run_id("a", "d", "n", &json!({}))
        );
    }
}
