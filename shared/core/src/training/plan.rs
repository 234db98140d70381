//! A memory plan before anything runs: from `config.json` and the training config alone, what
//! a run will hold at its peak, part by part, the micro-batch that fits a device's memory, and
//! whether the run fits at all (`agentrl train plan`; `train run` plans first and refuses a
//! run that cannot fit, before loading weights).
//!
//! The estimate follows the trainer's own design (fp32 masters, chunked head, checkpointed
//! layers, the composed ops off the CPU), tensor by tensor, in bytes:
//!
//! - `weights`: trained weights as fp32 masters, plus their compute-dtype casts while a step's
//!   graph holds them; frozen weights (a LoRA base) in the compute dtype.
//! - `gradients`: fp32, one set (two from the second micro-batch on: the running sum and the
//!   micro-batch's), plus the head's gradient as it is assembled.
//! - `optimizer`: AdamW's two fp32 moments per trained weight.
//! - `activations`: what the step keeps for the backward per token and layer (every tensor of
//!   the layer's graph, or its input alone under activation checkpointing, plus one layer
//!   recomputed with its gradients).
//! - `logits`: the head's vocabulary chunks and the scored rows.
//! - `kv_cache`: online rollouts' keys and values (`batch_prompts × group_size` episodes of
//!   `max_seq_len` tokens unless the run knows its longest episode).
//! - `reference`: the KL reference of full fine-tuning, in the compute dtype.
//! - `runtime`: the process itself (binary, allocator, thread pools; on a GPU the CUDA
//!   context and cuBLAS workspace).
//!
//! Rollouts and training steps take turns, so the peak is the runtime, weights, optimizer
//! and reference plus the larger of the step's parts (gradients, activations, logits) and
//! the KV cache: `peak_gb` is not the sum of `parts`.

use serde::Serialize;

use super::architecture::ModelConfig;
use super::config::{LORA_MODULES, TrainConfig};

const GIB: f64 = (1u64 << 30) as f64;

/// Bytes of one chunk of the output head's fp32 logits (`tokens × columns × 4`): the trainer
/// computes log-probabilities over the vocabulary a chunk at a time, keeping two such tensors
/// at once in the forward, three in the backward.
const CHUNK_BYTES: usize = 32 << 20;

/// Columns per chunk for `rows` scored tokens: the most whose logits fit [`CHUNK_BYTES`], in
/// multiples of 128 (at least 128), and no more than the vocabulary.
#[must_use]
pub fn chunk_columns(rows: usize, vocab: usize) -> usize {
    let fit = CHUNK_BYTES / (4 * rows.max(1));
    (fit / 128 * 128).max(128).min(vocab.max(1))
}

/// Where the run will train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// A CUDA GPU.
    Cuda,
    /// The CPU.
    Cpu,
}

/// What the run knows of its data beyond the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// The longest sequence trained on or sampled (a micro-batch holds at least one).
    pub longest: usize,
    /// Tokens of one optimizer step (all its micro-batches).
    pub step_tokens: usize,
    /// Online rollouts keep a KV cache between steps.
    pub rollouts: bool,
}

impl Workload {
    /// What the config says, sequences of `longest` tokens: a step of the larger of an SFT
    /// batch and a GRPO batch of groups.
    #[must_use]
    pub fn from_config(config: &TrainConfig, longest: usize, rollouts: bool) -> Self {
        let g = &config.grpo;
        let sequences = config.sft.batch_size.max(g.batch_prompts * g.group_size);
        Self {
            longest,
            step_tokens: sequences * longest,
            rollouts,
        }
    }
}

/// GiB of each part of the peak.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Parts {
    /// The process itself.
    pub runtime: f64,
    /// Weights: fp32 masters, compute-dtype casts and frozen weights.
    pub weights: f64,
    /// Gradients.
    pub gradients: f64,
    /// AdamW's moments.
    pub optimizer: f64,
    /// What a micro-batch keeps for its backward.
    pub activations: f64,
    /// The head's vocabulary chunks.
    pub logits: f64,
    /// Rollouts' keys and values.
    pub kv_cache: f64,
    /// The KL reference.
    pub reference: f64,
}

