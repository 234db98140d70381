//! The decoder's ops, written with primitives that record a backward pass.
//!
//! candle's fused `rms_norm`, `softmax_last_dim` and `rope` record none: a model built on them
//! trains only its last layers and says nothing (candle issue #2168). Every op here is a
//! composition of differentiable primitives; the max subtracted for stability is detached,
//! since softmax does not depend on it.

use candle_core::{D, DType, Device, Result, Tensor};

use super::fused::AttentionShape;

/// RMSNorm as in `Qwen2RMSNorm`: `w · x / sqrt(mean(x²) + ε)`, computed in at least fp32.
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: f64) -> Result<Tensor> {
    let dtype = x.dtype();
    let x = upcast(x)?;
    let norm = (x.sqr()?.mean_keepdim(D::Minus1)? + eps)?.sqrt()?;
    x.broadcast_div(&norm)?
        .to_dtype(dtype)?
        .broadcast_mul(weight)
}

/// Softmax over the last dimension, computed in at least fp32 and returned in `x`'s dtype
/// (attention weights in bf16 are softmaxed in fp32, as transformers does).
pub fn softmax(x: &Tensor) -> Result<Tensor> {
    let dtype = x.dtype();
    let x = upcast(x)?;
    let max = x.max_keepdim(D::Minus1)?.detach();
    let e = x.broadcast_sub(&max)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(D::Minus1)?)?.to_dtype(dtype)
}

/// Log-softmax over the last dimension, in at least fp32.
pub fn log_softmax(x: &Tensor) -> Result<Tensor> {
    let x = upcast(x)?;
    let max = x.max_keepdim(D::Minus1)?.detach();
    let shifted = x.broadcast_sub(&max)?;
    let log_sum = shifted.exp()?.sum_keepdim(D::Minus1)?.log()?;
    shifted.broadcast_sub(&log_sum)
}

/// `a·b`. bf16 on the CPU, which candle's CPU matmul does not take, multiplies in fp32 and
/// rounds the product back: what a GPU's bf16 matmul gives (fp32 accumulation, bf16 output).
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.device().is_cpu() && a.dtype() == DType::BF16 {
        return a
            .to_dtype(DType::F32)?
            .matmul(&b.to_dtype(DType::F32)?)?
            .to_dtype(DType::BF16);
    }
    a.matmul(b)
}

/// Per row of `logits [N, C]`: the max, `Σ e^(l−max)` and `Σ e^(l−max)·(l−max)` side by side,
/// `[N, 3]`, in at least fp32 (see [`super::fused::chunk_statistics`]), composed.
pub fn chunk_statistics(logits: &Tensor) -> Result<Tensor> {
    let logits = upcast(logits)?;
    let max = logits.max_keepdim(D::Minus1)?;
    let shifted = logits.broadcast_sub(&max)?;
    let e = shifted.exp()?;
    Tensor::cat(
        &[
            max,
            e.sum_keepdim(D::Minus1)?,
            (&e * &shifted)?.sum_keepdim(D::Minus1)?,
        ],
        1,
    )
}

/// `−g[n]·e^(logits[n, j] − lse[n])` (see [`super::fused::chunk_gradient`]), composed.
pub fn chunk_gradient(logits: &Tensor, lse: &Tensor, g: &Tensor) -> Result<Tensor> {
    upcast(logits)?
        .broadcast_sub(&lse.unsqueeze(1)?)?
        .exp()?
        .broadcast_mul(&g.neg()?.unsqueeze(1)?)
}

/// Half-precision inputs are computed in fp32; fp32 and fp64 stay as they are.
pub(crate) fn upcast(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::BF16 | DType::F16 => x.to_dtype(DType::F32),
        _ => Ok(x.clone()),
    }
}

/// `x · cos + rotate_half(x) · sin` for `x` of shape `[B, heads, T, head_dim]`.
pub fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let half = x.dim(D::Minus1)? / 2;
    let x1 = x.narrow(D::Minus1, 0, half)?;
    let x2 = x.narrow(D::Minus1, half, half)?;
    let rotated = Tensor::cat(&[&x2.neg()?, &x1], D::Minus1)?;
    x.broadcast_mul(cos)? + rotated.broadcast_mul(sin)?
}

