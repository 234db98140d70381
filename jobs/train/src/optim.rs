//! AdamW with fp32 moments and savable state, global-norm gradient clipping, gradient
//! accumulation and the warmup + constant/cosine schedule.
//!
//! candle-nn's AdamW keeps its moments in the parameter dtype, decays every variable and
//! hides its state (so a resumed run would restart its moments); this one decays only
//! matrices (no decay on norms and biases, as TRL/transformers group them) and saves its
//! moments next to the weights.

use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{
    CpuStorage, DType, Device, InplaceOp2, InplaceOp3, Layout, Tensor, Var, backprop::GradStore,
};

pub use agentrl_core::training::config::{OptimizerConfig, Schedule};

use crate::error::{Result, TrainError};
use crate::model::fused::{data, data_mut};

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
        for (i, (_, var)) in vars.iter().enumerate() {
            if let Some(g) = store.get(var.as_tensor()) {
                self.add_at(i, g)?;
            }
        }
        Ok(())
    }

    /// Adds a gradient of variable `i` computed outside autograd (the output head's, from
    /// [`crate::model::vocab::backward`]).
    ///
    /// # Errors
    /// A shape that is not the variable's.
    pub fn add_at(&mut self, i: usize, g: &Tensor) -> Result<()> {
        let g = g.detach().to_dtype(DType::F32)?;
        let slot = self
            .grads
            .get_mut(i)
            .ok_or_else(|| TrainError::Data(format!("no variable {i} to add a gradient to")))?;
        *slot = Some(match slot.take() {
            Some(sum) => (sum + g)?,
            None => g,
        });
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
        self.step_with(vars, grads, lr, true)
    }

    /// [`Self::step`], with the in-place update allowed or not (tests compare the two).
    fn step_with(
        &mut self,
        vars: &[(String, Var)],
        grads: &Accumulator,
        lr: f64,
        allow_in_place: bool,
    ) -> Result<f64> {
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
            let update = Update {
                lr,
                decay: if var.rank() >= 2 {
                    self.config.weight_decay
                } else {
                    0.0
                },
                betas: [b1, b2],
                corrections: [c1, c2],
                eps: self.config.eps,
                clip,
            };
            if allow_in_place && in_place(var) {
                update.in_place(var, g, &self.m[i], &self.v[i])?;
            } else {
                let (m, v) = update.composed(var, g, &self.m[i], &self.v[i])?;
                (self.m[i], self.v[i]) = (m, v);
            }
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

/// One variable's AdamW update: the step's rate, decay, bias corrections and clip factor.
#[derive(Debug, Clone, Copy)]
struct Update {
    lr: f64,
    decay: f64,
    betas: [f64; 2],
    /// `1 − βᵗ` of each moment.
    corrections: [f64; 2],
    eps: f64,
    /// The global-norm clip factor applied to the gradient.
    clip: f64,
}

/// Whether the update of `var` runs in place: fp32 on the CPU.
fn in_place(var: &Var) -> bool {
    matches!(var.device(), Device::Cpu) && var.dtype() == DType::F32
}

impl Update {
    /// The update as tensor ops (any device and dtype): returns the new moments and sets the
    /// variable. Each op allocates its result, a dozen per variable.
    fn composed(&self, var: &Var, g: &Tensor, m: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let [b1, b2] = self.betas;
        let [c1, c2] = self.corrections;
        let g = (g * self.clip)?;
        let m = ((m * b1)? + (&g * (1.0 - b1))?)?;
        let v = ((v * b2)? + (g.sqr()? * (1.0 - b2))?)?;
        let step = ((&m / c1)? / ((&v / c2)?.sqrt()? + self.eps)?)?;
        let p = var.as_tensor().detach().to_dtype(DType::F32)?;
        let next = ((p * (1.0 - self.lr * self.decay))? - (step * self.lr)?)?;
        var.set(&next.to_dtype(var.dtype())?)?;
        Ok((m, v))
    }

    /// The same update written into the moments and the variable's own storage: three passes
    /// over the elements and no allocation (fp32 CPU tensors, see [`in_place`]).
    fn in_place(&self, var: &Var, g: &Tensor, m: &Tensor, v: &Tensor) -> Result<()> {
        let [b1, b2] = self.betas;
        m.inplace_op2(
            g,
            &Moment {
                beta: b1 as f32,
                clip: self.clip as f32,
                square: false,
            },
        )?;
        v.inplace_op2(
            g,
            &Moment {
                beta: b2 as f32,
                clip: self.clip as f32,
                square: true,
            },
        )?;
        var.as_tensor().inplace_op3(m, v, self)?;
        Ok(())
    }
}

/// `moment ← β·moment + (1 − β)·x` with `x` the clipped gradient, or its square.
struct Moment {
    beta: f32,
    clip: f32,
    square: bool,
}

impl InplaceOp2 for Moment {
    fn name(&self) -> &'static str {
        "adamw-moment"
    }

    fn cpu_fwd(
        &self,
        moment: &mut CpuStorage,
        ml: &Layout,
        g: &CpuStorage,
        gl: &Layout,
    ) -> candle_core::Result<()> {
        let g = data::<f32>(g, gl, self.name())?;
        let moment = data_mut::<f32>(moment, ml, self.name())?;
        if moment.len() != g.len() {
            candle_core::bail!(
                "adamw-moment: {} moments, {} gradients",
                moment.len(),
                g.len()
            );
        }
        let (beta, rest) = (self.beta, 1.0 - self.beta);
        for (m, &g) in moment.iter_mut().zip(g) {
            let g = g * self.clip;
            *m = beta * *m + rest * if self.square { g * g } else { g };
        }
        Ok(())
    }
}

