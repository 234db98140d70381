//! The one error for input that breaks a rule: which field, and why.

/// Input that breaks a rule, reported against the field that carries it: a dotted path such
/// as `trivial.base_tokens`, `metrics.revenue` or `turns[3].behavior_logprobs[7]`, so an API
/// can answer 400 naming it. Every validation of the domain returns this one type (under the
/// name of what it validates, e.g. [`crate::budget::ConfigError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct FieldError {
    /// Path of the offending field.
    pub field: String,
    /// The rule it breaks.
    pub reason: String,
}

impl FieldError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error with `prefix.` prepended to its field path: a nested part's error,
    /// reported from the whole.
    pub fn within(self, prefix: &str) -> Self {
        Self::new(format!("{prefix}.{}", self.field), self.reason)
    }
}
