//! `config.json` of a Hugging Face causal LM — the Qwen2 (Qwen2.5), Qwen3 and Llama families —
//! read as `transformers` reads it, in both its 4.x and 5.x spellings, and written back as it
//! was.
//!
//! Every field the three families' modelling code reads is either implemented or refused with
//! the field and its value named; nothing that changes the function is defaulted silently. An
//! absent field takes the default of the family's config class in transformers (what a model
//! without it means there), listed in `docs/training.md`. The file's own JSON is kept and
//! written back with the weights, so a checkpoint's config says exactly what it was trained
//! with. The training service reads it too, to plan a run before it submits the job.

mod rope;

use serde_json::{Map, Value, json};

pub use rope::{Rope, RopeScaling, yarn_attention_factor};

/// The model families the decoder implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `Qwen2ForCausalLM` (Qwen2, Qwen2.5): q/k/v biases.
    Qwen2,
    /// `Qwen3ForCausalLM`: RMSNorm of each query and key head, biases per `attention_bias`.
    Qwen3,
    /// `LlamaForCausalLM` (Llama 2, 3, 3.1, 3.2, 3.3).
    Llama,
}

impl Family {
    fn of(model_type: &str) -> Option<Self> {
        match model_type {
            "qwen2" => Some(Self::Qwen2),
            "qwen3" => Some(Self::Qwen3),
            "llama" => Some(Self::Llama),
            _ => None,
        }
    }

    /// The `architectures` entry of the family's causal LM.
    #[must_use]
    pub fn architecture(self) -> &'static str {
        match self {
            Self::Qwen2 => "Qwen2ForCausalLM",
            Self::Qwen3 => "Qwen3ForCausalLM",
            Self::Llama => "LlamaForCausalLM",
        }
    }
}

/// What the forward needs of `config.json`, resolved, and the file's JSON as it was.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The family (`model_type`).
    pub family: Family,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the MLP.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (grouped-query attention).
    pub num_key_value_heads: usize,
    /// Per-head width.
    pub head_dim: usize,
    /// Vocabulary rows of the embedding.
    pub vocab_size: usize,
    /// ε of every RMSNorm.
    pub rms_norm_eps: f64,
    /// The longest position the model was trained for (the default `max_seq_len`).
    pub max_position_embeddings: usize,
    /// The output head shares the embedding matrix.
    pub tie_word_embeddings: bool,
    /// Biases on q/k/v.
    pub qkv_bias: bool,
    /// A bias on the attention's output projection.
    pub o_bias: bool,
    /// Biases on the MLP's projections.
    pub mlp_bias: bool,
    /// RMSNorm of each query and key head before RoPE (Qwen3).
    pub qk_norm: bool,
    /// Rotary embeddings.
    pub rope: Rope,
    /// Per layer: the sliding window of its attention (`None`: full causal attention).
    pub windows: Vec<Option<usize>>,
    /// The embedding row that receives no gradient (`nn.Embedding`'s `padding_idx`).
    pub pad_token_id: Option<u32>,
    eos: Vec<u32>,
    json: Map<String, Value>,
}

/// Fields whose value changes the function and that no family here implements other than at
/// this value.
const REFUSED: [(&str, &str); 2] = [
    ("quantization_config", "quantized weights are not supported"),
    ("attention_chunk_size", "chunked attention is not supported"),
];

/// Reads one field of a config object, naming it in every error.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn value(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn usize(&self, key: &str) -> Result<Option<usize>, String> {
        self.value(key)
            .map(|v| {
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| format!("{key}: {v} is not a non-negative integer"))
            })
            .transpose()
    }

    fn required(&self, key: &str) -> Result<usize, String> {
        self.usize(key)?
            .ok_or_else(|| format!("{key}: missing (the tensor shapes depend on it)"))
    }

    fn f64(&self, key: &str) -> Result<Option<f64>, String> {
        self.value(key)
            .map(|v| {
                v.as_f64()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| format!("{key}: {v} is not a number"))
            })
            .transpose()
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, String> {
        self.value(key)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| format!("{key}: {v} is not true or false"))
            })
            .transpose()
    }

    fn str(&self, key: &str) -> Result<Option<&str>, String> {
        self.value(key)
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| format!("{key}: {v} is not a string"))
            })
            .transpose()
    }
}

