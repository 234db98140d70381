//! The decoder of Qwen2, Qwen3 and Llama causal LMs, written for training: Hugging Face tensor
//! names, tied or untied embeddings, grouped-query attention, Qwen3's per-head q/k norms, every
//! RoPE type of [`rope`], sliding-window layers, LoRA adapters, and a forward whose every op
//! has a backward pass ([`ops`]).
//!
//! A training forward takes [`Tokens`]: sequences packed end to end with no padding, each
//! attending only within itself from position 0, so a packed batch computes exactly what each
//! sequence alone would.

pub mod attention;
mod checkpoint;
pub mod config;
pub mod fused;
pub mod kv_cache;
pub mod lora;
pub mod ops;
pub mod rope;
pub mod vocab;
mod weights;

pub use weights::{
    dtype_name, read_adapter_config, read_tensors, remove_weight_files, save_safetensors,
    save_sharded, weight_files,
};

use std::collections::BTreeMap;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor, Var};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use checkpoint::Sink;
pub use config::ModelConfig;
pub use lora::LoraConfig;

use crate::error::Result;
use checkpoint::{Recompute, checkpoint};

/// A loaded model: its config, its tensors by Hugging Face name, optional LoRA adapters, and
/// the variables an optimizer updates.
#[derive(Debug, Clone)]
pub struct Model {
    /// The `config.json` it was built from.
    pub config: ModelConfig,
    tensors: BTreeMap<String, Tensor>,
    lora: Option<lora::Adapters>,
    vars: Vec<(String, Var)>,
    compute: DType,
    /// The dtype the weights were stored in (what outputs are written in).
    stored: DType,
    device: Device,
}

/// Token ids of sequences laid end to end (packed: no padding). Attention stays within each
/// sequence and positions restart at 0 for each.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// The ids, `[N]` u32.
    pub ids: Tensor,
    /// The length of each sequence, in order; they sum to `N`.
    pub lengths: Arc<[usize]>,
}

impl Tokens {
    /// `sequences` packed end to end.
    ///
    /// # Errors
    /// Tensor failures.
    pub fn packed<'a>(
        sequences: impl IntoIterator<Item = &'a [u32]>,
        device: &Device,
    ) -> Result<Self> {
        let (mut ids, mut lengths) = (Vec::new(), Vec::new());
        for s in sequences {
            ids.extend_from_slice(s);
            lengths.push(s.len());
        }
        let n = ids.len();
        Ok(Self {
            ids: Tensor::from_vec(ids, n, device)?,
            lengths: lengths.into(),
        })
    }
}

/// LoRA dropout on the adapter inputs. Each mask is a function of `seed` and the module it
/// masks, so a layer recomputed by activation checkpointing draws the masks it drew before;
/// off the CPU the masks are drawn on the device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dropout {
    /// Probability of zeroing an input.
    pub p: f64,
    /// The masks' seed (one per micro-batch and update).
    pub seed: u64,
}

impl Dropout {
    /// The scaled keep-mask of `x`'s shape for `module`: `1/(1−p)` where kept, 0 elsewhere.
    fn mask(self, module: &str, x: &Tensor) -> candle_core::Result<Tensor> {
        let seed = module
            .bytes()
            .fold(self.seed ^ 0x9e37_79b9_7f4a_7c15, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        let keep = 1.0 - self.p;
        let device = x.device();
        let kept = if device.is_cpu() {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            // P(u < keep·2³²) = keep, one draw a value.
            let threshold = (keep * 4_294_967_296.0) as u64;
            let mask: Vec<u8> = (0..x.elem_count())
                .map(|_| u8::from(u64::from(rng.next_u32()) < threshold))
                .collect();
            Tensor::from_vec(mask, x.shape(), device)?
        } else {
            device.set_seed(seed)?;
            Tensor::rand(0f32, 1f32, x.shape(), device)?.lt(keep)?
        };
        kept.to_dtype(x.dtype())? * (1.0 / keep)
    }
}

impl Model {
    /// A model of plain (not yet trainable) tensors, computing in `dtype`.
    fn untrained(
        config: ModelConfig,
        tensors: BTreeMap<String, Tensor>,
        dtype: DType,
        device: &Device,
    ) -> Self {
        Self {
            config,
            tensors,
            lora: None,
            vars: Vec::new(),
            compute: dtype,
            stored: dtype,
            device: device.clone(),
        }
    }

    /// The model's device.
    #[must_use]
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The dtype the forward computes in (fp32 on CPU; bf16 over fp32 master weights on GPU).
    #[must_use]
    pub fn compute_dtype(&self) -> DType {
        self.compute
    }