/// `agentrl train plan`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The estimated peak, GiB.
    pub peak_gb: f64,
    /// Its parts, GiB.
    pub parts: Parts,
    /// The micro-batch chosen (or the config's).
    pub micro_batch_tokens: usize,
    /// The peak fits `memory_gb`.
    pub fits: bool,
    /// The memory planned against, GiB.
    pub memory_gb: f64,
    /// The device.
    pub device: Target,
}

/// Micro-batches the planner tries, largest first.
const CANDIDATES: [usize; 9] = [65_536, 32_768, 16_384, 8_192, 4_096, 2_048, 1_024, 512, 256];

/// Of the memory, what a plan may use: the rest is headroom for the allocator's fragmentation.
const USABLE: f64 = 0.9;

/// Plans a run of `config` on a model of `model` against `memory_gb` of `target` memory.
#[must_use]
pub fn plan(
    model: &ModelConfig,
    config: &TrainConfig,
    target: Target,
    memory_gb: f64,
    workload: Workload,
) -> Plan {
    let longest = workload.longest;
    let estimate = |m: usize| Estimate::new(model, config, target, workload, m).plan(memory_gb);
    if let Some(m) = config.micro_batch_tokens {
        return estimate(m.max(longest));
    }
    CANDIDATES
        .iter()
        .filter(|&&m| m >= longest)
        .map(|&m| estimate(m))
        .find(|p| p.fits)
        .unwrap_or_else(|| estimate(longest.max(CANDIDATES[CANDIDATES.len() - 1])))
}

/// Parameters of the whole model.
#[must_use]
pub fn parameters(m: &ModelConfig) -> f64 {
    let (h, i, v, d) = (
        m.hidden_size as f64,
        m.intermediate_size as f64,
        m.vocab_size as f64,
        m.head_dim as f64,
    );
    let (heads, kv) = (m.num_attention_heads as f64, m.num_key_value_heads as f64);
    let qkv = (heads + 2.0 * kv) * d;
    let per_layer = 2.0 * h
        + h * qkv
        + if m.qkv_bias { qkv } else { 0.0 }
        + heads * d * h
        + if m.o_bias { h } else { 0.0 }
        + 3.0 * h * i
        + if m.mlp_bias { 2.0 * i + h } else { 0.0 }
        + if m.qk_norm { 2.0 * d } else { 0.0 };
    let heads_out = if m.tie_word_embeddings { 1.0 } else { 2.0 };
    heads_out * v * h + h + m.num_hidden_layers as f64 * per_layer
}

/// Parameters the optimizer updates: all, or the adapters'.
#[must_use]
pub fn trained_parameters(m: &ModelConfig, config: &TrainConfig) -> f64 {
    let Some(lora) = &config.lora else {
        return parameters(m);
    };
    let per_layer: f64 = LORA_MODULES
        .iter()
        .filter(|module| lora.target_modules.iter().any(|t| t == *module))
        .map(|module| {
            let (input, output) = module_shape(m, module);
            lora.rank as f64 * (input + output)
        })
        .sum();
    m.num_hidden_layers as f64 * per_layer
}

/// `(in, out)` widths of a linear layer of a decoder block.
fn module_shape(m: &ModelConfig, module: &str) -> (f64, f64) {
    let (h, i) = (m.hidden_size as f64, m.intermediate_size as f64);
    let (q, kv) = (
        (m.num_attention_heads * m.head_dim) as f64,
        (m.num_key_value_heads * m.head_dim) as f64,
    );
    match module {
        "q_proj" => (h, q),
        "k_proj" | "v_proj" => (h, kv),
        "o_proj" => (q, h),
        "gate_proj" | "up_proj" => (h, i),
        _ => (i, h),
    }
}