impl ModelConfig {
    /// Parses a config object.
    ///
    /// # Errors
    /// `field: reason` for the first field the decoder cannot honour.
    pub fn from_json(value: Value) -> Result<Self, String> {
        let Value::Object(json) = value else {
            return Err("(root): not a JSON object".into());
        };
        let f = Fields(&json);
        let model_type = f
            .str("model_type")?
            .ok_or("model_type: missing (it names the architecture)")?;
        let family = Family::of(model_type)
            .ok_or_else(|| format!("model_type: {model_type} is not one of qwen2, qwen3, llama"))?;
        if let Some(archs) = f.value("architectures") {
            let names: Vec<&str> = archs
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !names.contains(&family.architecture()) {
                return Err(format!(
                    "architectures: {archs} does not name {} (model_type {model_type})",
                    family.architecture()
                ));
            }
        }
        for (key, reason) in REFUSED {
            if let Some(v) = f.value(key) {
                return Err(format!("{key}: {v}: {reason}"));
            }
        }
        let act = f.str("hidden_act")?.unwrap_or("silu");
        if act != "silu" {
            return Err(format!("hidden_act: {act} is not silu"));
        }
        if f.bool("is_causal")? == Some(false) {
            return Err("is_causal: false: bidirectional attention is not supported".into());
        }
        let dropout = f.f64("attention_dropout")?.unwrap_or(0.0);
        if dropout != 0.0 {
            return Err(format!(
                "attention_dropout: {dropout}: dropout on attention weights is not implemented (only 0)"
            ));
        }
        let hidden_size = f.required("hidden_size")?;
        let num_attention_heads = f.required("num_attention_heads")?;
        let num_hidden_layers = f.required("num_hidden_layers")?;
        let default_kv = match family {
            Family::Llama => num_attention_heads,
            Family::Qwen2 | Family::Qwen3 => 32,
        };
        let num_key_value_heads = f.usize("num_key_value_heads")?.unwrap_or(default_kv);
        let head_dim = match (f.usize("head_dim")?, family) {
            (Some(d), _) => d,
            (None, Family::Qwen3) => 128,
            (None, _) => hidden_size / num_attention_heads.max(1),
        };
        let attention_bias = f.bool("attention_bias")?.unwrap_or(false);
        let max_position_embeddings = f.usize("max_position_embeddings")?.unwrap_or(match family {
            Family::Llama => 2048,
            Family::Qwen2 | Family::Qwen3 => 32768,
        });
        let config = Self {
            family,
            hidden_size,
            intermediate_size: f.required("intermediate_size")?,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            vocab_size: f.required("vocab_size")?,
            rms_norm_eps: f.f64("rms_norm_eps")?.unwrap_or(1e-6),
            max_position_embeddings,
            tie_word_embeddings: f.bool("tie_word_embeddings")?.unwrap_or(false),
            qkv_bias: family == Family::Qwen2 || attention_bias,
            o_bias: family != Family::Qwen2 && attention_bias,
            mlp_bias: family == Family::Llama && f.bool("mlp_bias")?.unwrap_or(false),
            qk_norm: family == Family::Qwen3,
            rope: rope(&f, max_position_embeddings)?,
            windows: windows(&f, family, num_hidden_layers)?,
            pad_token_id: f
                .usize("pad_token_id")?
                .map(|id| u32::try_from(id).unwrap_or(u32::MAX)),
            eos: token_ids(f.value("eos_token_id")),
            json,
        };
        config.check()?;
        Ok(config)
    }

    /// Rejects shapes the decoder cannot compute.
    fn check(&self) -> Result<(), String> {
        let heads = self.num_attention_heads;
        if heads == 0
            || self.num_key_value_heads == 0
            || !heads.is_multiple_of(self.num_key_value_heads)
        {
            return Err(format!(
                "num_key_value_heads: {} does not divide num_attention_heads {heads}",
                self.num_key_value_heads
            ));
        }
        if self.head_dim == 0 || !self.head_dim.is_multiple_of(2) {
            return Err(format!(
                "head_dim: {}: RoPE needs a positive even head width",
                self.head_dim
            ));
        }
        if self.vocab_size == 0 || self.num_hidden_layers == 0 || self.intermediate_size == 0 {
            return Err(
                "vocab_size, num_hidden_layers, intermediate_size: must be positive".into(),
            );
        }
        if self
            .pad_token_id
            .is_some_and(|p| p as usize >= self.vocab_size)
        {
            return Err(format!(
                "pad_token_id: {:?} is not below vocab_size {}",
                self.pad_token_id, self.vocab_size
            ));
        }
        Ok(())
    }

