//! Fused CPU kernels with their own backward pass (candle `CustomOp`s): RMSNorm, softmax, and
//! the log-probability of target tokens (log-softmax + gather), plus the entropy metric.
//!
//! candle's composed forms allocate a tensor per primitive in the forward and again in the
//! backward; on the small matrices of a training step that overhead, not arithmetic,
//! dominates. Each kernel here is one pass over rows (rayon-parallel, each row independent, so
//! results do not depend on the thread count). The target log-probability never materialises
//! a `[N, vocab]` log-softmax: the forward reads the logits once, the backward writes one
//! gradient. Other devices and dtypes use the composed ops of [`super::ops`]; tests check that
//! both agree and that gradients equal finite differences.

use candle_core::{
    CpuStorage, CustomOp1, CustomOp2, CustomOp3, DType, Device, Layout, Result, Shape, Tensor,
};
use rayon::prelude::*;

/// The float types the kernels run on.
trait Float: Copy + Send + Sync + Default + 'static {
    fn of(x: f64) -> Self;
    fn get(self) -> f64;
    /// `exp(self − shift)` in the type's own precision (f32 `exp` is several times cheaper
    /// than f64's, and fp32 is what the reference computes in).
    fn exp_minus(self, shift: f64) -> f64;
    fn slice(s: &CpuStorage) -> Option<&[Self]>;
    fn store(v: Vec<Self>) -> CpuStorage;
}

impl Float for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
    fn get(self) -> f64 {
        f64::from(self)
    }
    fn exp_minus(self, shift: f64) -> f64 {
        f64::from((self - shift as f32).exp())
    }
    fn slice(s: &CpuStorage) -> Option<&[Self]> {
        match s {
            CpuStorage::F32(v) => Some(v),
            _ => None,
        }
    }
    fn store(v: Vec<Self>) -> CpuStorage {
        CpuStorage::F32(v)
    }
}

impl Float for f64 {
    fn of(x: f64) -> Self {
        x
    }
    fn get(self) -> f64 {
        self
    }
    fn exp_minus(self, shift: f64) -> f64 {
        (self - shift).exp()
    }
    fn slice(s: &CpuStorage) -> Option<&[Self]> {
        match s {
            CpuStorage::F64(v) => Some(v),
            _ => None,
        }
    }
    fn store(v: Vec<Self>) -> CpuStorage {
        CpuStorage::F64(v)
    }
}

fn data<'a, T: Float>(s: &'a CpuStorage, l: &Layout, op: &'static str) -> Result<&'a [T]> {
    let all =
        T::slice(s).ok_or_else(|| candle_core::Error::Msg(format!("{op}: unexpected dtype")))?;
    let (a, b) = l
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::Msg(format!("{op}: input must be contiguous")))?;
    Ok(&all[a..b])
}

fn targets<'a>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [u32]> {
    match s {
        CpuStorage::U32(v) => {
            let (a, b) = l
                .contiguous_offsets()
                .ok_or_else(|| candle_core::Error::Msg("targets must be contiguous".into()))?;
            Ok(&v[a..b])
        }
        _ => Err(candle_core::Error::Msg("targets must be u32".into())),
    }
}

/// Whether `x` runs on the fused kernels.
fn fused(x: &Tensor) -> bool {
    matches!(x.device(), Device::Cpu) && matches!(x.dtype(), DType::F32 | DType::F64)
}

macro_rules! dispatch {
    ($s:expr, $f:ident ( $($arg:expr),* )) => {
        match $s {
            CpuStorage::F32(_) => $f::<f32>($($arg),*),
            CpuStorage::F64(_) => $f::<f64>($($arg),*),
            _ => Err(candle_core::Error::Msg("fused ops run on f32 and f64".into())),
        }
    };
}

// ---- RMSNorm ------------------------------------------------------------------------------

struct RmsNorm(f64);
struct RmsNormGradX(f64);
struct RmsNormGradW(f64);

fn inv_rms<T: Float>(row: &[T], eps: f64) -> f64 {
    let ms = row.iter().map(|x| x.get() * x.get()).sum::<f64>() / row.len() as f64;
    1.0 / (ms + eps).sqrt()
}

fn rms_fwd<T: Float>(
    x: &CpuStorage,
    lx: &Layout,
    w: &CpuStorage,
    lw: &Layout,
    eps: f64,
) -> Result<(CpuStorage, Shape)> {
    let (x, w) = (data::<T>(x, lx, "rms_norm")?, data::<T>(w, lw, "rms_norm")?);
    let d = w.len();
    let mut y = vec![T::default(); x.len()];
    y.par_chunks_mut(d).zip(x.par_chunks(d)).for_each(|(y, x)| {
        let r = inv_rms(x, eps);
        for i in 0..d {
            y[i] = T::of(x[i].get() * r * w[i].get());
        }
    });
    Ok((T::store(y), lx.shape().clone()))
}