/// The inputs of one estimate.
struct Estimate<'a> {
    model: &'a ModelConfig,
    config: &'a TrainConfig,
    target: Target,
    workload: Workload,
    tokens: usize,
}

impl<'a> Estimate<'a> {
    fn new(
        model: &'a ModelConfig,
        config: &'a TrainConfig,
        target: Target,
        workload: Workload,
        tokens: usize,
    ) -> Self {
        Self {
            model,
            config,
            target,
            workload,
            tokens,
        }
    }

    /// Bytes of the compute dtype.
    fn compute(&self) -> f64 {
        if self.config.dtype.bf16_on(self.target) {
            2.0
        } else {
            4.0
        }
    }

    fn checkpointing(&self) -> bool {
        self.config.checkpointing(self.target)
    }

    fn parameters(&self) -> f64 {
        parameters(self.model)
    }

    fn trained(&self) -> f64 {
        trained_parameters(self.model, self.config)
    }

    fn module_shape(&self, module: &str) -> (f64, f64) {
        module_shape(self.model, module)
    }

    /// Elements a decoder layer's graph keeps per token (every tensor of the forward, as
    /// candle's graph holds them until the backward).
    fn layer_elements(&self) -> f64 {
        let m = self.model;
        let (h, i, d) = (
            m.hidden_size as f64,
            m.intermediate_size as f64,
            m.head_dim as f64,
        );
        let (heads, kv) = (m.num_attention_heads as f64, m.num_key_value_heads as f64);
        let qkv = (heads + 2.0 * kv) * d;
        let mut elements = 2.0 * h // the two norms' outputs
            + qkv * if m.qkv_bias { 2.0 } else { 1.0 }
            + if m.qk_norm { 3.0 * qkv } else { 0.0 }
            + heads * d // the attention's output
            + h * if m.o_bias { 2.0 } else { 1.0 }
            + 2.0 * h // the residual sums
            + 2.0 * i * if m.mlp_bias { 2.0 } else { 1.0 }
            + i // silu(gate)·up
            + h * if m.mlp_bias { 2.0 } else { 1.0 };
        if let Some(lora) = &self.config.lora {
            // Per adapted module: x·Aᵀ, its ·Bᵀ, scaled, added; adapted q/k/v (gate/up) are
            // separate products concatenated.
            let r = lora.rank as f64;
            let out = |module: &str| self.module_shape(module).1;
            let targets = |group: &[&str]| {
                lora.target_modules
                    .iter()
                    .any(|t| group.contains(&t.as_str()))
            };
            elements += lora
                .target_modules
                .iter()
                .map(|t| 3.0 * out(t) + r)
                .sum::<f64>();
            if targets(&["q_proj", "k_proj", "v_proj"]) {
                elements += qkv;
            }
            if targets(&["gate_proj", "up_proj"]) {
                elements += 2.0 * i;
            }
        }
        elements
    }

    /// The CPU's fused kernels run (fp32 there); elsewhere the ops are composed.
    fn fused(&self) -> bool {
        self.target == Target::Cpu && self.compute() >= 4.0
    }

    /// The CPU in bf16: each matmul multiplies fp32 copies of its inputs (candle's CPU
    /// matmul has no bf16), and the graph keeps them.
    fn cpu_bf16(&self) -> bool {
        self.target == Target::Cpu && self.compute() < 4.0
    }

    /// Bytes a layer keeps per token beyond its tensors in the compute dtype: off the fused
    /// kernels, the two RMSNorms' fp32 temporaries (the upcast input, its square, the
    /// normalised rows) and `silu(gate)` beside the product; on the CPU in bf16, the fp32
    /// copies of every matmul's input and output.
    fn layer_extra(&self) -> f64 {
        let m = self.model;
        let (h, i, d) = (
            m.hidden_size as f64,
            m.intermediate_size as f64,
            m.head_dim as f64,
        );
        let mut extra = 0.0;
        if !self.fused() {
            extra += 2.0 * 4.0 * 4.0 * h + self.compute() * i;
        }
        if self.cpu_bf16() {
            let (heads, kv) = (m.num_attention_heads as f64, m.num_key_value_heads as f64);
            let qkv = (heads + 2.0 * kv) * d;
            extra += 4.0 * (4.0 * h + qkv + heads * d + 3.0 * i);
            if let Some(lora) = &self.config.lora {
                // Each adapted module: its own product's input, and the adapter's two products.
                let r = lora.rank as f64;
                extra += lora
                    .target_modules
                    .iter()
                    .map(|t| {
                        let (a, b) = self.module_shape(t);
                        4.0 * (2.0 * a + 2.0 * r + b)
                    })
                    .sum::<f64>();
            }
        }
        extra
    }

