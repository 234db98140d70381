//! Loading and saving weights in the Hugging Face layout: `model.safetensors` or shards listed
//! in `model.safetensors.index.json`, tensor names as `transformers` writes them.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde_json::Value;

use super::{Model, ModelConfig};
use crate::error::{Result, TrainError};

/// Every tensor name and shape a model of `config` must have.
fn expected(config: &ModelConfig) -> Vec<(String, Vec<usize>)> {
    let h = config.hidden_size;
    let (q, kv) = (
        config.num_attention_heads * config.head_dim(),
        config.num_kv_heads() * config.head_dim(),
    );
    let i = config.intermediate_size;
    let mut out = vec![
        (
            "model.embed_tokens.weight".into(),
            vec![config.vocab_size, h],
        ),
        ("model.norm.weight".into(), vec![h]),
    ];
    if !config.tie_word_embeddings {
        out.push(("lm_head.weight".into(), vec![config.vocab_size, h]));
    }
    for l in 0..config.num_hidden_layers {
        let p = format!("model.layers.{l}");
        out.push((format!("{p}.input_layernorm.weight"), vec![h]));
        out.push((format!("{p}.post_attention_layernorm.weight"), vec![h]));
        for (name, rows, cols) in [("q_proj", q, h), ("k_proj", kv, h), ("v_proj", kv, h)] {
            out.push((format!("{p}.self_attn.{name}.weight"), vec![rows, cols]));
            if config.qkv_bias {
                out.push((format!("{p}.self_attn.{name}.bias"), vec![rows]));
            }
        }
        if config.qk_norm {
            let d = config.head_dim();
            out.push((format!("{p}.self_attn.q_norm.weight"), vec![d]));
            out.push((format!("{p}.self_attn.k_norm.weight"), vec![d]));
        }
        out.push((format!("{p}.self_attn.o_proj.weight"), vec![h, q]));
        if config.o_bias {
            out.push((format!("{p}.self_attn.o_proj.bias"), vec![h]));
        }
        for (name, rows, cols) in [("gate_proj", i, h), ("up_proj", i, h), ("down_proj", h, i)] {
            out.push((format!("{p}.mlp.{name}.weight"), vec![rows, cols]));
            if config.mlp_bias {
                out.push((format!("{p}.mlp.{name}.bias"), vec![rows]));
            }
        }
    }
    out
}

/// The safetensors files of a model directory: the index's shards, or `model.safetensors`.
pub fn weight_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let index = dir.join("model.safetensors.index.json");
    if index.exists() {
        let text = std::fs::read_to_string(&index).map_err(|e| TrainError::file(&index, e))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| TrainError::file(&index, e))?;
        let map = v
            .get("weight_map")
            .and_then(Value::as_object)
            .ok_or_else(|| TrainError::file(&index, "no weight_map object"))?;
        let mut files: Vec<String> = map
            .values()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        files.sort();
        files.dedup();
        for f in &files {
            if f.contains('/') || f.contains("..") {
                return Err(TrainError::file(
                    &index,
                    format!("shard {f} is outside the model directory"),
                ));
            }
        }
        return Ok(files.into_iter().map(|f| dir.join(f)).collect());
    }
    let single = dir.join("model.safetensors");
    if !single.exists() {
        return Err(TrainError::file(
            &single,
            "missing (nor is there a model.safetensors.index.json)",
        ));
    }
    Ok(vec![single])
}

impl Model {
    /// Loads a model directory in the Hugging Face layout into `dtype` on `device`, one
    /// memory-mapped file at a time, each tensor converted as it is read (a bf16 checkpoint
    /// loaded into bf16 is never widened). A model saved by `transformers` loads unchanged.
    ///
    /// # Errors
    /// A missing or corrupt file, an unsupported architecture, a missing tensor or one of the
    /// wrong shape: each naming the file and tensor.
    pub fn load(dir: &Path, dtype: DType, device: &Device) -> Result<Self> {
        let config = super::config::load(dir)?;
        let shapes: HashMap<String, Vec<usize>> = expected(&config).into_iter().collect();
        let mut tensors = BTreeMap::new();
        let mut stored = None;
        for file in weight_files(dir)? {
            let map = map_file(&file)?;
            for (name, _) in map.tensors() {
                let Some(shape) = shapes.get(&name) else {
                    continue;
                };
                let t = map
                    .load(&name, device)
                    .map_err(|e| TrainError::file(&file, format!("tensor {name}: {e}")))?;
                if t.dims() != shape.as_slice() {
                    return Err(TrainError::file(
                        &file,
                        format!(
                            "tensor {name} has shape {:?}, the config implies {shape:?}",
                            t.dims()
                        ),
                    ));
                }
                stored.get_or_insert(t.dtype());
                tensors.insert(name, t.to_dtype(dtype)?);
            }
        }
        if let Some(name) = shapes.keys().find(|n| !tensors.contains_key(*n)) {
            return Err(TrainError::file(
                &dir.join("model.safetensors"),
                format!("tensor {name} is missing"),
            ));
        }
        let mut model = Self::untrained(config, tensors, dtype, device);
        model.stored = stored.unwrap_or(dtype);
        Ok(model)
    }