impl CustomOp2 for RmsNorm {
    fn name(&self) -> &'static str {
        "fused-rms-norm"
    }
    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        w: &CpuStorage,
        lw: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, rms_fwd(x, lx, w, lw, self.0))
    }
    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let dy = dy.contiguous()?;
        let dx = x.apply_op3_no_bwd(w, &dy, &RmsNormGradX(self.0))?;
        let dw = x.apply_op2_no_bwd(&dy, &RmsNormGradW(self.0))?;
        Ok((Some(dx), Some(dw)))
    }
}

fn rms_grad_x<T: Float>(
    x: &CpuStorage,
    lx: &Layout,
    w: &CpuStorage,
    lw: &Layout,
    dy: &CpuStorage,
    ld: &Layout,
    eps: f64,
) -> Result<(CpuStorage, Shape)> {
    let (x, w, dy) = (
        data::<T>(x, lx, "rms_norm")?,
        data::<T>(w, lw, "rms_norm")?,
        data::<T>(dy, ld, "rms_norm")?,
    );
    let d = w.len();
    let mut dx = vec![T::default(); x.len()];
    dx.par_chunks_mut(d)
        .zip(x.par_chunks(d).zip(dy.par_chunks(d)))
        .for_each(|(dx, (x, dy))| {
            let r = inv_rms(x, eps);
            // dx = r·(g − x̂·mean(g·x̂)), g = dy·w, x̂ = x·r.
            let dot = (0..d)
                .map(|i| dy[i].get() * w[i].get() * x[i].get() * r)
                .sum::<f64>()
                / d as f64;
            for i in 0..d {
                dx[i] = T::of(r * (dy[i].get() * w[i].get() - x[i].get() * r * dot));
            }
        });
    Ok((T::store(dx), lx.shape().clone()))
}

impl CustomOp3 for RmsNormGradX {
    fn name(&self) -> &'static str {
        "fused-rms-norm-grad-x"
    }
    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        w: &CpuStorage,
        lw: &Layout,
        dy: &CpuStorage,
        ld: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, rms_grad_x(x, lx, w, lw, dy, ld, self.0))
    }
}

fn rms_grad_w<T: Float>(
    x: &CpuStorage,
    lx: &Layout,
    dy: &CpuStorage,
    ld: &Layout,
    eps: f64,
) -> Result<(CpuStorage, Shape)> {
    let (x, dy) = (
        data::<T>(x, lx, "rms_norm")?,
        data::<T>(dy, ld, "rms_norm")?,
    );
    let d = lx.dims().last().copied().unwrap_or(1);
    // Fixed chunks summed in order: the same result for any thread count.
    let partials: Vec<Vec<f64>> = x
        .par_chunks(d * 64)
        .zip(dy.par_chunks(d * 64))
        .map(|(x, dy)| {
            let mut acc = vec![0.0; d];
            for (x, dy) in x.chunks(d).zip(dy.chunks(d)) {
                let r = inv_rms(x, eps);
                for i in 0..d {
                    acc[i] += dy[i].get() * x[i].get() * r;
                }
            }
            acc
        })
        .collect();
    let mut dw = vec![0.0; d];
    for p in partials {
        for i in 0..d {
            dw[i] += p[i];
        }
    }
    Ok((
        T::store(dw.into_iter().map(T::of).collect()),
        Shape::from(d),
    ))
}

impl CustomOp2 for RmsNormGradW {
    fn name(&self) -> &'static str {
        "fused-rms-norm-grad-w"
    }
    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        dy: &CpuStorage,
        ld: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, rms_grad_w(x, lx, dy, ld, self.0))
    }
}

/// RMSNorm over the last dimension (fused on CPU).
pub fn rms_norm(x: &Tensor, w: &Tensor, eps: f64) -> Result<Tensor> {
    if fused(x) && x.dtype() == w.dtype() {
        x.contiguous()?.apply_op2(&w.contiguous()?, RmsNorm(eps))
    } else {
        super::ops::rms_norm(x, w, eps)
    }
}

// ---- softmax ------------------------------------------------------------------------------

struct Softmax;
struct SoftmaxGrad;

fn softmax_fwd<T: Float>(x: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
    let x = data::<T>(x, l, "softmax")?;
    let d = l.dims().last().copied().unwrap_or(1);
    let mut y = vec![T::default(); x.len()];
    y.par_chunks_mut(d).zip(x.par_chunks(d)).for_each(|(y, x)| {
        let max = x.iter().map(|v| v.get()).fold(f64::NEG_INFINITY, f64::max);
        let mut sum = 0.0;
        for i in 0..d {
            let e = x[i].exp_minus(max);
            sum += e;
            y[i] = T::of(e);
        }
        for v in y.iter_mut() {
            *v = T::of(v.get() / sum);
        }
    });
    Ok((T::store(y), l.shape().clone()))
}

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "fused-softmax"
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        dispatch!(s, softmax_fwd(s, l))
    }
    fn bwd(&self, _: &Tensor, y: &Tensor, dy: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(y.apply_op2_no_bwd(&dy.contiguous()?, &SoftmaxGrad)?))
    }
}