    fn parts(&self) -> Parts {
        let m = self.model;
        let c = self.compute();
        let (p, t) = (self.parameters(), self.trained());
        let lora = self.config.lora.is_some();
        // Trained weights' casts to the compute dtype, held by the step's graph; on the CPU in
        // bf16 every weight's fp32 copy too.
        let casts = if c < 4.0 { c } else { 0.0 };
        let upcasts = if self.cpu_bf16() { 4.0 * p } else { 0.0 };
        let weights = upcasts
            + if lora {
                c * (p - t) + (4.0 + casts) * t
            } else {
                (4.0 + casts) * p
            };
        // A second set from the second micro-batch on: the running sum and the new one.
        let sets = if self.workload.step_tokens > self.tokens {
            2.0
        } else {
            1.0
        };
        let (v, h) = (m.vocab_size as f64, m.hidden_size as f64);
        // The head's gradient is assembled chunk by chunk, then its target rows are added:
        // one copy of it beyond the gradient itself, for a moment.
        let head_grad = if lora { 0.0 } else { c * v * h };
        let gradients = 4.0 * t * sets + head_grad;
        let optimizer = 8.0 * t;
        // A micro-batch holds no more than the step has.
        let n = self.tokens.min(self.workload.step_tokens.max(1)) as f64;
        let layers = m.num_hidden_layers as f64;
        let layer = n * (c * self.layer_elements() + self.layer_extra());
        // One layer's worth again for the gradients flowing back through it.
        let activations = if self.checkpointing() {
            n * c * h * (layers + 2.0) + 2.0 * layer
        } else {
            layers * layer + layer + n * c * h * 2.0
        };
        let chunk = 4.0 * n * chunk_columns(n as usize, m.vocab_size) as f64;
        let logits = 3.0 * chunk + 3.0 * 4.0 * n * h;
        let kv_cache = if self.workload.rollouts {
            let g = &self.config.grpo;
            let step = g.batch_prompts * g.group_size;
            let episodes = g.max_rollout_rows.map_or(step, |rows| rows.min(step)) as f64;
            episodes
                * self.workload.longest as f64
                * layers
                * 2.0
                * (m.num_key_value_heads * m.head_dim) as f64
                * c
        } else {
            0.0
        };
        let reference = if self.config.grpo.kl_beta > 0.0 && !lora {
            c * p
        } else {
            0.0
        };
        let runtime = match self.target {
            Target::Cpu => 24.0 * 1024.0 * 1024.0,
            Target::Cuda => 0.75 * GIB,
        };
        Parts {
            runtime,
            weights,
            gradients,
            optimizer,
            activations,
            logits,
            kv_cache,
            reference,
        }
    }

