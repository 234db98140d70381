//! `train federate`: one round's aggregation of PEFT adapters (DP-FedAvg with fixed clipping,
//! [`agentrl_core::federation`]): the round's global adapter and each tenant's locally
//! trained one in, the next global adapter out.
//!
//! Each update is local − global over every tensor of the adapter (over the B factors alone
//! with `frozen_a`, FFA-LoRA's, whose A factors are the global's), clipped on its L2 norm; the output is global + the weighted mean of the clipped
//! updates + N(0, σ²) per element with σ = z·C·max w / Σ w, drawn from a ChaCha stream of
//! `seed`. Nothing about a single update (its norm, whether it was clipped) is written or
//! logged: only the noised mean leaves the aggregation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentrl_core::federation::{check_weights, mean_clipped_update, noise_std};
use candle_core::{DType, Device, Tensor};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use crate::error::{Result, TrainError};
use crate::model::{read_adapter_config, read_tensors, save_safetensors};

const CONFIG: &str = "adapter_config.json";
const WEIGHTS: &str = "adapter_model.safetensors";

/// One aggregation's inputs.
#[derive(Debug, Clone)]
pub struct Aggregation {
    /// The round's global adapter (PEFT layout).
    pub global: PathBuf,
    /// Each participant's locally trained adapter.
    pub locals: Vec<PathBuf>,
    /// Where the next global adapter goes.
    pub out: PathBuf,
    /// C: the L2 norm each update is clipped to.
    pub clip: f64,
    /// z: the noise multiplier (0: no noise, and no privacy).
    pub noise_multiplier: f64,
    /// The noise's seed: keep it secret, whoever knows it can subtract the noise.
    pub seed: u64,
    /// Each participant's weight (`None`: uniform).
    pub weights: Option<Vec<f64>>,
    /// The adapters were trained with `lora.freeze_a` from the global one: each local's A
    /// factors must equal the global's and are kept as they are, and the update, its clip and
    /// the noise cover the B factors alone (noise on A would move the shared A every round).
    pub frozen_a: bool,
}

/// What `federate.json` records about a round's aggregation: its settings, never a
/// participant's update, nor the noise's seed (whoever knows it can subtract the noise: a
/// round draws it from the operating system and forgets it).
#[derive(Debug, Clone, Serialize)]
pub struct Aggregated {
    /// How many updates were averaged.
    pub participants: usize,
    /// Their weights, normalised to sum to 1.
    pub weights: Vec<f64>,
    /// C.
    pub clip: f64,
    /// z.
    pub noise_multiplier: f64,
    /// σ of the noise added to each element.
    pub noise_std: f64,
    /// Scalars in the adapter.
    pub elements: usize,
}

/// An adapter's averaged tensors flattened in name order with their shapes, and its frozen
/// ones (A under FFA-LoRA) apart.
struct Flat {
    shapes: Vec<(String, Vec<usize>)>,
    values: Vec<f32>,
    frozen: BTreeMap<String, Vec<f32>>,
}

fn flat(dir: &Path, frozen_a: bool) -> Result<Flat> {
    let tensors: BTreeMap<String, Tensor> = read_tensors(&dir.join(WEIGHTS), &Device::Cpu)?
        .into_iter()
        .collect();
    let mut shapes = Vec::with_capacity(tensors.len());
    let mut values = Vec::new();
    let mut frozen = BTreeMap::new();
    for (name, t) in tensors {
        let v = t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        if frozen_a && name.contains(".lora_A.") {
            frozen.insert(name, v);
        } else {
            shapes.push((name, t.dims().to_vec()));
            values.extend(v);
        }
    }
    Ok(Flat {
        shapes,
        values,
        frozen,
    })
}

