//! Fused CPU kernels with their own backward pass (candle `CustomOp`s): RMSNorm, softmax, the
//! bias row of a linear layer, causal attention with RoPE ([`attention`]), the MLP gate
//! ([`swiglu`]), and the per-row statistics and softmax gradient of a vocabulary chunk
//! ([`super::vocab`]).
//!
//! candle's composed forms allocate a tensor per primitive in the forward and again in the
//! backward; on the small matrices of a training step that overhead, not arithmetic,
//! dominates. Each kernel here is one pass over rows (rayon-parallel, each row independent, so
//! results do not depend on the thread count). Other devices and dtypes use the composed ops
//! of [`super::ops`]; tests check that both agree and that gradients equal finite
//! differences.

use candle_core::{
    CpuStorage, CustomOp1, CustomOp2, CustomOp3, DType, Device, Layout, Result, Shape, Tensor,
};
use rayon::prelude::*;
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};
use std::sync::Arc;

/// The float types the kernels run on.
pub(crate) trait Float:
    Copy
    + Send
    + Sync
    + Default
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + 'static
{
    fn of(x: f64) -> Self;
    fn exp(self) -> Self;
    fn get(self) -> f64;
    fn slice(s: &CpuStorage) -> Option<&[Self]>;
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]>;
    fn store(v: Vec<Self>) -> CpuStorage;
}

impl Float for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
    fn exp(self) -> Self {
        exp_f32(self)
    }
    fn get(self) -> f64 {
        f64::from(self)
    }
    fn slice(s: &CpuStorage) -> Option<&[Self]> {
        match s {
            CpuStorage::F32(v) => Some(v),
            _ => None,
        }
    }
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]> {
        match s {
            CpuStorage::F32(v) => Some(v),
            _ => None,
        }
    }
    fn store(v: Vec<Self>) -> CpuStorage {
        CpuStorage::F32(v)
    }
}

/// `eˣ` in fp32 to within 2 ulp (Cephes' `expf`: x = n·ln 2 + r, a degree-6 polynomial in r,
/// then 2ⁿ from the exponent bits); 0 below e⁻⁸⁶·⁵ (≈ 2·10⁻³⁸), ∞ past the largest finite
/// fp32. Branch-free, so loops of it vectorise where libm's `expf` is a call per element: the
/// kernels' exponentials (softmax rows, sigmoids, a vocabulary per token) were a tenth of a
/// training step.
#[inline]
fn exp_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const LOW: f32 = -86.5;
    const HIGH: f32 = 88.72;
    let clamped = x.clamp(LOW, HIGH);
    // n ∈ [−125, 128].
    // Round to nearest by adding and removing 1.5·2²³ (`round` is a libm call before SSE4.1).
    const ROUND: f32 = 12_582_912.0;
    let n = (clamped * std::f32::consts::LOG2_E + ROUND) - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    // Plain products, not `mul_add`: without FMA enabled at build time that is a libm call.
    let p = ((((1.987_569_2e-4_f32 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2)
        * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * (r * r) + r + 1.0;
    // 2ⁿ as 2ⁿ⁻¹·2: 2¹²⁸ itself is not a finite fp32.
    let half_scale = f32::from_bits(((n as i32 + 126) as u32) << 23);
    if x < LOW {
        0.0
    } else if x > HIGH {
        f32::INFINITY
    } else {
        y * half_scale * 2.0
    }
}

impl Float for f64 {
    fn of(x: f64) -> Self {
        x
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn get(self) -> f64 {
        self
    }
    fn slice(s: &CpuStorage) -> Option<&[Self]> {
        match s {
            CpuStorage::F64(v) => Some(v),
            _ => None,
        }
    }
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]> {
        match s {
            CpuStorage::F64(v) => Some(v),
            _ => None,
        }
    }
    fn store(v: Vec<Self>) -> CpuStorage {
        CpuStorage::F64(v)
    }
}

/// The elements of a contiguous tensor's storage, as `T`.
pub(crate) fn data<'a, T: Float>(
    s: &'a CpuStorage,
    l: &Layout,
    op: &'static str,
) -> Result<&'a [T]> {
    let all =
        T::slice(s).ok_or_else(|| candle_core::Error::Msg(format!("{op}: unexpected dtype")))?;
    Ok(&all[offsets(l, op)?])
}

