//! Token log-probabilities over vocabulary chunks, with a backward of their own: the output
//! head's logits exist one chunk of columns at a time, so no `[tokens, vocab]` tensor is ever
//! materialised, in the forward or the backward (a 151,936-token vocabulary costs 0.6 MB of fp32
//! logits per scored token; 4,096 tokens, 2.5 GB, and as much again for their gradient).
//!
//! Forward, per chunk of columns `W_c` of the head: `l = h·W_cᵀ`, each row's max, `Σ e^(l−max)`
//! and `Σ e^(l−max)·(l−max)` ([`super::fused::chunk_statistics`]), combined over chunks into
//! the log-sum-exp and the entropy; the target's logit is `h·W[target]`. Backward, given
//! `g = ∂L/∂logp`: per chunk the logits are recomputed, `dl = −g·softmax`, `dh += dl·W_c`,
//! `dW_c = dlᵀ·h`, and the target's terms `g·W[target]` and `g·h` are added once. The head
//! costs one matmul more than autograd's (the recompute), as Liger's and Apple's
//! cut-cross-entropy kernels do.
//!
//! Everything here is plain tensor ops over detached tensors, so it runs on every device; the
//! training step seeds the rest of its backward with `dh` ([`crate::step`]).

use candle_core::{D, DType, Result, Tensor};

use super::fused::{self, MAX, SUM, WEIGHTED};
use super::ops;
pub use agentrl_core::training::plan::chunk_columns;

/// The head's outputs at the scored rows.
#[derive(Debug, Clone)]
pub struct HeadOutput {
    /// `log π(target)` per row, `[N]`, in at least fp32.
    pub logp: Tensor,
    /// The entropy of each row's distribution, `[N]` (a metric).
    pub entropy: Tensor,
    /// The log-sum-exp of each row's logits, `[N]` (what the backward reuses).
    lse: Tensor,
}

/// Logits of columns `start..start + len` of the head `w [V, H]` at `h [N, H]`.
fn chunk(h: &Tensor, w: &Tensor, start: usize, len: usize) -> Result<Tensor> {
    ops::matmul(h, &w.narrow(0, start, len)?.t()?)
}

/// The statistics dtype: at least fp32.
fn wide(dtype: DType) -> DType {
    match dtype {
        DType::F64 => DType::F64,
        _ => DType::F32,
    }
}

/// The target's logit of each row, `h·W[target]`, computed wide and rounded to the head's
/// dtype (what the chunk's matmul wrote for it), `[N]`.
fn target_logits(h: &Tensor, w: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let dtype = wide(h.dtype());
    let picked = w.index_select(targets, 0)?.to_dtype(dtype)?;
    (h.to_dtype(dtype)? * picked)?
        .sum(D::Minus1)?
        .to_dtype(h.dtype())?
        .to_dtype(dtype)
}

/// `log softmax(h·Wᵀ)[n, targets[n]]` and each row's entropy, for `h [N, H]` and the head
/// `w [V, H]` (both detached, one dtype), u32 `targets [N]`.
///
/// # Errors
/// Shapes that disagree, a target outside the vocabulary.
pub fn forward(h: &Tensor, w: &Tensor, targets: &Tensor) -> Result<HeadOutput> {
    forward_in(h, w, targets, chunk_columns(h.dim(0)?, w.dim(0)?))
}

fn forward_in(h: &Tensor, w: &Tensor, targets: &Tensor, cols: usize) -> Result<HeadOutput> {
    let vocab = w.dim(0)?;
    let mut stats = Vec::with_capacity(vocab.div_ceil(cols));
    for start in (0..vocab).step_by(cols) {
        let logits = chunk(h, w, start, cols.min(vocab - start))?;
        stats.push(fused::chunk_statistics(&logits)?.to_dtype(wide(h.dtype()))?);
    }
    // Chunk k's (mₖ, sₖ, uₖ) relative to the global max M: S = Σ sₖ·e^(mₖ−M),
    // U = Σ e^(mₖ−M)·(uₖ + sₖ·(mₖ−M)); lse = M + ln S, entropy = ln S − U/S.
    let column = |c: usize| -> Result<Tensor> {
        Tensor::cat(
            &stats
                .iter()
                .map(|s| s.narrow(1, c, 1))
                .collect::<Result<Vec<_>>>()?,
            1,
        )
    };
    let (m, s, u) = (column(MAX)?, column(SUM)?, column(WEIGHTED)?);
    let top = m.max_keepdim(1)?;
    let offset = m.broadcast_sub(&top)?;
    let scale = offset.exp()?;
    let total = (&s * &scale)?.sum(1)?;
    let weighted = ((u + (&s * &offset)?)? * &scale)?.sum(1)?;
    let log_total = total.log()?;
    let lse = (top.squeeze(1)? + &log_total)?;
    let entropy = (log_total - (weighted / &total)?)?;
    let logp = (target_logits(h, w, targets)? - &lse)?;
    Ok(HeadOutput { logp, entropy, lse })
}