    /// Sets the dtype the forward computes in; the stored weights keep theirs.
    pub fn set_compute_dtype(&mut self, dtype: DType) {
        self.compute = dtype;
    }

    /// The trainable variables by name, in name order: all base weights for full fine-tuning,
    /// only the adapters' A and B under LoRA.
    #[must_use]
    pub fn vars(&self) -> &[(String, Var)] {
        &self.vars
    }

    /// The number of scalars in trainable variables.
    #[must_use]
    pub fn trainable_parameters(&self) -> usize {
        self.vars.iter().map(|(_, v)| v.elem_count()).sum()
    }

    /// Makes the model trainable: every base weight a variable (`lora = None`), or frozen base
    /// weights plus fresh adapters on the target modules (A Kaiming-uniform, B zero, so the
    /// model is unchanged at step 0).
    ///
    /// # Errors
    /// A target module that matches no linear layer.
    pub fn make_trainable(&mut self, lora: Option<&LoraConfig>, seed: u64) -> Result<()> {
        self.vars.clear();
        match lora {
            None => {
                self.lora = None;
                for (name, tensor) in &mut self.tensors {
                    let var = Var::from_tensor(&tensor.detach().copy()?)?;
                    *tensor = var.as_tensor().clone();
                    self.vars.push((name.clone(), var));
                }
            }
            Some(config) => {
                let adapters = lora::Adapters::new(config, &self.tensors, seed, &self.device)?;
                self.vars = adapters.vars();
                self.lora = Some(adapters);
            }
        }
        Ok(())
    }

    /// A view of the same weights that records no graph (sampling, evaluation): it shares
    /// storage with `self`, so it sees every optimizer update.
    #[must_use]
    pub fn frozen_view(&self) -> Self {
        Self {
            config: self.config.clone(),
            tensors: self
                .tensors
                .iter()
                .map(|(k, t)| (k.clone(), t.detach()))
                .collect(),
            lora: self.lora.as_ref().map(lora::Adapters::detached),
            vars: Vec::new(),
            compute: self.compute,
            stored: self.stored,
            device: self.device.clone(),
        }
    }

    /// A frozen view for sampling: every weight cast to the compute dtype once, and q/k/v and
    /// gate/up stacked where no adapter sits on them, so that a decoding step casts and
    /// concatenates nothing. It copies: build it again after the weights change.
    ///
    /// # Errors
    /// Out of memory.
    pub fn sampling_view(&self) -> Result<Self> {
        let mut view = self.frozen_view();
        for t in view.tensors.values_mut() {
            *t = t.to_dtype(self.compute)?;
        }
        if let Some(lora) = &mut view.lora {
            *lora = lora.cast(self.compute)?;
        }
        let c = &self.config;
        for layer in 0..c.num_hidden_layers {
            let p = format!("model.layers.{layer}");
            for (modules, bias) in [
                (
                    ["q_proj", "k_proj", "v_proj"]
                        .map(|m| format!("{p}.self_attn.{m}"))
                        .to_vec(),
                    c.qkv_bias,
                ),
                (
                    ["gate_proj", "up_proj"]
                        .map(|m| format!("{p}.mlp.{m}"))
                        .to_vec(),
                    c.mlp_bias,
                ),
            ] {
                if view.adapted(&modules) {
                    continue;
                }
                let key = stacked(&modules);
                let parts = |suffix: &str| -> candle_core::Result<Tensor> {
                    let parts = modules
                        .iter()
                        .map(|m| view.weight(&format!("{m}.{suffix}")))
                        .collect::<candle_core::Result<Vec<_>>>()?;
                    Tensor::cat(&parts, 0)
                };
                let weight = parts("weight")?;
                let bias = if bias { Some(parts("bias")?) } else { None };
                view.tensors.insert(format!("{key}.weight"), weight);
                if let Some(b) = bias {
                    view.tensors.insert(format!("{key}.bias"), b);
                }
            }
        }
        Ok(view)
    }

    /// Whether a LoRA adapter sits on one of `modules`.
    fn adapted(&self, modules: &[String]) -> bool {
        self.lora
            .as_ref()
            .is_some_and(|l| modules.iter().any(|m| l.get(m).is_some()))
    }