    /// A freshly initialised model (weights N(0, 0.02), norms 1, biases 0, as `transformers`
    /// initialises), deterministic in `seed`.
    ///
    /// # Errors
    /// Out of memory.
    pub fn init(config: ModelConfig, seed: u64, dtype: DType, device: &Device) -> Result<Self> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let normal = Normal::new(0.0f32, 0.02).map_err(|e| TrainError::Data(e.to_string()))?;
        let mut tensors = BTreeMap::new();
        for (name, shape) in expected(&config) {
            let n: usize = shape.iter().product();
            let values: Vec<f32> = if name.ends_with("norm.weight") {
                vec![1.0; n]
            } else if name.ends_with(".bias") {
                vec![0.0; n]
            } else {
                (0..n).map(|_| normal.sample(&mut rng)).collect()
            };
            tensors.insert(
                name,
                Tensor::from_vec(values, shape, device)?.to_dtype(dtype)?,
            );
        }
        Ok(Self::untrained(config, tensors, dtype, device))
    }

    /// The base weights by name (adapters merged when `merge_lora`).
    ///
    /// # Errors
    /// Out of memory.
    pub fn state_dict(&self, merge_lora: bool) -> Result<BTreeMap<String, Tensor>> {
        match (&self.lora, merge_lora) {
            (Some(lora), true) => lora.merged(&self.tensors),
            _ => Ok(self
                .tensors
                .iter()
                .map(|(k, t)| (k.clone(), t.detach()))
                .collect()),
        }
    }

    /// Writes `config.json` (the base model's, its dtype entry saying the weights' dtype) and
    /// the weights in the base model's dtype, sharded at `max_shard` bytes as transformers
    /// shards ([`save_sharded`]), to `dir`: loadable by `AutoModelForCausalLM.from_pretrained`.
    /// Under LoRA the adapters are merged.
    ///
    /// # Errors
    /// I/O.
    pub fn save_hf(&self, dir: &Path, max_shard: u64) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        let config = serde_json::to_vec_pretty(&self.config.to_json(dtype_name(self.stored)))
            .map_err(|e| TrainError::Data(e.to_string()))?;
        std::fs::write(dir.join("config.json"), config)?;
        save_sharded(&self.state_dict(true)?, dir, self.stored, max_shard)
    }

    /// Writes the adapter in PEFT's layout; `None` when the model has no adapters.
    ///
    /// # Errors
    /// I/O.
    pub fn save_adapter(&self, dir: &Path, base_model: &str) -> Result<bool> {
        let Some(lora) = &self.lora else {
            return Ok(false);
        };
        std::fs::create_dir_all(dir)?;
        let config = serde_json::to_vec_pretty(&lora.peft_config(base_model))
            .map_err(|e| TrainError::Data(e.to_string()))?;
        std::fs::write(dir.join("adapter_config.json"), config)?;
        let tensors: BTreeMap<String, Tensor> = lora.peft_tensors().into_iter().collect();
        save_safetensors(&tensors, &dir.join("adapter_model.safetensors"))?;
        Ok(true)
    }

    /// Puts the PEFT LoRA adapter of `dir` (`adapter_config.json`, `adapter_model.safetensors`,
    /// as [`Model::save_adapter`] or PEFT writes them) on the model, for serving a version that
    /// is an adapter. PEFT options this model cannot apply as trained (rsLoRA's or DoRA's
    /// scaling, per-module ranks) are refused by name, never approximated.
    ///
    /// # Errors
    /// A missing or malformed file, a refused option, a target that matches no layer.
    pub fn load_adapter(&mut self, dir: &Path) -> Result<()> {
        let config = read_adapter_config(dir)?;
        self.make_trainable(Some(&config), 0)?;
        self.restore(dir)
    }

    /// Loads the adapter in `dir` (PEFT layout) into the adapters [`Model::make_trainable`]
    /// made for `lora`, which must have its shape (rank, α, target modules): a run that starts
    /// from a federated round's global adapter. `lora.freeze_a` keeps the adapter's A.
    ///
    /// # Errors
    /// No `lora` in the run's config, a shape that differs (naming the field), a bad file.
    pub fn start_from_adapter(
        &mut self,
        dir: &Path,
        lora: Option<&super::LoraConfig>,
    ) -> Result<()> {
        let lora =
            lora.ok_or_else(|| TrainError::config("lora", "an initial adapter needs a LoRA run"))?;
        let theirs = read_adapter_config(dir)?;
        for (field, same) in [
            ("lora.rank", theirs.rank == lora.rank),
            ("lora.alpha", theirs.alpha == lora.alpha),
            ("lora.target_modules", {
                let mut a = theirs.target_modules.clone();
                let mut b = lora.target_modules.clone();
                a.sort();
                b.sort();
                a == b
            }),
        ] {
            if !same {
                return Err(TrainError::config(
                    field,
                    format!("differs from the initial adapter's in {}", dir.display()),
                ));
            }
        }
        self.restore(dir)
    }

    /// Restores trainable weights from a checkpoint directory written by this crate.
    ///
    /// # Errors
    /// A missing or mismatching tensor.
    pub fn restore(&mut self, dir: &Path) -> Result<()> {
        match &mut self.lora {
            Some(lora) => {
                let file = dir.join("adapter_model.safetensors");
                lora.load_peft(&read_tensors(&file, &self.device)?)
            }
            None => {
                let mut tensors = HashMap::new();
                for file in weight_files(dir)? {
                    tensors.extend(read_tensors(&file, &self.device)?);
                }
                for (name, var) in &self.vars {
                    let t = tensors.remove(name).ok_or_else(|| {
                        TrainError::file(dir, format!("tensor {name} is missing"))
                    })?;
                    var.set(&t.to_dtype(var.dtype())?)?;
                }
                Ok(())
            }
        }
    }
}