/// Aggregates one round and writes the next global adapter (`adapter_config.json` as the
/// global's, `adapter_model.safetensors` in fp32, `federate.json`).
///
/// # Errors
/// A bad setting (naming it), an adapter of another shape than the global's (naming it),
/// unreadable files.
pub fn aggregate(a: &Aggregation) -> Result<Aggregated> {
    if a.locals.is_empty() {
        return Err(TrainError::config("locals", "at least one local adapter"));
    }
    if !(a.clip.is_finite() && a.clip > 0.0) {
        return Err(TrainError::config("clip", "must be finite and positive"));
    }
    if !(a.noise_multiplier.is_finite() && a.noise_multiplier >= 0.0) {
        return Err(TrainError::config(
            "noise_multiplier",
            "must be finite and ≥ 0",
        ));
    }
    let weights = a
        .weights
        .clone()
        .unwrap_or_else(|| vec![1.0; a.locals.len()]);
    check_weights(&weights, a.locals.len())?;
    let shape = read_adapter_config(&a.global)?;
    let global = flat(&a.global, a.frozen_a)?;
    let mut locals = Vec::with_capacity(a.locals.len());
    for dir in &a.locals {
        if read_adapter_config(dir)? != shape {
            return Err(TrainError::file(
                &dir.join(CONFIG),
                "a LoRA shape (r, lora_alpha, target_modules) other than the global adapter's",
            ));
        }
        let local = flat(dir, a.frozen_a)?;
        if local.shapes != global.shapes || local.frozen.len() != global.frozen.len() {
            return Err(TrainError::file(
                &dir.join(WEIGHTS),
                "tensors (names or shapes) other than the global adapter's",
            ));
        }
        if let Some((name, _)) = local
            .frozen
            .iter()
            .find(|(name, v)| global.frozen.get(*name) != Some(*v))
        {
            return Err(TrainError::file(
                &dir.join(WEIGHTS),
                format!("{name} differs from the global adapter's: not trained with lora.freeze_a"),
            ));
        }
        locals.push(local.values);
    }
    let views: Vec<&[f32]> = locals.iter().map(Vec::as_slice).collect();
    let mean = mean_clipped_update(&global.values, &views, &weights, a.clip);
    let sigma = noise_std(a.noise_multiplier, a.clip, &weights);
    let mut rng = ChaCha20Rng::seed_from_u64(a.seed);
    let next: Vec<f32> = global
        .values
        .iter()
        .zip(&mean)
        .map(|(g, m)| {
            let noise: f64 = if sigma > 0.0 {
                let z: f64 = StandardNormal.sample(&mut rng);
                sigma * z
            } else {
                0.0
            };
            (f64::from(*g) + m + noise) as f32
        })
        .collect();
    write(&a.global, &a.out, &global, next)?;
    let total: f64 = weights.iter().sum();
    let report = Aggregated {
        participants: a.locals.len(),
        weights: weights.iter().map(|w| w / total).collect(),
        clip: a.clip,
        noise_multiplier: a.noise_multiplier,
        noise_std: sigma,
        elements: global.values.len(),
    };
    let json = serde_json::to_vec_pretty(&report).map_err(|e| TrainError::Data(e.to_string()))?;
    std::fs::write(a.out.join("federate.json"), json)?;
    Ok(report)
}

fn write(global_dir: &Path, out: &Path, global: &Flat, values: Vec<f32>) -> Result<()> {
    std::fs::create_dir_all(out)?;
    std::fs::copy(global_dir.join(CONFIG), out.join(CONFIG))
        .map_err(|e| TrainError::file(&global_dir.join(CONFIG), e))?;
    let mut tensors = BTreeMap::new();
    let frozen = read_tensors(&global_dir.join(WEIGHTS), &Device::Cpu)?;
    for name in global.frozen.keys() {
        if let Some(t) = frozen.get(name) {
            tensors.insert(name.clone(), t.clone());
        }
    }
    let mut at = 0;
    for (name, dims) in &global.shapes {
        let n: usize = dims.iter().product();
        let t = Tensor::from_slice(&values[at..at + n], dims.as_slice(), &Device::Cpu)?;
        tensors.insert(name.clone(), t);
        at += n;
    }
    save_safetensors(&tensors, &out.join(WEIGHTS))
}