    /// An independent frozen copy of the current weights in the compute dtype (the KL
    /// reference for full fine-tuning: 2 bytes a parameter in bf16); under LoRA the base
    /// weights alone, shared, since the adapters start at zero.
    ///
    /// # Errors
    /// Out of memory.
    pub fn reference_copy(&self) -> Result<Self> {
        let tensors = match &self.lora {
            Some(_) => self
                .tensors
                .iter()
                .map(|(k, t)| (k.clone(), t.detach()))
                .collect(),
            None => self
                .tensors
                .iter()
                .map(|(k, t)| Ok((k.clone(), t.detach().to_dtype(self.compute)?.copy()?)))
                .collect::<Result<_>>()?,
        };
        Ok(Self::untrained(
            self.config.clone(),
            tensors,
            self.compute,
            &self.device,
        ))
    }

    fn weight(&self, name: &str) -> candle_core::Result<Tensor> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("missing tensor {name}")))?;
        t.to_dtype(self.compute)
    }

    fn linear(
        &self,
        x: &Tensor,
        module: &str,
        bias: bool,
        dropout: Option<Dropout>,
    ) -> candle_core::Result<Tensor> {
        let w = self.weight(&format!("{module}.weight"))?;
        let mut y = ops::matmul(x, &w.t()?)?;
        if bias {
            y = fused::add_bias(&y, &self.weight(&format!("{module}.bias"))?)?;
        }
        if let Some(adapter) = self.lora.as_ref().and_then(|l| l.get(module)) {
            let input = match dropout {
                Some(d) if d.p > 0.0 => (x * d.mask(module, x)?)?,
                _ => x.clone(),
            };
            y = (y + adapter.apply(&input, self.compute)?)?;
        }
        Ok(y)
    }

    /// The outputs of `modules` side by side, `[N, Σ out]`: one matmul on their concatenated
    /// weights unless one of them carries a LoRA adapter.
    fn linears(
        &self,
        x: &Tensor,
        modules: &[String],
        bias: bool,
        dropout: Option<Dropout>,
    ) -> candle_core::Result<Tensor> {
        let key = stacked(modules);
        if let Some(weight) = self.tensors.get(&format!("{key}.weight")) {
            // A sampling view's: stacked once, in the compute dtype.
            let y = ops::matmul(x, &weight.t()?)?;
            return match self.tensors.get(&format!("{key}.bias")) {
                Some(b) => fused::add_bias(&y, b),
                None => Ok(y),
            };
        }
        if self.adapted(modules) {
            let parts = modules
                .iter()
                .map(|m| self.linear(x, m, bias, dropout))
                .collect::<candle_core::Result<Vec<_>>>()?;
            return Tensor::cat(&parts, 1);
        }
        let stacked = |suffix: &str| {
            let parts = modules
                .iter()
                .map(|m| self.weight(&format!("{m}.{suffix}")))
                .collect::<candle_core::Result<Vec<_>>>()?;
            Tensor::cat(&parts, 0)
        };
        let y = ops::matmul(x, &stacked("weight")?.t()?)?;
        if bias {
            fused::add_bias(&y, &stacked("bias")?)
        } else {
            Ok(y)
        }
    }

    /// The final hidden states `[N, hidden]` (after the last norm) of packed `tokens`.
    ///
    /// # Errors
    /// Ids out of the vocabulary, shape errors.
    pub fn hidden(&self, tokens: &Tokens, dropout: Option<Dropout>) -> Result<Tensor> {
        let (cos, sin) = self.rope_tables(tokens)?;
        Ok(self.decoder(&tokens.ids, dropout, &mut |layer, qkv| {
            fused::attention(
                &qkv,
                &self.attention_shape(&tokens.lengths, layer),
                &cos,
                &sin,
            )
        })?)
    }

    /// [`Self::hidden`] for a training step: with activation checkpointing each decoder layer
    /// keeps only its input for the backward and is recomputed there, its parameters'
    /// gradients going to `sink` (which the caller empties after its backward).
    ///
    /// # Errors
    /// As [`Self::hidden`].
    pub fn hidden_for_training(
        &self,
        tokens: &Tokens,
        dropout: Option<Dropout>,
        checkpointing: bool,
        sink: &Sink,
    ) -> Result<Tensor> {
        if !checkpointing {
            return self.hidden(tokens, dropout);
        }
        let (cos, sin) = self.rope_tables(tokens)?;
        let (model, frozen) = (Arc::new(self.clone()), Arc::new(self.frozen_view()));
        let mut x = self.embed(&tokens.ids)?;
        for layer in 0..self.config.num_hidden_layers {
            let f = Arc::new(Layer {
                model: model.clone(),
                frozen: frozen.clone(),
                layer,
                shape: self.attention_shape(&tokens.lengths, layer),
                cos: cos.clone(),
                sin: sin.clone(),
                dropout,
                sink: sink.clone(),
            });
            x = checkpoint(&x, f)?;
        }
        Ok(fused::rms_norm(
            &x,
            &self.weight("model.norm.weight")?,
            self.config.rms_norm_eps,
        )?)
    }

    /// Rotary tables of positions `0..T`, `T` the longest of `tokens`' sequences.
    fn rope_tables(&self, tokens: &Tokens) -> candle_core::Result<(Tensor, Tensor)> {
        let longest = tokens.lengths.iter().copied().max().unwrap_or(0);
        rope::tables(
            &self.config.rope,
            0..longest,
            self.config.head_dim,
            self.compute,
            &self.device,
        )
    }

    /// The attention dimensions of sequences of `lengths` in `layer`.
    fn attention_shape(&self, lengths: &Arc<[usize]>, layer: usize) -> fused::AttentionShape {
        let c = &self.config;
        fused::AttentionShape {
            lengths: lengths.clone(),
            heads: c.num_attention_heads,
            kv_heads: c.num_kv_heads(),
            head_dim: c.head_dim(),
            window: c.windows[layer],
        }
    }

    /// The token embeddings of `ids` (flat). A config's `pad_token_id` row gets no gradient
    /// from them, as `nn.Embedding(padding_idx)` gives none.
    fn embed(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        let table = self.weight("model.embed_tokens.weight")?;
        let x = table.index_select(ids, 0)?;
        let Some(pad) = self.config.pad_token_id.filter(|_| table.track_op()) else {
            return Ok(x);
        };
        let is_pad: Vec<u8> = ids
            .to_vec1::<u32>()?
            .iter()
            .map(|&t| u8::from(t == pad))
            .collect();
        if !is_pad.contains(&1) {
            return Ok(x);
        }
        let n = is_pad.len();
        let is_pad = Tensor::from_vec(is_pad, (n, 1), ids.device())?.broadcast_as(x.shape())?;
        is_pad.where_cond(&table.detach().index_select(ids, 0)?, &x)
    }

    /// Qwen3's RMSNorm of each query and key head (over `head_dim`) on the projections side by
    /// side; the values pass unchanged.
    fn qk_norm(&self, qkv: &Tensor, attn: &str) -> candle_core::Result<Tensor> {
        let c = &self.config;
        let (n, d) = (qkv.dim(0)?, c.head_dim);
        let (heads, kv) = (c.num_attention_heads, c.num_kv_heads());
        let norm = |first: usize, count: usize, name: &str| {
            let part = qkv
                .narrow(1, first * d, count * d)?
                .contiguous()?
                .reshape((n * count, d))?;
            fused::rms_norm(
                &part,
                &self.weight(&format!("{attn}.{name}.weight"))?,
                c.rms_norm_eps,
            )?
            .reshape((n, count * d))
        };
        Tensor::cat(
            &[
                norm(0, heads, "q_norm")?,
                norm(heads, kv, "k_norm")?,
                qkv.narrow(1, (heads + kv) * d, kv * d)?,
            ],
            1,
        )
    }

    /// The decoder stack on token ids (`N` of them, in any shape), returning the final hidden
    /// states `[N, hidden]`. `attend(layer, qkv)` takes the projections side by side,
    /// `[N, (H + 2·KV)·d]` before RoPE (see [`fused::attention`]), and returns the attention
    /// output `[N, H·d]`: packed causal sequences when training, new tokens after cached ones
    /// when sampling.
    fn decoder(
        &self,
        ids: &Tensor,
        dropout: Option<Dropout>,
        attend: &mut dyn FnMut(usize, Tensor) -> candle_core::Result<Tensor>,
    ) -> candle_core::Result<Tensor> {
        let c = &self.config;
        let mut x = self.embed(&ids.flatten_all()?)?;
        for layer in 0..c.num_hidden_layers {
            x = self.block(layer, &x, dropout, &mut |qkv| attend(layer, qkv))?;
        }
        fused::rms_norm(&x, &self.weight("model.norm.weight")?, c.rms_norm_eps)
    }

    /// Decoder layer `layer` on the residual stream `x [B·T, hidden]`.
    fn block(
        &self,
        layer: usize,
        x: &Tensor,
        dropout: Option<Dropout>,
        attend: &mut dyn FnMut(Tensor) -> candle_core::Result<Tensor>,
    ) -> candle_core::Result<Tensor> {
        let c = &self.config;
        let p = format!("model.layers.{layer}");
        let h = fused::rms_norm(
            x,
            &self.weight(&format!("{p}.input_layernorm.weight"))?,
            c.rms_norm_eps,
        )?;
        let attn = format!("{p}.self_attn");
        let mut qkv = self.linears(
            &h,
            &["q_proj", "k_proj", "v_proj"].map(|m| format!("{attn}.{m}")),
            c.qkv_bias,
            dropout,
        )?;
        if c.qk_norm {
            qkv = self.qk_norm(&qkv, &attn)?;
        }
        let y = attend(qkv)?;
        let x = (x + self.linear(&y, &format!("{attn}.o_proj"), c.o_bias, dropout)?)?;
        let h = fused::rms_norm(
            &x,
            &self.weight(&format!("{p}.post_attention_layernorm.weight"))?,
            c.rms_norm_eps,
        )?;
        let mlp = format!("{p}.mlp");
        let gate_up = self.linears(
            &h,
            &["gate_proj", "up_proj"].map(|m| format!("{mlp}.{m}")),
            c.mlp_bias,
            dropout,
        )?;
        x + self.linear(
            &fused::swiglu(&gate_up)?,
            &format!("{mlp}.down_proj"),
            c.mlp_bias,
            dropout,
        )?
    }

    /// The output head `[vocab, hidden]` in the compute dtype: the embedding when tied.
    ///
    /// # Errors
    /// A missing tensor.
    pub fn head(&self) -> Result<Tensor> {
        Ok(self.weight(self.head_name())?)
    }

    fn head_name(&self) -> &'static str {
        if self.config.tie_word_embeddings {
            "model.embed_tokens.weight"
        } else {
            "lm_head.weight"
        }
    }

    /// The index in [`Self::vars`] of the head's weight when it is trained (full fine-tuning;
    /// under LoRA the head is frozen).
    #[must_use]
    pub fn head_var(&self) -> Option<usize> {
        let name = self.head_name();
        self.vars.iter().position(|(n, _)| n == name)
    }

    /// Logits `[N, vocab]` of the hidden rows `rows` (u32 indices into `hidden`'s first axis):
    /// the output head runs only where a prediction is needed (sampling: one row per
    /// sequence).
    ///
    /// # Errors
    /// Shape errors.
    pub fn logits_at(&self, hidden: &Tensor, rows: &Tensor) -> Result<Tensor> {
        Ok(ops::matmul(
            &hidden.index_select(rows, 0)?,
            &self.head()?.t()?,
        )?)
    }

    /// Log-probabilities of `targets` and the entropies at the hidden rows `rows`, over
    /// vocabulary chunks ([`vocab::forward`]), recording no graph.
    ///
    /// # Errors
    /// Shape errors.
    pub fn token_logprobs(
        &self,
        hidden: &Tensor,
        rows: &Tensor,
        targets: &Tensor,
    ) -> Result<vocab::HeadOutput> {
        let h = hidden.index_select(rows, 0)?.detach();
        Ok(vocab::forward(&h, &self.head()?.detach(), targets)?)
    }
}