fn softmax_grad<T: Float>(
    y: &CpuStorage,
    ly: &Layout,
    dy: &CpuStorage,
    ld: &Layout,
) -> Result<(CpuStorage, Shape)> {
    let (y, dy) = (data::<T>(y, ly, "softmax")?, data::<T>(dy, ld, "softmax")?);
    let d = ly.dims().last().copied().unwrap_or(1);
    let mut dx = vec![T::default(); y.len()];
    dx.par_chunks_mut(d)
        .zip(y.par_chunks(d).zip(dy.par_chunks(d)))
        .for_each(|(dx, (y, dy))| {
            let dot: f64 = (0..d).map(|i| y[i].get() * dy[i].get()).sum();
            for i in 0..d {
                dx[i] = T::of(y[i].get() * (dy[i].get() - dot));
            }
        });
    Ok((T::store(dx), ly.shape().clone()))
}

impl CustomOp2 for SoftmaxGrad {
    fn name(&self) -> &'static str {
        "fused-softmax-grad"
    }
    fn cpu_fwd(
        &self,
        y: &CpuStorage,
        ly: &Layout,
        dy: &CpuStorage,
        ld: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(y, softmax_grad(y, ly, dy, ld))
    }
}

/// Softmax over the last dimension (fused on CPU).
pub fn softmax(x: &Tensor) -> Result<Tensor> {
    if fused(x) {
        x.contiguous()?.apply_op1(Softmax)
    } else {
        super::ops::softmax(x)
    }
}

// ---- target log-probabilities -------------------------------------------------------------

struct TargetLogprob;
struct TargetLogprobGrad;
struct Entropy;

fn log_sum_exp<T: Float>(row: &[T]) -> f64 {
    let max = row
        .iter()
        .map(|v| v.get())
        .fold(f64::NEG_INFINITY, f64::max);
    max + row.iter().map(|v| v.exp_minus(max)).sum::<f64>().ln()
}

fn logprob_fwd<T: Float>(
    x: &CpuStorage,
    lx: &Layout,
    t: &CpuStorage,
    lt: &Layout,
) -> Result<(CpuStorage, Shape)> {
    let (x, t) = (data::<T>(x, lx, "target_logprob")?, targets(t, lt)?);
    let v = lx.dims().last().copied().unwrap_or(1);
    if t.iter().any(|&t| t as usize >= v) {
        return Err(candle_core::Error::Msg(
            "target id outside the vocabulary".into(),
        ));
    }
    let out: Vec<T> = x
        .par_chunks(v)
        .zip(t.par_iter())
        .map(|(row, &t)| T::of(row[t as usize].get() - log_sum_exp(row)))
        .collect();
    Ok((T::store(out), Shape::from(t.len())))
}

impl CustomOp2 for TargetLogprob {
    fn name(&self) -> &'static str {
        "fused-target-logprob"
    }
    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        t: &CpuStorage,
        lt: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, logprob_fwd(x, lx, t, lt))
    }
    fn bwd(
        &self,
        x: &Tensor,
        t: &Tensor,
        _: &Tensor,
        g: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            Some(x.apply_op3_no_bwd(t, &g.contiguous()?, &TargetLogprobGrad)?),
            None,
        ))
    }
}

fn logprob_grad<T: Float>(
    x: &CpuStorage,
    lx: &Layout,
    t: &CpuStorage,
    lt: &Layout,
    g: &CpuStorage,
    lg: &Layout,
) -> Result<(CpuStorage, Shape)> {
    let (x, t, g) = (
        data::<T>(x, lx, "target_logprob")?,
        targets(t, lt)?,
        data::<T>(g, lg, "target_logprob")?,
    );
    let v = lx.dims().last().copied().unwrap_or(1);
    let mut dx = vec![T::default(); x.len()];
    dx.par_chunks_mut(v)
        .zip(x.par_chunks(v))
        .enumerate()
        .for_each(|(n, (dx, row))| {
            // d logp[t] / d x = onehot(t) − softmax(x).
            let lse = log_sum_exp(row);
            let gn = g[n].get();
            for i in 0..v {
                dx[i] = T::of(-gn * row[i].exp_minus(lse));
            }
            let k = t[n] as usize;
            dx[k] = T::of(dx[k].get() + gn);
        });
    Ok((T::store(dx), lx.shape().clone()))
}

