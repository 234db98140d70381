//! What can go wrong in a training run, each naming the file or field at fault.

use std::fmt::Display;
use std::path::{Path, PathBuf};

/// A training error. Every variant names what the user has to fix.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A file is missing, unreadable or malformed.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A configuration value is out of range.
    #[error("config {field}: {reason}")]
    Config {
        /// The field's path, e.g. `grpo.group_size`.
        field: String,
        /// Why it was refused.
        reason: String,
    },
    /// The data leaves nothing to train on, or contradicts the model.
    #[error("{0}")]
    Data(String),
    /// A tensor operation failed (shapes, dtypes, device).
    #[error("tensor: {0}")]
    Tensor(#[from] candle_core::Error),
    /// Reading or writing the output failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// SIGTERM: the run stopped at a step boundary (with a checkpoint when one fit the stop
    /// window) and a retry resumes it.
    #[error("stopped by SIGTERM at a step boundary; a retry resumes from the newest checkpoint")]
    Terminated,
}

impl TrainError {
    /// A problem with `path`.
    pub fn file(path: &Path, reason: impl Display) -> Self {
        Self::File {
            path: path.to_owned(),
            reason: reason.to_string(),
        }
    }

    /// A problem with the configuration field `field`.
    pub fn config(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Config {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl From<agentrl_core::FieldError> for TrainError {
    fn from(e: agentrl_core::FieldError) -> Self {
        Self::Config {
            field: e.field,
            reason: e.reason,
        }
    }
}

/// Results of this crate.
pub type Result<T, E = TrainError> = std::result::Result<T, E>;