/// The LoRA shape of `dir/adapter_config.json` (PEFT's), refusing options this crate cannot
/// apply as trained.
///
/// # Errors
/// A missing or malformed file, a refused option.
pub fn read_adapter_config(dir: &Path) -> Result<super::LoraConfig> {
    let path = dir.join("adapter_config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| TrainError::file(&path, e))?;
    let peft: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| TrainError::file(&path, e))?;
    lora_config(&peft).map_err(|e| TrainError::file(&path, e))
}

/// The LoRA shape of a PEFT `adapter_config.json`: `r`, `lora_alpha`, `target_modules` (a
/// list of short names); every option that would change what the adapter computes must be at
/// PEFT's default.
fn lora_config(peft: &Value) -> std::result::Result<super::LoraConfig, String> {
    if peft.get("peft_type").and_then(Value::as_str) != Some("LORA") {
        return Err("peft_type: only LORA adapters are served".into());
    }
    let rank = peft
        .get("r")
        .and_then(Value::as_u64)
        .ok_or("r: missing or not a positive integer")?;
    let alpha = peft
        .get("lora_alpha")
        .and_then(Value::as_f64)
        .ok_or("lora_alpha: missing or not a number")?;
    let target_modules = peft
        .get("target_modules")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(|m| m.as_str().map(String::from)).collect())
        .ok_or("target_modules: not a list of module names (a regex is not supported)")?;
    let at_default = |field: &str, ok: fn(&Value) -> bool| match peft.get(field) {
        Some(v) if !ok(v) => Err(format!(
            "{field}: {v} is not supported, only PEFT's default"
        )),
        _ => Ok(()),
    };
    at_default("use_rslora", |v| v == &Value::Bool(false))?;
    at_default("use_dora", |v| v == &Value::Bool(false))?;
    at_default("bias", |v| v == "none")?;
    for field in ["rank_pattern", "alpha_pattern"] {
        at_default(field, |v| {
            v.as_object().is_some_and(serde_json::Map::is_empty)
        })?;
    }
    for field in ["modules_to_save", "layers_to_transform", "layers_pattern"] {
        at_default(field, |v| {
            v.is_null() || v.as_array().is_some_and(Vec::is_empty)
        })?;
    }
    let config = super::LoraConfig {
        rank: usize::try_from(rank).map_err(|_| "r: too large")?,
        alpha,
        dropout: 0.0,
        target_modules,
        freeze_a: false,
    };
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}

/// A safetensors file mapped into memory.
fn map_file(path: &Path) -> Result<candle_core::safetensors::MmapedSafetensors> {
    // SAFETY: a map is unsound only if the file changes while mapped. The files mapped here
    // are a run's inputs (the base model, a checkpoint it wrote and finished: renamed into
    // place complete, never written again) and the map lives only while its tensors are
    // copied out of it (candle's loaders copy each into storage of its own), so no write
    // or truncation can happen under it within this process.
    #[allow(unsafe_code, reason = "memory-mapped weights, see the SAFETY note")]
    let map = unsafe { candle_core::safetensors::MmapedSafetensors::new(path) };
    map.map_err(|e| TrainError::file(path, format!("not a readable safetensors file: {e}")))
}