/// The gradients of `Σ g·logp` (`g = ∂L/∂logp`, `[N]`, the dtype of `out.logp`) with respect
/// to `h` (`[N, H]`, `h`'s dtype) and, when `with_head`, to the head `w` (`[V, H]`, `w`'s dtype).
///
/// # Errors
/// Shapes that disagree.
pub fn backward(
    h: &Tensor,
    w: &Tensor,
    targets: &Tensor,
    out: &HeadOutput,
    g: &Tensor,
    with_head: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let cols = chunk_columns(h.dim(0)?, w.dim(0)?);
    backward_in(h, w, targets, out, g, with_head, cols)
}

fn backward_in(
    h: &Tensor,
    w: &Tensor,
    targets: &Tensor,
    out: &HeadOutput,
    g: &Tensor,
    with_head: bool,
    cols: usize,
) -> Result<(Tensor, Option<Tensor>)> {
    let vocab = w.dim(0)?;
    let dtype = wide(h.dtype());
    let g = g.to_dtype(dtype)?;
    let lse = out.lse.to_dtype(dtype)?;
    // The target's term: ∂logp/∂h = W[target] − Σ softmax·W, ∂logp/∂W[target] = h − …; the
    // products in the head's dtype (bf16 on a GPU), sums wide.
    let mut dh = w
        .index_select(targets, 0)?
        .to_dtype(dtype)?
        .broadcast_mul(&g.unsqueeze(1)?)?;
    let mut dw = Vec::new();
    for start in (0..vocab).step_by(cols) {
        let len = cols.min(vocab - start);
        let dl = fused::chunk_gradient(&chunk(h, w, start, len)?, &lse, &g)?.to_dtype(h.dtype())?;
        dh = (dh + ops::matmul(&dl, &w.narrow(0, start, len)?)?.to_dtype(dtype)?)?;
        if with_head {
            dw.push(ops::matmul(&dl.t()?, h)?);
        }
    }
    let dw = if with_head {
        let own = h
            .to_dtype(dtype)?
            .broadcast_mul(&g.unsqueeze(1)?)?
            .to_dtype(w.dtype())?;
        Some(Tensor::cat(&dw, 0)?.index_add(targets, &own, 0)?)
    } else {
        None
    };
    Ok((dh.to_dtype(h.dtype())?, dw))
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Var};
    use rand::{Rng, SeedableRng};

    use super::*;

    fn random(rng: &mut rand_chacha::ChaCha8Rng, shape: (usize, usize)) -> Var {
        let v: Vec<f64> = (0..shape.0 * shape.1)
            .map(|_| rng.random_range(-2.0..2.0))
            .collect();
        Var::from_tensor(&Tensor::from_vec(v, shape, &Device::Cpu).unwrap()).unwrap()
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f64>()
            .unwrap()
    }

    /// Three chunks of 128 columns, the last partial, on fp64 CPU (the fused kernels), against
    /// autograd through the whole log-softmax.
    #[test]
    fn chunks_equal_the_whole_log_softmax_in_value_and_gradient() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (h, w) = (random(&mut rng, (7, 5)), random(&mut rng, (300, 5)));
        let targets: Vec<u32> = vec![0, 299, 128, 127, 5, 5, 200];
        let targets = Tensor::from_vec(targets, 7, &Device::Cpu).unwrap();
        let g =
            Tensor::from_vec(vec![0.5, -1.0, 2.0, 0.0, 1.0, 1.0, -0.3], 7, &Device::Cpu).unwrap();

        let whole =
            ops::log_softmax(&h.as_tensor().matmul(&w.as_tensor().t().unwrap()).unwrap()).unwrap();
        let picked = whole
            .gather(&targets.unsqueeze(1).unwrap(), 1)
            .unwrap()
            .squeeze(1)
            .unwrap();
        let p = whole.detach().exp().unwrap();
        let entropy = (p * whole.detach()).unwrap().sum(1).unwrap().neg().unwrap();
        let grads = (&picked * &g)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();

        let (hd, wd) = (h.as_tensor().detach(), w.as_tensor().detach());
        let out = forward_in(&hd, &wd, &targets, 128).unwrap();
        assert!(max_diff(&out.logp, &picked) < 1e-12);
        assert!(max_diff(&out.entropy, &entropy) < 1e-12);
        let (dh, dw) = backward_in(&hd, &wd, &targets, &out, &g, true, 128).unwrap();
        assert!(max_diff(&dh, grads.get(h.as_tensor()).unwrap()) < 1e-12);
        assert!(max_diff(&dw.unwrap(), grads.get(w.as_tensor()).unwrap()) < 1e-12);
    }
}
