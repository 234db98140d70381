//! A model directory's `config.json`, read as transformers reads it
//! ([`agentrl_core::training::architecture`]).

use std::path::Path;

pub use agentrl_core::training::architecture::{Family, ModelConfig, token_ids};

use crate::error::TrainError;

/// Reads and checks `<dir>/config.json`.
///
/// # Errors
/// A missing or malformed file, an architecture or option the decoder does not implement:
/// the field and its value named.
pub fn load(dir: &Path) -> Result<ModelConfig, TrainError> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| TrainError::file(&path, e))?;
    let value = serde_json::from_str(&text).map_err(|e| TrainError::file(&path, e))?;
    ModelConfig::from_json(value).map_err(|e| TrainError::file(&path, e))
}