/// [`data`], writable (the storage of an in-place op).
pub(crate) fn data_mut<'a, T: Float>(
    s: &'a mut CpuStorage,
    l: &Layout,
    op: &'static str,
) -> Result<&'a mut [T]> {
    let all = T::slice_mut(s)
        .ok_or_else(|| candle_core::Error::Msg(format!("{op}: unexpected dtype")))?;
    Ok(&mut all[offsets(l, op)?])
}

fn offsets(l: &Layout, op: &'static str) -> Result<std::ops::Range<usize>> {
    let (a, b) = l
        .contiguous_offsets()
        .ok_or_else(|| candle_core::Error::Msg(format!("{op}: input must be contiguous")))?;
    Ok(a..b)
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

mod attention;
mod matmul;
mod swiglu;

/// `Σ aᵢ·f(bᵢ)` over eight interleaved partial sums, so the loop vectorises (one running sum
/// is a chain the compiler may not reorder).
fn dot_by<T: Float>(a: &[T], b: &[T], f: impl Fn(T) -> T) -> T {
    let mut lanes = [T::default(); 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .fold(T::default(), |acc, (&x, &y)| acc + x * f(y));
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            lanes[i] += x[i] * f(y[i]);
        }
    }
    lanes.into_iter().fold(tail, |acc, l| acc + l)
}

/// `Σ aᵢbᵢ`, vectorised like [`dot_by`].
fn dot<T: Float>(a: &[T], b: &[T]) -> T {
    dot_by(a, b, |y| y)
}

/// `Σ aᵢ`, vectorised like [`dot_by`].
fn sum<T: Float>(a: &[T]) -> T {
    let mut lanes = [T::default(); 8];
    let a8 = a.chunks_exact(8);
    let tail = a8.remainder().iter().fold(T::default(), |acc, &x| acc + x);
    for x in a8 {
        for i in 0..8 {
            lanes[i] += x[i];
        }
    }
    lanes.into_iter().fold(tail, |acc, l| acc + l)
}

/// Causal self-attention with RoPE on the projections side by side, `qkv [N, (H + 2·KV)·d]`
/// (queries, keys, values) of the sequences of `shape`, with rotary tables `[T, d]` of
/// positions `0..T` for the longest ([`super::rope::tables`]): the output `[N, H·d]`. Fused
/// on CPU in fp32 and fp64; elsewhere composed one sequence and one key/value group at a time
/// and recomputed in the backward ([`super::attention::chunked`]), so that no `[B, H, T, T]`
/// tensor exists on any device.
///
/// # Errors
/// Shapes that disagree.
pub fn attention(
    qkv: &Tensor,
    shape: &AttentionShape,
    cos: &Tensor,
    sin: &Tensor,
) -> Result<Tensor> {
    if !fused(qkv) {
        return super::attention::chunked(qkv, shape, cos, sin);
    }
    qkv.contiguous()?.apply_op1(attention::Attention {
        shape: shape.clone(),
        cos: table(cos)?,
        sin: table(sin)?,
    })
}

/// A rotary table as the kernels read it.
fn table(t: &Tensor) -> Result<Arc<Vec<f64>>> {
    Ok(Arc::new(
        t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?,
    ))
}

/// The dimensions of an attention call: sequences laid end to end in the rows of `qkv`
/// (packed, no padding), each attending only within itself from position 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttentionShape {
    /// The length of each sequence, in row order.
    pub lengths: Arc<[usize]>,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Width of a head.
    pub head_dim: usize,
    /// A query attends to at most this many positions, itself included (sliding-window
    /// layers); `None`: to every earlier position.
    pub window: Option<usize>,
}

impl AttentionShape {
    /// Rows of `qkv`: every sequence's positions.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.lengths.iter().sum()
    }

    /// The longest sequence (the rotary tables cover its positions).
    #[must_use]
    pub fn longest(&self) -> usize {
        self.lengths.iter().copied().max().unwrap_or(0)
    }

    /// `(first row, length)` of each sequence.
    pub fn sequences(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.lengths.iter().scan(0, |start, &len| {
            let first = *start;
            *start += len;
            Some((first, len))
        })
    }
}

/// `silu(gate) · up` of `x [N, 2·I]` holding gate and up side by side: `[N, I]`. Fused on
/// CPU, composed elsewhere.
///
/// # Errors
/// An odd width.
pub fn swiglu(x: &Tensor) -> Result<Tensor> {
    if fused(x) {
        x.contiguous()?.apply_op1(swiglu::SwiGlu)
    } else {
        super::ops::swiglu(x)
    }
}

