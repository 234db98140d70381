//! The one error type every port returns; adapters map vendor codes to it in one place each.

/// A storage operation that did not happen.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A conditional write's condition was false; nothing was written.
    /// In a transaction, `index` names the first write whose condition failed.
    #[error("condition failed{}", .index.map(|i| format!(" (write {i})")).unwrap_or_default())]
    ConditionFailed {
        /// The failing write of a transaction, when known.
        index: Option<usize>,
    },
    /// Another writer touched the same items concurrently; retrying may succeed.
    #[error("conflicting concurrent write")]
    Conflict,
    /// The request itself is not storable (too large, too many writes, bad key).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Anything else: the backend failed.
    #[error(transparent)]
    Backend(#[from] anyhow::Error),
}

impl StoreError {
    /// True for [`StoreError::ConditionFailed`].
    pub fn is_condition_failed(&self) -> bool {
        matches!(self, Self::ConditionFailed { .. })
    }
}