    /// Key/value heads.
    #[must_use]
    pub fn num_kv_heads(&self) -> usize {
        self.num_key_value_heads
    }

    /// Per-head width.
    #[must_use]
    pub fn head_dim(&self) -> usize {
        self.head_dim
    }

    /// The end-of-sequence ids named by the config.
    #[must_use]
    pub fn eos_ids(&self) -> Vec<u32> {
        self.eos.clone()
    }

    /// The config as written with weights stored in `dtype` (`float32`, `bfloat16`): the
    /// file's JSON as it was read, but for its dtype entry (`dtype`, or `torch_dtype` in
    /// configs written by transformers 4).
    #[must_use]
    pub fn to_json(&self, dtype: &str) -> Value {
        let mut json = self.json.clone();
        let key = if json.contains_key("torch_dtype") && !json.contains_key("dtype") {
            "torch_dtype"
        } else {
            "dtype"
        };
        json.insert(key.into(), json!(dtype));
        Value::Object(json)
    }

    /// A small Qwen2 for tests and the demo (`transformers` loads it as `Qwen2ForCausalLM`).
    ///
    /// # Errors
    /// Sizes no model can have (a zero, heads that do not divide).
    pub fn tiny_qwen2(
        vocab_size: usize,
        hidden: usize,
        layers: usize,
        heads: usize,
        kv_heads: usize,
    ) -> Result<Self, String> {
        Self::from_json(json!({
            "architectures": ["Qwen2ForCausalLM"],
            "model_type": "qwen2",
            "hidden_size": hidden,
            "intermediate_size": hidden * 3,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "num_key_value_heads": kv_heads,
            "vocab_size": vocab_size,
            "rms_norm_eps": 1e-6,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10_000.0},
            "max_position_embeddings": 512,
            "tie_word_embeddings": true,
            "hidden_act": "silu",
            "use_sliding_window": false,
        }))
    }

    /// A copy with each `(key, value)` set in the JSON, fields resolved anew (tests and the
    /// demo adjust the tiny configs this way).
    ///
    /// # Errors
    /// The changed config is invalid.
    pub fn with(&self, changes: &[(&str, Value)]) -> Result<Self, String> {
        let mut json = self.json.clone();
        for (key, value) in changes {
            json.insert((*key).into(), value.clone());
        }
        Self::from_json(Value::Object(json))
    }
}

/// Token ids of an `eos_token_id` entry: one id or a list.
#[must_use]
pub fn token_ids(value: Option<&Value>) -> Vec<u32> {
    let id = |v: &Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
    match value {
        Some(Value::Array(ids)) => ids.iter().filter_map(id).collect(),
        Some(v) => id(v).into_iter().collect(),
        None => Vec::new(),
    }
}