// ---- Bias ---------------------------------------------------------------------------------

/// `y + b` for `y [N, C]` and a bias row `b [C]`. Fused on CPU: the backward sums the
/// gradient's rows in one pass, where `broadcast_add`'s backward is candle's `sum_keepdim`
/// over the rows, which walks them column by column (for the q/k/v biases alone, 12% of the
/// main thread's samples in an 8 × 48 training step). `broadcast_add` elsewhere.
///
/// # Errors
/// A bias whose length is not `y`'s width.
pub fn add_bias(y: &Tensor, b: &Tensor) -> Result<Tensor> {
    if fused(y) && y.dtype() == b.dtype() && y.rank() == 2 && b.rank() == 1 {
        y.contiguous()?.apply_op2(&b.contiguous()?, AddBias)
    } else {
        y.broadcast_add(b)
    }
}

struct AddBias;
struct ColumnSum;

fn add_bias_fwd<T: Float>(
    y: &CpuStorage,
    ly: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<(CpuStorage, Shape)> {
    let (y, b) = (data::<T>(y, ly, "add_bias")?, data::<T>(b, lb, "add_bias")?);
    let (_, width) = ly.shape().dims2()?;
    if b.len() != width {
        candle_core::bail!("add_bias: {width} columns but a bias of {}", b.len());
    }
    let mut out = Vec::with_capacity(y.len());
    for row in y.chunks_exact(width) {
        out.extend(row.iter().zip(b).map(|(&x, &b)| x + b));
    }
    Ok((T::store(out), ly.shape().clone()))
}

impl CustomOp2 for AddBias {
    fn name(&self) -> &'static str {
        "fused-add-bias"
    }
    fn cpu_fwd(
        &self,
        y: &CpuStorage,
        ly: &Layout,
        b: &CpuStorage,
        lb: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(y, add_bias_fwd(y, ly, b, lb))
    }
    fn bwd(
        &self,
        _: &Tensor,
        _: &Tensor,
        _: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let db = dy.contiguous()?.apply_op1_no_bwd(&ColumnSum)?;
        Ok((Some(dy.clone()), Some(db)))
    }
}

/// `Σ_rows x`, `[N, C] → [C]`, row after row (each row's add vectorises across columns).
fn column_sum<T: Float>(x: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
    let x = data::<T>(x, l, "add_bias")?;
    let (_, width) = l.shape().dims2()?;
    let mut sum = vec![T::default(); width];
    for row in x.chunks_exact(width) {
        for (s, &v) in sum.iter_mut().zip(row) {
            *s += v;
        }
    }
    Ok((T::store(sum), Shape::from(width)))
}

impl CustomOp1 for ColumnSum {
    fn name(&self) -> &'static str {
        "fused-column-sum"
    }
    fn cpu_fwd(&self, x: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, column_sum(x, l))
    }
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

/// The largest value of a non-empty row.
fn row_max<T: Float>(row: &[T]) -> T {
    row.iter()
        .copied()
        .fold(row[0], |m, v| if v > m { v } else { m })
}

/// Softmax of a non-empty row, in place.
fn softmax_in_place<T: Float>(row: &mut [T]) {
    let max = row_max(row);
    for v in row.iter_mut() {
        *v = (*v - max).exp();
    }
    let total = sum(row);
    for v in row.iter_mut() {
        *v = *v / total;
    }
}

