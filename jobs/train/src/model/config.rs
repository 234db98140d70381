//! `config.json` of a Hugging Face causal LM (Qwen2 / Llama families), read and written.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::TrainError;

/// The architectures the decoder implements: same block, Qwen2 adds q/k/v biases.
const ARCHITECTURES: [&str; 2] = ["Qwen2ForCausalLM", "LlamaForCausalLM"];

/// The fields of `config.json` the forward depends on. Unknown fields are kept in `extra` and
/// written back unchanged, so a checkpoint's config is the base model's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// `Qwen2ForCausalLM` or `LlamaForCausalLM`.
    pub architectures: Vec<String>,
    /// `qwen2` or `llama`.
    pub model_type: String,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the MLP.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (grouped-query attention); the query heads when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_key_value_heads: Option<usize>,
    /// Per-head width; `hidden_size / num_attention_heads` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<usize>,
    /// Vocabulary rows of the embedding.
    pub vocab_size: usize,
    /// ε of every RMSNorm.
    pub rms_norm_eps: f64,
    /// Base of the rotary frequencies.
    #[serde(default = "default_rope_theta")]
    pub rope_theta: f64,
    /// Longest position the model was trained for.
    #[serde(default = "default_max_positions")]
    pub max_position_embeddings: usize,
    /// The output head shares the embedding matrix.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Llama: biases on q/k/v/o (Qwen2 always has q/k/v biases).
    #[serde(default)]
    pub attention_bias: bool,
    /// Llama: biases on the MLP projections.
    #[serde(default)]
    pub mlp_bias: bool,
    /// Must be `silu`.
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// Only `null` is supported (plain RoPE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rope_scaling: Option<Value>,
    /// Qwen2's sliding window: only `false` is supported.
    #[serde(default)]
    pub use_sliding_window: bool,
    /// End-of-sequence token id(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eos_token_id: Option<Value>,
    /// Everything else, kept as it was.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_rope_theta() -> f64 {
    10_000.0
}

fn default_max_positions() -> usize {
    2048
}

fn default_act() -> String {
    "silu".into()
}

impl ModelConfig {
    /// Reads and checks `<dir>/config.json`.
    ///
    /// # Errors
    /// A missing or malformed file, an architecture or option the decoder does not implement.
    pub fn load(dir: &Path) -> Result<Self, TrainError> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|e| TrainError::file(&path, e))?;
        let de = &mut serde_json::Deserializer::from_str(&text);
        let config: Self = serde_path_to_error::deserialize(de)
            .map_err(|e| TrainError::file(&path, format!("{}: {}", e.path(), e.inner())))?;
        config.check().map_err(|e| TrainError::file(&path, e))?;
        Ok(config)
    }

    /// Rejects what the decoder would compute wrongly rather than silently.
    ///
    /// # Errors
    /// The field and the reason.
    pub fn check(&self) -> Result<(), String> {
        if !self
            .architectures
            .iter()
            .any(|a| ARCHITECTURES.contains(&a.as_str()))
        {
            return Err(format!(
                "architectures: {:?} is not one of {ARCHITECTURES:?}",
                self.architectures
            ));
        }
        if self.hidden_act != "silu" {
            return Err(format!("hidden_act: {} is not silu", self.hidden_act));
        }
        if self.rope_scaling.as_ref().is_some_and(|v| !v.is_null()) {
            return Err("rope_scaling: only plain RoPE (null) is supported".into());
        }
        if self.use_sliding_window {
            return Err("use_sliding_window: sliding-window attention is not supported".into());
        }
        let heads = self.num_attention_heads;
        if heads == 0 || self.num_kv_heads() == 0 || !heads.is_multiple_of(self.num_kv_heads()) {
            return Err(format!(
                "num_key_value_heads: {} does not divide num_attention_heads {heads}",
                self.num_kv_heads()
            ));
        }
        if self.head_dim.is_none() && !self.hidden_size.is_multiple_of(heads) {
            return Err("hidden_size: not a multiple of num_attention_heads".into());
        }
        if !self.head_dim().is_multiple_of(2) {
            return Err("head_dim: RoPE needs an even head width".into());
        }
        if self.vocab_size == 0 || self.num_hidden_layers == 0 || self.intermediate_size == 0 {
            return Err(
                "vocab_size, num_hidden_layers, intermediate_size: must be positive".into(),
            );
        }
        Ok(())
    }

    /// Key/value heads.
    #[must_use]
    pub fn num_kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    /// Per-head width.
    #[must_use]
    pub fn head_dim(&self) -> usize {
        self.head_dim
            .unwrap_or(self.hidden_size / self.num_attention_heads.max(1))
    }

    /// Whether q/k/v carry biases.
    #[must_use]
    pub fn qkv_bias(&self) -> bool {
        self.model_type == "qwen2" || self.attention_bias
    }

    /// Whether the output projection of attention carries a bias.
    #[must_use]
    pub fn o_bias(&self) -> bool {
        self.model_type != "qwen2" && self.attention_bias
    }

    /// The end-of-sequence ids named by the config.
    #[must_use]
    pub fn eos_ids(&self) -> Vec<u32> {
        match &self.eos_token_id {
            Some(Value::Number(n)) => n.as_u64().map(|n| vec![n as u32]).unwrap_or_default(),
            Some(Value::Array(ids)) => ids
                .iter()
                .filter_map(Value::as_u64)
                .map(|n| n as u32)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A small Qwen2 for tests and the demo (`transformers` loads it as `Qwen2ForCausalLM`).
    #[must_use]
    pub fn tiny_qwen2(
        vocab_size: usize,
        hidden: usize,
        layers: usize,
        heads: usize,
        kv_heads: usize,
    ) -> Self {
        Self {
            architectures: vec!["Qwen2ForCausalLM".into()],
            model_type: "qwen2".into(),
            hidden_size: hidden,
            intermediate_size: hidden * 3,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: Some(kv_heads),
            head_dim: None,
            vocab_size,
            rms_norm_eps: 1e-6,
            rope_theta: 10_000.0,
            max_position_embeddings: 512,
            tie_word_embeddings: true,
            attention_bias: false,
            mlp_bias: false,
            hidden_act: "silu".into(),
            rope_scaling: None,
            use_sliding_window: false,
            eos_token_id: None,
            extra: Map::new(),
        }
    }
}
