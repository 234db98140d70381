//! AdamW with fp32 moments and savable state, global-norm gradient clipping, gradient
//! accumulation and the warmup + constant/cosine schedule.
//!
//! candle-nn's AdamW keeps its moments in the parameter dtype, decays every variable and
//! hides its state (so a resumed run would restart its moments); this one decays only
//! matrices (no decay on norms and biases, as TRL/transformers group them) and saves its
//! moments next to the weights.

use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{DType, Tensor, Var, backprop::GradStore};
use serde::{Deserialize, Serialize};

use crate::error::{Result, TrainError};

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
    pub fn validate(&self) -> Result<()> {
        for (i, b) in self.betas.iter().enumerate() {
            if !(0.0..1.0).contains(b) {
                return Err(TrainError::config(
                    format!("optimizer.betas[{i}]"),
                    "must be in [0, 1)",
                ));
            }
        }
        if !(self.eps > 0.0 && self.eps < 1.0) {
            return Err(TrainError::config("optimizer.eps", "must be in (0, 1)"));
        }
        if !(0.0..1.0).contains(&self.weight_decay) {
            return Err(TrainError::config(
                "optimizer.weight_decay",
                "must be in [0, 1)",
            ));
        }
        if !(self.max_grad_norm >= 0.0 && self.max_grad_norm.is_finite()) {
            return Err(TrainError::config("optimizer.max_grad_norm", "must be ≥ 0"));
        }
        if !(0.0..=1.0).contains(&self.min_lr_ratio) {
            return Err(TrainError::config(
                "optimizer.min_lr_ratio",
                "must be in [0, 1]",
            ));
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

/// Gradients summed over micro-batches, one slot per variable.
#[derive(Debug)]
pub struct Accumulator {
    grads: Vec<Option<Tensor>>,
}

impl Accumulator {
    /// Empty slots for `n` variables.
    #[must_use]
    pub fn new(n: usize) -> Self {
        Self {
            grads: vec![None; n],
        }
    }

    /// Adds one backward pass's gradients (fp32).
    ///
    /// # Errors
    /// Shape mismatches.
    pub fn add(&mut self, vars: &[(String, Var)], store: &GradStore) -> Result<()> {
        for (slot, (_, var)) in self.grads.iter_mut().zip(vars) {
            if let Some(g) = store.get(var.as_tensor()) {
                let g = g.detach().to_dtype(DType::F32)?;
                *slot = Some(match slot.take() {
                    Some(sum) => (sum + g)?,
                    None => g,
                });
            }
        }
        Ok(())
    }

    /// The global L2 norm of the gradients.
    ///
    /// # Errors
    /// Tensor errors.
    pub fn norm(&self) -> Result<f64> {
        let mut total = 0.0;
        for g in self.grads.iter().flatten() {
            total += f64::from(g.sqr()?.sum_all()?.to_scalar::<f32>()?);
        }
        Ok(total.sqrt())
    }

    /// The slot of variable `i` (tests check that every variable receives a gradient).
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&Tensor> {
        self.grads.get(i).and_then(Option::as_ref)
    }
}

/// AdamW over a fixed list of variables.
#[derive(Debug)]
pub struct AdamW {
    config: OptimizerConfig,
    step: u64,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
}

impl AdamW {
    /// Zero moments for `vars`.
    ///
    /// # Errors
    /// Allocation.
    pub fn new(vars: &[(String, Var)], config: &OptimizerConfig) -> Result<Self> {
        let zeros = |var: &Var| Tensor::zeros(var.shape(), DType::F32, var.device());
        Ok(Self {
            config: config.clone(),
            step: 0,
            m: vars
                .iter()
                .map(|(_, v)| zeros(v))
                .collect::<candle_core::Result<_>>()?,
            v: vars
                .iter()
                .map(|(_, v)| zeros(v))
                .collect::<candle_core::Result<_>>()?,
        })
    }

    /// Optimizer steps taken.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// Clips the accumulated gradients to `max_grad_norm` and takes one step at rate `lr`.
    /// Returns the gradient norm before clipping.
    ///
    /// # Errors
    /// A non-finite gradient norm (the step is skipped and nothing changes), tensor errors.
    pub fn step(&mut self, vars: &[(String, Var)], grads: &Accumulator, lr: f64) -> Result<f64> {
        let norm = grads.norm()?;
        if !norm.is_finite() {
            return Err(TrainError::Data(format!(
                "gradient norm is {norm}: step skipped"
            )));
        }
        let clip = if self.config.max_grad_norm > 0.0 && norm > self.config.max_grad_norm {
            self.config.max_grad_norm / (norm + 1e-6)
        } else {
            1.0
        };
        self.step += 1;
        let [b1, b2] = self.config.betas;
        let t = self.step as i32;
        let (c1, c2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
        for (i, (_, var)) in vars.iter().enumerate() {
            let Some(g) = grads.get(i) else { continue };
            let g = (g * clip)?;
            self.m[i] = ((&self.m[i] * b1)? + (&g * (1.0 - b1))?)?;
            self.v[i] = ((&self.v[i] * b2)? + (g.sqr()? * (1.0 - b2))?)?;
            let update = ((&self.m[i] / c1)? / ((&self.v[i] / c2)?.sqrt()? + self.config.eps)?)?;
            let p = var.as_tensor().detach().to_dtype(DType::F32)?;
            let decay = if var.rank() >= 2 {
                self.config.weight_decay
            } else {
                0.0
            };
            let next = ((p * (1.0 - lr * decay))? - (update * lr)?)?;
            var.set(&next.to_dtype(var.dtype())?)?;
        }
        Ok(norm)
    }

    /// Saves the moments and step count (`optimizer.safetensors`).
    ///
    /// # Errors
    /// I/O.
    pub fn save(&self, vars: &[(String, Var)], path: &Path) -> Result<()> {
        let mut tensors = BTreeMap::new();
        for (i, (name, _)) in vars.iter().enumerate() {
            tensors.insert(format!("{name}.exp_avg"), self.m[i].clone());
            tensors.insert(format!("{name}.exp_avg_sq"), self.v[i].clone());
        }
        tensors.insert(
            "step".into(),
            Tensor::new(
                &[self.step as f32],
                self.m
                    .first()
                    .map_or(&candle_core::Device::Cpu, Tensor::device),
            )?,
        );
        crate::model::save_safetensors(&tensors, path)
    }

    /// Restores what [`Self::save`] wrote.
    ///
    /// # Errors
    /// A missing or mismatching tensor.
    pub fn load(&mut self, vars: &[(String, Var)], path: &Path) -> Result<()> {
        let device = vars
            .first()
            .map_or(candle_core::Device::Cpu, |(_, v)| v.device().clone());
        let mut t = crate::model::read_tensors(path, &device)?;
        let mut take = |name: &str| {
            t.remove(name)
                .ok_or_else(|| TrainError::file(path, format!("tensor {name} is missing")))
        };
        for (i, (name, _)) in vars.iter().enumerate() {
            self.m[i] = take(&format!("{name}.exp_avg"))?;
            self.v[i] = take(&format!("{name}.exp_avg_sq"))?;
        }
        self.step = take("step")?
            .to_vec1::<f32>()?
            .first()
            .copied()
            .unwrap_or(0.0) as u64;
        Ok(())
    }
}