/// RoPE as transformers resolves it (`convert_rope_params_to_dict`, `standardize_rope_params`):
/// the parameters from `rope_scaling` (transformers 4) or else `rope_parameters` (5); θ from
/// the parameters, else the top-level `rope_theta`, else 10,000; the pre-training length of
/// `llama3` and `yarn` from a top-level `original_max_position_embeddings`, else the
/// parameters', else `max_position_embeddings`.
fn rope(f: &Fields<'_>, max_positions: usize) -> Result<Rope, String> {
    let (field, params) = match (f.value("rope_scaling"), f.value("rope_parameters")) {
        (Some(v), _) if v.as_object().is_some_and(|o| !o.is_empty()) => ("rope_scaling", v),
        (_, Some(v)) => ("rope_parameters", v),
        _ => ("rope_parameters", &Value::Null),
    };
    let empty = Map::new();
    let params = match params {
        Value::Object(o) => o,
        Value::Null => &empty,
        other => return Err(format!("{field}: {other} is not an object")),
    };
    let p = Fields(params);
    for (at, fields) in [("", f), (field, &p)] {
        if let Some(v) = fields.value("partial_rotary_factor")
            && v.as_f64() != Some(1.0)
        {
            let at = if at.is_empty() {
                String::new()
            } else {
                format!("{at}.")
            };
            return Err(format!(
                "{at}partial_rotary_factor: {v}: RoPE on part of a head is not supported"
            ));
        }
    }
    if params.values().any(Value::is_object) {
        return Err(format!(
            "{field}: RoPE parameters per layer type are not supported"
        ));
    }
    let named = |e: String| format!("{field}.{e}");
    let theta = match p.f64("rope_theta").map_err(named)? {
        Some(theta) => theta,
        None => f.f64("rope_theta")?.unwrap_or(10_000.0),
    };
    if theta <= 1.0 {
        return Err(format!("{field}.rope_theta: {theta} must exceed 1"));
    }
    let kind = match p.str("rope_type").map_err(named)? {
        Some(kind) => kind,
        None => p.str("type").map_err(named)?.unwrap_or("default"),
    };
    let original = || -> Result<f64, String> {
        Ok(match f.f64("original_max_position_embeddings")? {
            Some(top) => top,
            None => p
                .f64("original_max_position_embeddings")
                .map_err(named)?
                .unwrap_or(max_positions as f64),
        })
    };
    let factor = |required: bool| -> Result<Option<f64>, String> {
        let factor = p.f64("factor").map_err(named)?;
        match factor {
            Some(x) if x < 1.0 => Err(format!("{field}.factor: {x} must be at least 1")),
            None if required => Err(format!("{field}.factor: missing for rope_type {kind}")),
            _ => Ok(factor),
        }
    };
    let scaling = match kind {
        "default" => RopeScaling::Default,
        "linear" => RopeScaling::Linear {
            factor: factor(true)?.unwrap_or(1.0),
        },
        "llama3" => {
            let need = |key: &str| {
                p.f64(key)
                    .map_err(named)?
                    .ok_or_else(|| format!("{field}.{key}: missing for rope_type llama3"))
            };
            let (low, high) = (need("low_freq_factor")?, need("high_freq_factor")?);
            if low <= 0.0 || high <= low {
                return Err(format!(
                    "{field}.high_freq_factor: {high} must exceed low_freq_factor {low} > 0"
                ));
            }
            RopeScaling::Llama3 {
                factor: factor(true)?.unwrap_or(1.0),
                low_freq_factor: low,
                high_freq_factor: high,
                original_max_position_embeddings: original()?,
            }
        }
        "yarn" => {
            let original = original()?;
            let factor = factor(false)?.unwrap_or(max_positions as f64 / original);
            let attention_factor = match p.f64("attention_factor").map_err(named)? {
                Some(a) => a,
                None => yarn_attention_factor(
                    factor,
                    p.f64("mscale").map_err(named)?,
                    p.f64("mscale_all_dim").map_err(named)?,
                ),
            };
            // `or` in transformers: a 0 takes the default too.
            let beta = |key: &str, default: f64| -> Result<f64, String> {
                Ok(p.f64(key)
                    .map_err(named)?
                    .filter(|&b| b != 0.0)
                    .unwrap_or(default))
            };
            RopeScaling::Yarn {
                factor,
                original_max_position_embeddings: original,
                attention_factor,
                beta_fast: beta("beta_fast", 32.0)?,
                beta_slow: beta("beta_slow", 1.0)?,
                truncate: p.bool("truncate").map_err(named)?.unwrap_or(true),
            }
        }
        other => {
            return Err(format!(
                "{field}.rope_type: {other} is not supported (default, linear, llama3, yarn are)"
            ));
        }
    };
    Ok(Rope { theta, scaling })
}