/// `[T, T]` additive causal mask: 0 where query `i` sees key `j` (`j ≤ i`, and within
/// `window` positions of it), a large negative elsewhere. Finite, not −∞: a fully masked row
/// would otherwise turn into NaN and poison the backward.
pub fn causal_mask(
    len: usize,
    window: Option<usize>,
    dtype: DType,
    device: &Device,
) -> Result<Tensor> {
    let window = window.unwrap_or(len);
    let mask: Vec<f32> = (0..len)
        .flat_map(|i| (0..len).map(move |j| if j > i || i - j >= window { -1e9 } else { 0.0 }))
        .collect();
    Tensor::from_vec(mask, (len, len), device)?.to_dtype(dtype)
}

/// Repeats each key/value head `times` times: `[B, kv, T, d]` → `[B, kv·times, T, d]`.
pub fn repeat_kv(x: &Tensor, times: usize) -> Result<Tensor> {
    if times == 1 {
        return Ok(x.clone());
    }
    let (b, kv, t, d) = x.dims4()?;
    Tensor::cat(&vec![x; times], 2)?.reshape((b, kv * times, t, d))
}

/// The projections side by side of `batch` sequences of `len` positions, `[B·T, (H + 2·KV)·d]`,
/// as queries `[B, H, T, d]` and keys and values `[B, KV, T, d]`.
pub fn split_heads(
    qkv: &Tensor,
    (batch, len): (usize, usize),
    shape: &AttentionShape,
) -> Result<(Tensor, Tensor, Tensor)> {
    let AttentionShape {
        heads,
        kv_heads,
        head_dim,
        ..
    } = *shape;
    let part = |start: usize, n: usize| {
        qkv.narrow(1, start * head_dim, n * head_dim)?
            .reshape((batch, len, n, head_dim))?
            .transpose(1, 2)?
            .contiguous()
    };
    Ok((
        part(0, heads)?,
        part(heads, kv_heads)?,
        part(heads + kv_heads, kv_heads)?,
    ))
}

/// Causal self-attention with RoPE (see [`super::fused::attention`]), composed, one sequence
/// at a time.
pub fn attention(
    qkv: &Tensor,
    shape: &AttentionShape,
    cos: &Tensor,
    sin: &Tensor,
) -> Result<Tensor> {
    let mask = causal_mask(shape.longest(), shape.window, qkv.dtype(), qkv.device())?;
    let outputs = shape
        .sequences()
        .map(|(first, len)| {
            let prefix = |t: &Tensor| t.narrow(0, 0, len);
            attention_masked(
                &qkv.narrow(0, first, len)?,
                shape,
                &prefix(cos)?,
                &prefix(sin)?,
                &prefix(&mask)?.narrow(1, 0, len)?,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&outputs, 0)
}

/// [`attention`] of one sequence, `qkv [T, (H + 2·KV)·d]` with the heads of `shape` (its
/// lengths unread), rotary tables `[T, d]` and its additive `[T, T]` mask made by the caller
/// (the top-left block of one made for a longer sequence is this one's).
pub fn attention_masked(
    qkv: &Tensor,
    shape: &AttentionShape,
    cos: &Tensor,
    sin: &Tensor,
    mask: &Tensor,
) -> Result<Tensor> {
    let (q, k, v) = split_heads(qkv, (1, qkv.dim(0)?), shape)?;
    let group = shape.heads / shape.kv_heads;
    let q = rope(&q, cos, sin)?;
    let k = repeat_kv(&rope(&k, cos, sin)?, group)?;
    let v = repeat_kv(&v, group)?;
    let scale = 1.0 / (shape.head_dim as f64).sqrt();
    let scores = (matmul(&q, &k.t()?.contiguous()?)? * scale)?.broadcast_add(mask)?;
    merge_heads(&matmul(&softmax(&scores)?, &v)?)
}

/// `[B, H, T, d]` → `[B·T, H·d]`.
pub fn merge_heads(y: &Tensor) -> Result<Tensor> {
    let (b, h, t, d) = y.dims4()?;
    y.transpose(1, 2)?.reshape((b * t, h * d))
}

/// `silu(gate) · up` of gate and up side by side (see [`super::fused::swiglu`]), composed.
pub fn swiglu(x: &Tensor) -> Result<Tensor> {
    let half = x.dim(D::Minus1)? / 2;
    x.narrow(D::Minus1, 0, half)?.silu()? * x.narrow(D::Minus1, half, half)?
}