/// Every tensor of a safetensors file (memory-mapped), or an error naming the file.
///
/// # Errors
/// A missing, truncated or malformed file.
pub fn read_tensors(path: &Path, device: &Device) -> Result<HashMap<String, Tensor>> {
    let map = map_file(path)?;
    map.tensors()
        .into_iter()
        .map(|(name, _)| {
            let t = map
                .load(&name, device)
                .map_err(|e| TrainError::file(path, format!("tensor {name}: {e}")))?;
            Ok((name, t))
        })
        .collect()
}

/// transformers' name of a dtype (`config.json`'s `dtype`).
#[must_use]
pub fn dtype_name(dtype: DType) -> &'static str {
    match dtype {
        DType::BF16 => "bfloat16",
        DType::F16 => "float16",
        DType::F64 => "float64",
        _ => "float32",
    }
}

/// Writes `tensors` in `dtype` to `dir` as transformers shards them: in order, a new file
/// whenever the next tensor would take the current one past `max_shard` bytes (a tensor
/// larger than that alone in its file); one file is `model.safetensors`, more are
/// `model-00001-of-0000N.safetensors` with `model.safetensors.index.json` (`total_size`,
/// `weight_map`). Each shard is converted and written on its own, so the host holds one
/// shard at a time. Weight files of an earlier save in `dir` are removed first.
///
/// # Errors
/// I/O.
pub fn save_sharded(
    tensors: &BTreeMap<String, Tensor>,
    dir: &Path,
    dtype: DType,
    max_shard: u64,
) -> Result<()> {
    remove_weight_files(dir)?;
    let bytes = |t: &Tensor| (t.elem_count() * dtype.size_in_bytes()) as u64;
    let mut shards: Vec<Vec<&String>> = Vec::new();
    let mut size = 0;
    for (name, t) in tensors {
        let b = bytes(t);
        match shards.last_mut() {
            Some(shard) if size + b <= max_shard => shard.push(name),
            _ => {
                shards.push(vec![name]);
                size = 0;
            }
        }
        size += b;
    }
    let n = shards.len();
    let file_name = |i: usize| {
        if n == 1 {
            "model.safetensors".to_owned()
        } else {
            format!("model-{:05}-of-{n:05}.safetensors", i + 1)
        }
    };
    let mut weight_map = serde_json::Map::new();
    for (i, shard) in shards.iter().enumerate() {
        let file = file_name(i);
        let part: BTreeMap<String, Tensor> = shard
            .iter()
            .map(|name| ((*name).clone(), tensors[*name].clone()))
            .collect();
        write_safetensors(&part, &dir.join(&file), dtype)?;
        for name in shard {
            weight_map.insert((*name).clone(), serde_json::json!(file));
        }
    }
    if n > 1 {
        let total: u64 = tensors.values().map(bytes).sum();
        let index =
            serde_json::json!({"metadata": {"total_size": total}, "weight_map": weight_map});
        std::fs::write(
            dir.join("model.safetensors.index.json"),
            serde_json::to_vec_pretty(&index).map_err(|e| TrainError::Data(e.to_string()))?,
        )?;
    }
    Ok(())
}

/// Removes a model directory's weight files (`model.safetensors`, shards and their index),
/// creating the directory if needed.
///
/// # Errors
/// I/O.
pub fn remove_weight_files(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name == "model.safetensors.index.json"
            || (name.starts_with("model") && name.ends_with(".safetensors"))
        {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Writes tensors as fp32 safetensors with the `format: pt` metadata `transformers` checks.
///
/// # Errors
/// I/O.
pub fn save_safetensors(tensors: &BTreeMap<String, Tensor>, path: &Path) -> Result<()> {
    write_safetensors(tensors, path, DType::F32)
}

/// Writes tensors in `dtype` as safetensors with the `format: pt` metadata.
fn write_safetensors(tensors: &BTreeMap<String, Tensor>, path: &Path, dtype: DType) -> Result<()> {
    let converted: Vec<(String, Tensor)> = tensors
        .iter()
        .map(|(k, t)| Ok((k.clone(), t.to_dtype(dtype)?.contiguous()?)))
        .collect::<Result<_>>()?;
    let metadata: HashMap<String, String> = [("format".to_owned(), "pt".to_owned())].into();
    safetensors::serialize_to_file(converted, Some(metadata), path)
        .map_err(|e| TrainError::file(path, e))?;
    Ok(())
}