    fn plan(&self, memory_gb: f64) -> Plan {
        let b = self.parts();
        let step = b.gradients + b.activations + b.logits;
        let peak = b.runtime + b.weights + b.optimizer + b.reference + step.max(b.kv_cache);
        let gb = |x: f64| (x / GIB * 1000.0).round() / 1000.0;
        Plan {
            peak_gb: gb(peak),
            parts: Parts {
                runtime: gb(b.runtime),
                weights: gb(b.weights),
                gradients: gb(b.gradients),
                optimizer: gb(b.optimizer),
                activations: gb(b.activations),
                logits: gb(b.logits),
                kv_cache: gb(b.kv_cache),
                reference: gb(b.reference),
            },
            micro_batch_tokens: self.tokens,
            fits: peak <= memory_gb * GIB * USABLE,
            memory_gb,
            device: self.target,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;
    use crate::training::config::{LoraConfig, Precision};

    /// Qwen2.5's configs, as their `config.json` says.
    pub(crate) fn qwen25(
        hidden: usize,
        layers: usize,
        heads: usize,
        kv: usize,
        inter: usize,
    ) -> ModelConfig {
        ModelConfig::from_json(json!({"architectures": ["Qwen2ForCausalLM"],
            "model_type": "qwen2", "hidden_size": hidden, "intermediate_size": inter,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
            "vocab_size": 151_936, "max_position_embeddings": 32_768, "rope_theta": 1e6,
            "tie_word_embeddings": hidden < 2048}))
        .unwrap()
    }

    fn workload(config: &TrainConfig) -> Workload {
        Workload::from_config(config, 1024, true)
    }

    #[test]
    fn parameters_are_counted_as_the_models_have_them() {
        let config = TrainConfig::default();
        let count = |model: &ModelConfig| {
            Estimate::new(model, &config, Target::Cuda, workload(&config), 1024).parameters()
        };
        // Qwen2.5-0.5B: 494M parameters, tied; Qwen2.5-7B: 7.62B, untied.
        let small = count(&qwen25(896, 24, 14, 2, 4864));
        assert!((small / 1e6 - 494.0).abs() < 1.0, "{small}");
        let big = count(&qwen25(3584, 28, 28, 4, 18_944));
        assert!((big / 1e9 - 7.62).abs() < 0.01, "{big}");
    }

    #[test]
    fn what_fits_where() {
        let seven = qwen25(3584, 28, 28, 4, 18_944);
        let full = TrainConfig::default();
        // Full fine-tuning of a 7B with AdamW: 16 bytes a parameter before any activation.
        let p = plan(&seven, &full, Target::Cuda, 80.0, workload(&full));
        assert!(!p.fits && p.peak_gb > 100.0, "{p:?}");
        let lora = TrainConfig {
            lora: Some(LoraConfig {
                rank: 16,
                alpha: 32.0,
                dropout: 0.0,
                target_modules: LORA_MODULES.map(String::from).to_vec(),
                freeze_a: false,
            }),
            ..TrainConfig::default()
        };
        let p = plan(&seven, &lora, Target::Cuda, 24.0, workload(&lora));
        assert!(p.fits, "{p:?}");
        assert!(
            p.parts.weights > 14.0 && p.parts.weights < 16.0,
            "a bf16 base: {p:?}"
        );
        // Less memory, a smaller micro-batch; the config's own is kept.
        let roomy = plan(&seven, &lora, Target::Cuda, 80.0, workload(&lora));
        assert!(roomy.micro_batch_tokens > p.micro_batch_tokens);
        let fixed = TrainConfig {
            micro_batch_tokens: Some(2048),
            ..lora.clone()
        };
        assert_eq!(
            plan(&seven, &fixed, Target::Cuda, 80.0, workload(&fixed)).micro_batch_tokens,
            2048
        );
        // Checkpointing is what lets a long micro-batch fit.
        let stored = TrainConfig {
            gradient_checkpointing: Some(false),
            ..fixed.clone()
        };
        let (a, b) = (
            plan(&seven, &fixed, Target::Cuda, 80.0, workload(&fixed)),
            plan(&seven, &stored, Target::Cuda, 80.0, workload(&stored)),
        );
        assert!(
            b.parts.activations > 3.0 * a.parts.activations,
            "{a:?} {b:?}"
        );
        // fp32 doubles the frozen base.
        let fp32 = TrainConfig {
            dtype: Precision::Fp32,
            ..lora
        };
        let c = plan(&seven, &fp32, Target::Cuda, 80.0, workload(&fp32));
        assert!(c.parts.weights > 1.9 * p.parts.weights);
    }
}
