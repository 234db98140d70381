//! `optimizer`: AdamW's settings and the learning-rate schedule.

use serde::{Deserialize, Serialize};

use crate::FieldError;

/// `optimizer` in the training config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OptimizerConfig {
    /// β₁, β₂.
    pub betas: [f64; 2],
    /// ε added to √v̂.
    pub eps: f64,
    /// Decoupled weight decay on matrices.
    pub weight_decay: f64,
    /// Clip the global gradient norm to this (0 = off).
    pub max_grad_norm: f64,
    /// Linear warmup steps of each phase.
    pub warmup_steps: u64,
    /// `constant` or `cosine` after warmup.
    pub schedule: Schedule,
    /// The cosine schedule ends at this fraction of the peak rate.
    pub min_lr_ratio: f64,
}

impl Default for OptimizerConfig {
    fn default() -> Self {
        Self {
            betas: [0.9, 0.999],
            eps: 1e-8,
            weight_decay: 0.0,
            max_grad_norm: 1.0,
            warmup_steps: 0,
            schedule: Schedule::Constant,
            min_lr_ratio: 0.0,
        }
    }
}

/// The learning-rate shape after warmup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// The peak rate throughout.
    Constant,
    /// Half a cosine from the peak to `min_lr_ratio × peak` at the phase's last step.
    Cosine,
}

impl OptimizerConfig {
    /// Checks ranges.
    ///
    /// # Errors
    /// The offending field.
    pub fn validate(&self) -> Result<(), FieldError> {
        for (i, b) in self.betas.iter().enumerate() {
            if !(0.0..1.0).contains(b) {
                return Err(FieldError::new(format!("betas[{i}]"), "must be in [0, 1)"));
            }
        }
        if !(self.eps > 0.0 && self.eps < 1.0) {
            return Err(FieldError::new("eps", "must be in (0, 1)"));
        }
        if !(0.0..1.0).contains(&self.weight_decay) {
            return Err(FieldError::new("weight_decay", "must be in [0, 1)"));
        }
        if !(self.max_grad_norm >= 0.0 && self.max_grad_norm.is_finite()) {
            return Err(FieldError::new("max_grad_norm", "must be ≥ 0"));
        }
        if !(0.0..=1.0).contains(&self.min_lr_ratio) {
            return Err(FieldError::new("min_lr_ratio", "must be in [0, 1]"));
        }
        Ok(())
    }

    /// The rate at 0-based `step` of a phase of `total` steps peaking at `peak`.
    #[must_use]
    pub fn lr(&self, peak: f64, step: u64, total: u64) -> f64 {
        if step < self.warmup_steps {
            return peak * (step + 1) as f64 / self.warmup_steps as f64;
        }
        match self.schedule {
            Schedule::Constant => peak,
            Schedule::Cosine => {
                let span = total.saturating_sub(self.warmup_steps).max(1) as f64;
                let progress = ((step - self.warmup_steps) as f64 / span).min(1.0);
                let floor = peak * self.min_lr_ratio;
                floor + (peak - floor) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
            }
        }
    }
}