fn softmax_fwd<T: Float>(x: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
    let x = data::<T>(x, l, "softmax")?;
    let d = l.dims().last().copied().unwrap_or(1);
    let mut y = x.to_vec();
    y.par_chunks_mut(d).for_each(softmax_in_place);
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
            let mean = dot(y, dy);
            for ((dx, &y), &dy) in dx.iter_mut().zip(y).zip(dy) {
                *dx = y * (dy - mean);
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

// ---- vocabulary chunks ----------------------------------------------------------------------

/// `[N, C]` logits of one vocabulary chunk in, `[N, 3]` out: per row the max `m`, `Σ e^(l−m)`
/// and `Σ e^(l−m)·(l−m)`, from one exponential per logit ([`super::vocab`] combines chunks).
struct ChunkStats;

/// Columns of [`ChunkStats`]' output.
pub(crate) const MAX: usize = 0;
pub(crate) const SUM: usize = 1;
pub(crate) const WEIGHTED: usize = 2;

fn chunk_stats<T: Float>(x: &CpuStorage, lx: &Layout) -> Result<(CpuStorage, Shape)> {
    let x = data::<T>(x, lx, "chunk_stats")?;
    let (n, c) = lx.shape().dims2()?;
    let mut out = vec![T::default(); 3 * n];
    out.par_chunks_mut(3).zip(x.par_chunks(c)).for_each_init(
        || vec![T::default(); c],
        |e, (out, row)| {
            let max = row_max(row);
            for (e, &z) in e.iter_mut().zip(row) {
                *e = (z - max).exp();
            }
            out[MAX] = max;
            out[SUM] = sum(e);
            out[WEIGHTED] = dot_by(e, row, |z| z - max);
        },
    );
    Ok((T::store(out), Shape::from((n, 3))))
}

impl CustomOp1 for ChunkStats {
    fn name(&self) -> &'static str {
        "fused-chunk-stats"
    }
    fn cpu_fwd(&self, x: &CpuStorage, lx: &Layout) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, chunk_stats(x, lx))
    }
}

/// Per row of `logits [N, C]`: `[N, 3]` of the max, `Σ e^(l−max)` and `Σ e^(l−max)·(l−max)`,
/// in at least fp32. Fused on CPU, composed elsewhere. No backward (statistics).
///
/// # Errors
/// A logits tensor that is not 2-D.
pub fn chunk_statistics(logits: &Tensor) -> Result<Tensor> {
    if fused(logits) {
        logits.contiguous()?.apply_op1_no_bwd(&ChunkStats)
    } else {
        super::ops::chunk_statistics(logits)
    }
}

/// `−g·e^(l − lse)` of one chunk's logits `[N, C]` and per-row `lse`, `g` `[N]`: the
/// gradient of `Σ g·logp` with respect to the logits but for the target's `+g`.
struct ChunkGrad;

fn chunk_grad<T: Float>(
    x: &CpuStorage,
    lx: &Layout,
    lse: &CpuStorage,
    ll: &Layout,
    g: &CpuStorage,
    lg: &Layout,
) -> Result<(CpuStorage, Shape)> {
    let (x, lse, g) = (
        data::<T>(x, lx, "chunk_grad")?,
        data::<T>(lse, ll, "chunk_grad")?,
        data::<T>(g, lg, "chunk_grad")?,
    );
    let (_, c) = lx.shape().dims2()?;
    let mut dx = vec![T::default(); x.len()];
    dx.par_chunks_mut(c)
        .zip(x.par_chunks(c))
        .enumerate()
        .for_each(|(n, (dx, row))| {
            let (lse, gn) = (lse[n], g[n]);
            for (dx, &z) in dx.iter_mut().zip(row) {
                *dx = -gn * (z - lse).exp();
            }
        });
    Ok((T::store(dx), lx.shape().clone()))
}

impl CustomOp3 for ChunkGrad {
    fn name(&self) -> &'static str {
        "fused-chunk-grad"
    }
    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        lse: &CpuStorage,
        ll: &Layout,
        g: &CpuStorage,
        lg: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, chunk_grad(x, lx, lse, ll, g, lg))
    }
}

/// `−g·softmax` of a chunk: `−g[n]·e^(logits[n, j] − lse[n])`, `[N, C]` in at least fp32
/// (`lse` and `g` in that dtype). Fused on CPU, composed elsewhere.
///
/// # Errors
/// Shapes that disagree.
pub fn chunk_gradient(logits: &Tensor, lse: &Tensor, g: &Tensor) -> Result<Tensor> {
    if fused(logits) {
        logits
            .contiguous()?
            .apply_op3_no_bwd(&lse.contiguous()?, &g.contiguous()?, &ChunkGrad)
    } else {
        super::ops::chunk_gradient(logits, lse, g)
    }
}

#[cfg(test)]
mod tests {
    use super::exp_f32;

    #[test]
    fn fast_exp_is_within_a_few_ulp_of_exp_over_the_whole_fp32_range() {
        let mut worst = 0.0f64;
        for i in -865_000..=887_200 {
            let x = i as f32 * 1e-4;
            let exact = f64::from(x).exp();
            let rel = (f64::from(exp_f32(x)) - exact).abs() / exact;
            worst = worst.max(rel);
        }
        // fp32 rounding alone is up to 6e-8.
        assert!(worst < 2.5e-7, "worst relative error {worst}");
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-1e9), 0.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(89.0), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
    }
}