/// `p ← p·(1 − lr·decay) − lr·m̂ / (√v̂ + ε)` on the variable's storage.
impl InplaceOp3 for Update {
    fn name(&self) -> &'static str {
        "adamw-apply"
    }

    fn cpu_fwd(
        &self,
        p: &mut CpuStorage,
        pl: &Layout,
        m: &CpuStorage,
        ml: &Layout,
        v: &CpuStorage,
        vl: &Layout,
    ) -> candle_core::Result<()> {
        let (m, v) = (
            data::<f32>(m, ml, self.name())?,
            data::<f32>(v, vl, self.name())?,
        );
        let p = data_mut::<f32>(p, pl, self.name())?;
        if p.len() != m.len() || p.len() != v.len() {
            candle_core::bail!("adamw-apply: parameter and moment sizes differ");
        }
        let keep = (1.0 - self.lr * self.decay) as f32;
        let lr = self.lr as f32;
        let [c1, c2] = self.corrections.map(|c| (1.0 / c) as f32);
        let eps = self.eps as f32;
        for ((p, &m), &v) in p.iter_mut().zip(m).zip(v) {
            *p = *p * keep - lr * (m * c1) / ((v * c2).sqrt() + eps);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Var};

    use super::{Accumulator, AdamW, OptimizerConfig};

    /// Two variables (a matrix, which decays, and a vector, which does not) and three steps
    /// of gradients whose norm is above the clip; `composed`: the tensor form a GPU takes.
    fn run(composed: bool) -> (Vec<Vec<f32>>, Vec<f64>) {
        let dev = Device::Cpu;
        let w: Vec<f32> = (0..12).map(|i| (i as f32 * 0.37).sin()).collect();
        let vars = vec![
            ("w".to_string(), Var::from_vec(w, (3, 4), &dev).unwrap()),
            (
                "b".to_string(),
                Var::from_vec(vec![0.5f32, -0.25, 2.0], 3, &dev).unwrap(),
            ),
        ];
        let config = OptimizerConfig {
            weight_decay: 0.1,
            ..OptimizerConfig::default()
        };
        let mut opt = AdamW::new(&vars, &config).unwrap();
        let mut norms = Vec::new();
        for step in 0..3 {
            let loss = ((vars[0].1.as_tensor().sqr().unwrap().sum_all().unwrap()
                * (2.0 + f64::from(step)))
            .unwrap()
                + vars[1].1.as_tensor().exp().unwrap().sum_all().unwrap())
            .unwrap();
            let mut acc = Accumulator::new(2);
            acc.add(&vars, &loss.backward().unwrap()).unwrap();
            norms.push(opt.step_with(&vars, &acc, 0.05, !composed).unwrap());
        }
        let values = vars
            .iter()
            .map(|(_, v)| {
                v.as_tensor()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap()
            })
            .collect();
        (values, norms)
    }

    #[test]
    fn the_in_place_update_equals_the_tensor_ops_and_the_textbook_formula() {
        let (fused, norms) = run(false);
        let (composed, composed_norms) = run(true);
        // Equal up to rounding: fp32 products here, f64 scalars in candle's affine ops.
        for (a, b) in norms.iter().zip(&composed_norms) {
            assert!((a - b).abs() <= 1e-5 * b, "norms {a} vs {b}");
        }
        for (a, b) in fused.iter().flatten().zip(composed.iter().flatten()) {
            assert!((a - b).abs() <= 1e-5, "in place {a} vs composed {b}");
        }
        // The textbook AdamW (PyTorch's `torch.optim.AdamW`) in f64 on the vector, whose
        // gradient is eᵇ: the decay is off for rank-1 variables, the clip is the global one.
        let mut b = [0.5f64, -0.25, 2.0];
        let (mut m, mut v) = ([0.0f64; 3], [0.0f64; 3]);
        for (t, norm) in norms.iter().enumerate() {
            let clip = if *norm > 1.0 {
                1.0 / (norm + 1e-6)
            } else {
                1.0
            };
            let t = t as i32 + 1;
            for k in 0..3 {
                let g = b[k].exp() * clip;
                m[k] = 0.9 * m[k] + 0.1 * g;
                v[k] = 0.999 * v[k] + 0.001 * g * g;
                let (mh, vh) = (
                    m[k] / (1.0 - 0.9f64.powi(t)),
                    v[k] / (1.0 - 0.999f64.powi(t)),
                );
                b[k] -= 0.05 * mh / (vh.sqrt() + 1e-8);
            }
        }
        for (got, want) in fused[1].iter().zip(b) {
            assert!((f64::from(*got) - want).abs() < 1e-5, "{got} vs {want}");
        }
    }
}
