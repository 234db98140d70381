//! Attention off the CPU's fused kernel (on a GPU, in bf16): the composed ops of
//! [`super::ops::attention`] run on one packed sequence and one key/value group (its query
//! heads) at a time, recording no graph, and the backward recomputes each chunk
//! ([`super::checkpoint`]). The largest tensor is one chunk's `[group, T, T]` scores (fp32
//! for the softmax), never the batch's `[B, H, T, T]`; the step keeps only `qkv` and the
//! output, as the fused kernel does.

use std::sync::Arc;

use candle_core::{Result, Tensor, Var};

use super::checkpoint::{Recompute, checkpoint};
use super::fused::AttentionShape;
use super::ops;

/// Causal grouped-query attention with RoPE on `qkv [N, (H + 2·KV)·d]` of the packed
/// sequences of `shape`, chunked; see the module.
///
/// # Errors
/// Shapes that disagree.
pub fn chunked(qkv: &Tensor, shape: &AttentionShape, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    // One mask for the longest sequence: its top-left block is a shorter one's.
    let mask = ops::causal_mask(shape.longest(), shape.window, qkv.dtype(), qkv.device())?;
    checkpoint(
        qkv,
        Arc::new(Chunks {
            shape: shape.clone(),
            cos: cos.clone(),
            sin: sin.clone(),
            mask,
        }),
    )
}

struct Chunks {
    shape: AttentionShape,
    cos: Tensor,
    sin: Tensor,
    mask: Tensor,
}

impl Chunks {
    /// Query heads per key/value head.
    fn group(&self) -> usize {
        self.shape.heads / self.shape.kv_heads
    }

    /// The columns of key/value group `g` in a row of `qkv`: its query heads, its key head,
    /// its value head, as `(first column, width)`.
    fn columns(&self, g: usize) -> [(usize, usize); 3] {
        let (d, group, heads, kv) = (
            self.shape.head_dim,
            self.group(),
            self.shape.heads,
            self.shape.kv_heads,
        );
        [
            (g * group * d, group * d),
            ((heads + g) * d, d),
            ((heads + kv + g) * d, d),
        ]
    }

    /// Group `g` of the sequence at rows `first..first + len` of `qkv`: `[len, (group + 2)·d]`.
    fn part(&self, qkv: &Tensor, (first, len): (usize, usize), g: usize) -> Result<Tensor> {
        let rows = qkv.narrow(0, first, len)?;
        let pieces = self
            .columns(g)
            .map(|(start, width)| rows.narrow(1, start, width));
        Tensor::cat(&pieces.into_iter().collect::<Result<Vec<_>>>()?, 1)
    }

    /// Attention of one part: `[len, group·d]`.
    fn attend(&self, part: &Tensor) -> Result<Tensor> {
        let len = part.dim(0)?;
        let shape = AttentionShape {
            heads: self.group(),
            kv_heads: 1,
            ..self.shape.clone()
        };
        let prefix = |t: &Tensor| t.narrow(0, 0, len);
        ops::attention_masked(
            part,
            &shape,
            &prefix(&self.cos)?,
            &prefix(&self.sin)?,
            &prefix(&self.mask)?.narrow(1, 0, len)?,
        )
    }
}

impl Recompute for Chunks {
    fn forward(&self, qkv: &Tensor) -> Result<Tensor> {
        let mut outputs = Vec::with_capacity(self.shape.lengths.len());
        for sequence in self.shape.sequences() {
            let groups = (0..self.shape.kv_heads)
                .map(|g| self.attend(&self.part(qkv, sequence, g)?))
                .collect::<Result<Vec<_>>>()?;
            outputs.push(Tensor::cat(&groups, 1)?);
        }
        Tensor::cat(&outputs, 0)
    }

    fn backward(&self, qkv: &Tensor, grad: &Tensor) -> Result<Tensor> {
        let d = self.shape.head_dim;
        let width = self.group() * d;
        let mut outputs = Vec::with_capacity(self.shape.lengths.len());
        for sequence @ (first, len) in self.shape.sequences() {
            let grad_rows = grad.narrow(0, first, len)?;
            // Gradients of each group's queries, keys and values, assembled into `qkv`'s
            // column order: all query heads, then all key heads, then all value heads.
            let mut pieces: [Vec<Tensor>; 3] = Default::default();
            for g in 0..self.shape.kv_heads {
                let part = Var::from_tensor(&self.part(qkv, sequence, g)?.detach())?;
                let y = self.attend(part.as_tensor())?;
                let seed = grad_rows.narrow(1, g * width, width)?.detach();
                let grads = (y * seed)?.sum_all()?.backward()?;
                let dpart = grads.get(part.as_tensor()).ok_or_else(|| {
                    candle_core::Error::Msg("chunked attention: no input gradient".into())
                })?;
                for (k, (start, len)) in [(0, width), (width, d), (width + d, d)]
                    .into_iter()
                    .enumerate()
                {
                    pieces[k].push(dpart.narrow(1, start, len)?);
                }
            }
            let columns = pieces
                .iter()
                .map(|p| Tensor::cat(p, 1))
                .collect::<Result<Vec<_>>>()?;
            outputs.push(Tensor::cat(&columns, 1)?);
        }
        Tensor::cat(&outputs, 0)
    }
}