impl CustomOp3 for TargetLogprobGrad {
    fn name(&self) -> &'static str {
        "fused-target-logprob-grad"
    }
    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        t: &CpuStorage,
        lt: &Layout,
        g: &CpuStorage,
        lg: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, logprob_grad(x, lx, t, lt, g, lg))
    }
}

fn entropy_fwd<T: Float>(x: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
    let x = data::<T>(x, l, "entropy")?;
    let v = l.dims().last().copied().unwrap_or(1);
    let out: Vec<T> = x
        .par_chunks(v)
        .map(|row| {
            let lse = log_sum_exp(row);
            T::of(
                -row.iter()
                    .map(|z| (z.get() - lse) * z.exp_minus(lse))
                    .sum::<f64>(),
            )
        })
        .collect();
    Ok((T::store(out), Shape::from(x.len() / v.max(1))))
}

impl CustomOp1 for Entropy {
    fn name(&self) -> &'static str {
        "fused-entropy"
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        dispatch!(s, entropy_fwd(s, l))
    }
}

/// `log softmax(logits)[n, targets[n]]` for `logits [N, V]` and u32 `targets [N]`, with the
/// entropy of each row (detached): fused on CPU.
pub fn target_logprobs(logits: &Tensor, targets: &Tensor) -> Result<(Tensor, Tensor)> {
    if fused(logits) {
        let logits = logits.contiguous()?;
        let picked = logits.apply_op2(&targets.contiguous()?, TargetLogprob)?;
        let entropy = logits.detach().apply_op1_no_bwd(&Entropy)?;
        Ok((picked, entropy))
    } else {
        let logp = super::ops::log_softmax(logits)?;
        let picked = logp.gather(&targets.unsqueeze(1)?, 1)?.squeeze(1)?;
        let detached = logp.detach();
        let entropy = (detached.exp()? * &detached)?
            .sum(candle_core::D::Minus1)?
            .neg()?;
        Ok((picked, entropy))
    }
}

// ---- RoPE ---------------------------------------------------------------------------------

/// `x·cos + rotate_half(x)·sin` over `[.., T, head_dim]`, or its transpose (the backward):
/// `dy·cos + rotate_halfᵀ(dy·sin)`.
struct Rope {
    cos: std::sync::Arc<Vec<f64>>,
    sin: std::sync::Arc<Vec<f64>>,
    transpose: bool,
}

fn rope_fwd<T: Float>(x: &CpuStorage, l: &Layout, op: &Rope) -> Result<(CpuStorage, Shape)> {
    let x = data::<T>(x, l, "rope")?;
    let dims = l.dims();
    let (t, d) = (dims[dims.len() - 2], dims[dims.len() - 1]);
    if op.cos.len() != t * d {
        return Err(candle_core::Error::Msg(
            "rope: table and input disagree".into(),
        ));
    }
    let half = d / 2;
    let mut y = vec![T::default(); x.len()];
    y.par_chunks_mut(t * d)
        .zip(x.par_chunks(t * d))
        .for_each(|(y, x)| {
            for p in 0..t {
                let (x, y) = (&x[p * d..(p + 1) * d], &mut y[p * d..(p + 1) * d]);
                let (cos, sin) = (&op.cos[p * d..(p + 1) * d], &op.sin[p * d..(p + 1) * d]);
                for i in 0..d {
                    let rotated = match (op.transpose, i < half) {
                        (false, true) => -x[i + half].get() * sin[i],
                        (false, false) => x[i - half].get() * sin[i],
                        (true, true) => x[i + half].get() * sin[i + half],
                        (true, false) => -x[i - half].get() * sin[i - half],
                    };
                    y[i] = T::of(x[i].get() * cos[i] + rotated);
                }
            }
        });
    Ok((T::store(y), l.shape().clone()))
}

impl CustomOp1 for Rope {
    fn name(&self) -> &'static str {
        "fused-rope"
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        dispatch!(s, rope_fwd(s, l, self))
    }
    fn bwd(&self, _: &Tensor, _: &Tensor, dy: &Tensor) -> Result<Option<Tensor>> {
        let transposed = Rope {
            cos: self.cos.clone(),
            sin: self.sin.clone(),
            transpose: !self.transpose,
        };
        Ok(Some(dy.contiguous()?.apply_op1(transposed)?))
    }
}

/// RoPE with the `[T, head_dim]` tables of [`super::ops::rope_tables`] (fused on CPU).
pub fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    if fused(x) {
        let flat = |t: &Tensor| -> Result<std::sync::Arc<Vec<f64>>> {
            Ok(std::sync::Arc::new(
                t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?,
            ))
        };
        x.contiguous()?.apply_op1(Rope {
            cos: flat(cos)?,
            sin: flat(sin)?,
            transpose: false,
        })
    } else {
        super::ops::rope(x, cos, sin)
    }
}