/// Each layer's sliding window, as Qwen2 and Qwen3 resolve it: `sliding_window` only when
/// `use_sliding_window`; the layers from `layer_types`, else those from `max_window_layers` on.
/// Llama has none.
fn windows(f: &Fields<'_>, family: Family, layers: usize) -> Result<Vec<Option<usize>>, String> {
    if family == Family::Llama {
        if let Some(v) = f.value("sliding_window") {
            return Err(format!(
                "sliding_window: {v}: Llama models have no sliding-window attention"
            ));
        }
        return Ok(vec![None; layers]);
    }
    let enabled = f.bool("use_sliding_window")?.unwrap_or(false);
    let window = if enabled {
        Some(f.usize("sliding_window")?.unwrap_or(4096))
    } else {
        None
    };
    if window == Some(0) {
        return Err("sliding_window: 0 leaves nothing to attend to".into());
    }
    let types: Vec<String> = match f.value("layer_types") {
        Some(v) => {
            let list = v
                .as_array()
                .ok_or_else(|| format!("layer_types: {v} is not a list"))?;
            list.iter()
                .map(|t| {
                    t.as_str()
                        .map(String::from)
                        .ok_or_else(|| format!("layer_types: {t} is not a string"))
                })
                .collect::<Result<_, _>>()?
        }
        None => {
            let from = f.usize("max_window_layers")?.unwrap_or(28);
            (0..layers)
                .map(|i| {
                    if window.is_some() && i >= from {
                        "sliding_attention".into()
                    } else {
                        "full_attention".into()
                    }
                })
                .collect()
        }
    };
    if types.len() != layers {
        return Err(format!(
            "layer_types: {} entries for num_hidden_layers {layers}",
            types.len()
        ));
    }
    types
        .iter()
        .enumerate()
        .map(|(i, t)| match (t.as_str(), window) {
            ("full_attention", _) => Ok(None),
            ("sliding_attention", Some(w)) => Ok(Some(w)),
            ("sliding_attention", None) => Err(format!(
                "layer_types[{i}]: sliding_attention without use_sliding_window and a sliding_window"
            )),
            (other, _) => Err(format!(
                "layer_types[{i}]: {other} is not full_attention or sliding_attention"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qwen2() -> Value {
        json!({
            "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 32,
            "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 40, "rope_theta": 1_000_000.0,
        })
    }

    fn with(mut v: Value, key: &str, value: Value) -> Value {
        v[key] = value;
        v
    }

    #[test]
    fn theta_is_read_in_both_spellings() {
        let v4 = ModelConfig::from_json(qwen2()).unwrap();
        assert_eq!(v4.rope.theta, 1_000_000.0);
        let v5 = ModelConfig::from_json(with(
            qwen2(),
            "rope_parameters",
            json!({"rope_type": "default", "rope_theta": 50_000.0}),
        ))
        .unwrap();
        assert_eq!(v5.rope.theta, 50_000.0);
    }

    #[test]
    fn what_cannot_be_computed_is_refused_naming_the_field_and_value() {
        for (key, value, expect) in [
            (
                "rope_parameters",
                json!({"rope_type": "longrope", "rope_theta": 1e4}),
                "rope_parameters.rope_type: longrope",
            ),
            (
                "rope_scaling",
                json!({"type": "dynamic", "factor": 2.0}),
                "rope_scaling.rope_type: dynamic",
            ),
            (
                "rope_parameters",
                json!({"rope_type": "linear", "rope_theta": 1e4}),
                "rope_parameters.factor: missing",
            ),
            (
                "quantization_config",
                json!({"quant_method": "awq"}),
                "quantization_config",
            ),
            ("attention_dropout", json!(0.1), "attention_dropout: 0.1"),
            ("hidden_act", json!("gelu"), "hidden_act: gelu"),
            ("model_type", json!("mistral"), "model_type: mistral"),
            (
                "partial_rotary_factor",
                json!(0.5),
                "partial_rotary_factor: 0.5",
            ),
            (
                "layer_types",
                json!(["full_attention", "sliding_attention"]),
                "layer_types[1]",
            ),
        ] {
            let e = ModelConfig::from_json(with(qwen2(), key, value)).unwrap_err();
            assert!(e.contains(expect), "{key}: {e}");
        }
    }

    #[test]
    fn sliding_windows_follow_max_window_layers_or_layer_types() {
        let on = with(
            with(qwen2(), "use_sliding_window", json!(true)),
            "sliding_window",
            json!(8),
        );
        let c = ModelConfig::from_json(with(on.clone(), "max_window_layers", json!(1))).unwrap();
        assert_eq!(c.windows, [None, Some(8)]);
        let c = ModelConfig::from_json(with(
            on,
            "layer_types",
            json!(["sliding_attention", "full_attention"]),
        ))
        .unwrap();
        assert_eq!(c.windows, [Some(8), None]);
        // Qwen2.5's configs name a window but leave it off.
        let off = with(qwen2(), "sliding_window", json!(32768));
        assert_eq!(ModelConfig::from_json(off).unwrap().windows, [None, None]);
    }

    #[test]
    fn the_json_is_written_back_as_it_was_but_for_the_dtype() {
        let v = with(
            with(qwen2(), "torch_dtype", json!("bfloat16")),
            "custom",
            json!([1]),
        );
        let c = ModelConfig::from_json(v.clone()).unwrap();
        assert_eq!(
            c.to_json("float32"),
            with(v, "torch_dtype", json!("float32"))
        );
    }
}
