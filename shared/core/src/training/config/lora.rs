//! `lora`: which layers carry adapters, their rank and scale.

use serde::{Deserialize, Serialize};

use crate::FieldError;

/// The linear layers of a Qwen2 / Llama block that adapters can target.
pub const LORA_MODULES: [&str; 7] = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
];

/// `lora` in the training config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraConfig {
    /// Rank r of A (`[r, in]`) and B (`[out, r]`).
    pub rank: usize,
    /// Scale numerator: the update is scaled by α / r (PEFT's default, not rsLoRA).
    pub alpha: f64,
    /// Dropout on the adapter's input while training.
    #[serde(default)]
    pub dropout: f64,
    /// Short names of the target layers (`q_proj`, `v_proj`, …).
    #[serde(default = "default_targets")]
    pub target_modules: Vec<String>,
    /// FFA-LoRA: A keeps its initial value (seeded, or the initial adapter's) and only B
    /// trains. Adapters that share A then differ only in B, and `(α/r)·B·A` is linear in B, so
    /// averaging B averages the updates exactly (federated rounds rely on it).
    #[serde(default)]
    pub freeze_a: bool,
}

fn default_targets() -> Vec<String> {
    ["q_proj", "k_proj", "v_proj", "o_proj"]
        .map(String::from)
        .to_vec()
}

impl LoraConfig {
    /// Checks ranges and module names.
    ///
    /// # Errors
    /// The offending field.
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.rank == 0 || self.rank > 4096 {
            return Err(FieldError::new("rank", "must be in 1..=4096"));
        }
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return Err(FieldError::new("alpha", "must be positive"));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(FieldError::new("dropout", "must be in [0, 1)"));
        }
        if self.target_modules.is_empty() {
            return Err(FieldError::new(
                "target_modules",
                "must name at least one module",
            ));
        }
        for (i, m) in self.target_modules.iter().enumerate() {
            if !LORA_MODULES.contains(&m.as_str()) {
                return Err(FieldError::new(
                    format!("target_modules[{i}]"),
                    format!("{m} is not one of {LORA_MODULES:?}"),
                ));
            }
        }
        Ok(())
    }

    /// α / r, the factor of the adapter's update.
    #[must_use]
    pub fn scale(&self) -> f64 {
        self.alpha / self.rank as f64
    }
}