/// A decoder layer under activation checkpointing: run without a graph on the frozen view,
/// recomputed with one on the trained model in the backward.
struct Layer {
    model: Arc<Model>,
    frozen: Arc<Model>,
    layer: usize,
    shape: fused::AttentionShape,
    cos: Tensor,
    sin: Tensor,
    dropout: Option<Dropout>,
    sink: Sink,
}

impl Layer {
    fn run(&self, model: &Model, x: &Tensor) -> candle_core::Result<Tensor> {
        model.block(self.layer, x, self.dropout, &mut |qkv| {
            fused::attention(&qkv, &self.shape, &self.cos, &self.sin)
        })
    }
}

impl Recompute for Layer {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        self.run(&self.frozen, x)
    }

    fn backward(&self, x: &Tensor, grad: &Tensor) -> candle_core::Result<Tensor> {
        let input = Var::from_tensor(&x.detach())?;
        let y = self.run(&self.model, input.as_tensor())?;
        let grads = (y * grad.detach())?.sum_all()?.backward()?;
        let prefix = format!("model.layers.{}.", self.layer);
        for (i, (name, var)) in self.model.vars.iter().enumerate() {
            if name.starts_with(&prefix)
                && let Some(g) = grads.get(var.as_tensor())
            {
                self.sink.push(i, g.clone());
            }
        }
        grads
            .get(input.as_tensor())
            .cloned()
            .ok_or_else(|| candle_core::Error::Msg("checkpointed layer: no input gradient".into()))
    }
}

/// The name a sampling view keeps `modules`' stacked weights under (`….q_proj+….k_proj+…`).
fn stacked(modules: &[String]) -> String {
    modules.join("+")
}
