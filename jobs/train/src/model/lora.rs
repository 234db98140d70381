//! LoRA: `y = x·Wᵀ + (α/r)·(x·Aᵀ)·Bᵀ` on the target linear layers, frozen base weights, and the
//! adapter written in PEFT's layout (`adapter_config.json`, `adapter_model.safetensors` with
//! `base_model.model.<module>.lora_A.weight` names) or merged into the base weights.

use std::collections::BTreeMap;

use candle_core::{DType, Device, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

pub use agentrl_core::training::config::{LORA_MODULES, LoraConfig};

use super::ops;
use crate::error::{Result, TrainError};

/// One adapter: A `[r, in]`, B `[out, r]`, and the scale α/r.
#[derive(Debug, Clone)]
pub struct Adapter {
    a: Tensor,
    b: Tensor,
    scale: f64,
}

impl Adapter {
    /// `(α/r)·(x·Aᵀ)·Bᵀ`.
    pub(crate) fn apply(&self, x: &Tensor, dtype: DType) -> candle_core::Result<Tensor> {
        let a = self.a.to_dtype(dtype)?;
        let b = self.b.to_dtype(dtype)?;
        ops::matmul(&ops::matmul(x, &a.t()?)?, &b.t()?)? * self.scale
    }
}

/// Every adapter of a model, by module path (`model.layers.0.self_attn.q_proj`).
#[derive(Debug, Clone)]
pub struct Adapters {
    config: LoraConfig,
    by_module: BTreeMap<String, Adapter>,
    vars: Vec<(String, Var)>,
}

impl Adapters {
    pub(crate) fn new(
        config: &LoraConfig,
        base: &BTreeMap<String, Tensor>,
        seed: u64,
        device: &Device,
    ) -> Result<Self> {
        config.validate().map_err(|e| e.within("lora"))?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x4c6f_5241);
        let mut by_module = BTreeMap::new();
        let mut vars = Vec::new();
        for (name, weight) in base {
            let Some(module) = name.strip_suffix(".weight") else {
                continue;
            };
            let short = module.rsplit('.').next().unwrap_or_default();
            if !config.target_modules.iter().any(|t| t == short) {
                continue;
            }
            let (out, inp) = weight.dims2()?;
            let bound = 1.0 / (inp as f64).sqrt();
            let a: Vec<f32> = (0..config.rank * inp)
                .map(|_| rng.random_range(-bound..bound) as f32)
                .collect();
            // fp32 masters whatever the base's dtype: the forward casts them.
            let a = Tensor::from_vec(a, (config.rank, inp), device)?;
            // A frozen A is a plain tensor: no gradient is computed for it.
            let a = if config.freeze_a {
                a
            } else {
                let var = Var::from_tensor(&a)?;
                vars.push((format!("{module}.lora_A.weight"), var.clone()));
                var.as_tensor().clone()
            };
            let b = Var::zeros((out, config.rank), DType::F32, device)?;
            vars.push((format!("{module}.lora_B.weight"), b.clone()));
            by_module.insert(
                module.to_owned(),
                Adapter {
                    a,
                    b: b.as_tensor().clone(),
                    scale: config.scale(),
                },
            );
        }
        if by_module.is_empty() {
            return Err(TrainError::config(
                "lora.target_modules",
                "matches no linear layer of the model",
            ));
        }
        vars.sort_by(|x, y| x.0.cmp(&y.0));
        Ok(Self {
            config: config.clone(),
            by_module,
            vars,
        })
    }

    pub(crate) fn get(&self, module: &str) -> Option<&Adapter> {
        self.by_module.get(module)
    }

    pub(crate) fn vars(&self) -> Vec<(String, Var)> {
        self.vars.clone()
    }

    pub(crate) fn detached(&self) -> Self {
        Self {
            config: self.config.clone(),
            by_module: self
                .by_module
                .iter()
                .map(|(k, a)| {
                    (
                        k.clone(),
                        Adapter {
                            a: a.a.detach(),
                            b: a.b.detach(),
                            scale: a.scale,
                        },
                    )
                })
                .collect(),
            vars: Vec::new(),
        }
    }

    /// Detached copies in `dtype` (a sampling view's).
    pub(crate) fn cast(&self, dtype: DType) -> Result<Self> {
        let mut out = self.detached();
        for adapter in out.by_module.values_mut() {
            adapter.a = adapter.a.to_dtype(dtype)?;
            adapter.b = adapter.b.to_dtype(dtype)?;
        }
        Ok(out)
    }

    /// The adapter tensors under PEFT's names.
    pub(crate) fn peft_tensors(&self) -> Vec<(String, Tensor)> {
        self.by_module
            .iter()
            .flat_map(|(module, a)| {
                [
                    (
                        format!("base_model.model.{module}.lora_A.weight"),
                        a.a.detach(),
                    ),
                    (
                        format!("base_model.model.{module}.lora_B.weight"),
                        a.b.detach(),
                    ),
                ]
            })
            .collect()
    }

    /// Loads adapter weights written by [`Self::peft_tensors`] (a resumed LoRA run, or the
    /// adapter a run starts from), frozen A factors included.
    pub(crate) fn load_peft(
        &mut self,
        tensors: &std::collections::HashMap<String, Tensor>,
    ) -> Result<()> {
        let get = |name: &str| {
            let key = format!("base_model.model.{name}");
            tensors
                .get(&key)
                .ok_or_else(|| TrainError::Data(format!("adapter checkpoint lacks {key}")))
        };
        for (name, var) in &self.vars {
            var.set(&get(name)?.to_dtype(var.dtype())?)?;
        }
        if self.config.freeze_a {
            for (module, adapter) in &mut self.by_module {
                let name = format!("{module}.lora_A.weight");
                let a = get(&name)?;
                if a.dims() != adapter.a.dims() {
                    return Err(TrainError::Data(format!(
                        "{name} is {:?}, the model's is {:?}",
                        a.dims(),
                        adapter.a.dims()
                    )));
                }
                adapter.a = a.to_dtype(DType::F32)?;
            }
        }
        Ok(())
    }

    /// `adapter_config.json` as PEFT writes it.
    pub(crate) fn peft_config(&self, base_model: &str) -> serde_json::Value {
        json!({
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": base_model,
            "r": self.config.rank,
            "lora_alpha": self.config.alpha,
            "lora_dropout": self.config.dropout,
            "target_modules": self.config.target_modules,
            "bias": "none",
            "fan_in_fan_out": false,
            "inference_mode": true,
            "init_lora_weights": true,
            "use_rslora": false,
            "use_dora": false,
            "modules_to_save": null,
            "layers_to_transform": null,
            "rank_pattern": {},
            "alpha_pattern": {},
        })
    }

    /// `W + (α/r)·B·A` for every adapted module: the merged weights for export.
    pub(crate) fn merged(
        &self,
        base: &BTreeMap<String, Tensor>,
    ) -> Result<BTreeMap<String, Tensor>> {
        let mut out = BTreeMap::new();
        for (name, w) in base {
            let module = name.strip_suffix(".weight").unwrap_or_default();
            let merged = match self.by_module.get(module) {
                Some(a) => {
                    // In fp32, then back to the base's dtype: one rounding, not two.
                    let delta = (a.b.detach().matmul(&a.a.detach())? * a.scale)?;
                    (w.detach().to_dtype(DType::F32)? + delta)?.to_dtype(w.dtype())?
                }
                None => w.detach(),
            };
            out.insert(name.clone(), merged);
        }
        Ok(out)
    }
}
