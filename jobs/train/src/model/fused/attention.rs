//! Causal grouped-query self-attention with RoPE as one CPU kernel and one backward kernel.
//!
//! The composed form is ~14 tensors per layer in the forward (head splits, two RoPEs, the
//! repeated keys and values, scores, scale, mask, softmax, two matmuls, the merge) and twice
//! that in the backward. Here the input is the projections side by side, `[B·T, (H + 2·KV)·d]`
//! (queries, keys, values: what one matmul on the concatenated weights gives), the output is
//! `[B·T, H·d]` (what `o_proj` takes), and the backward writes the gradient of the whole input
//! at once, recomputing the attention weights rather than keeping a `[B, H, T, T]` tensor
//! alive. The rows hold packed sequences of different lengths; each is independent, so they
//! run in parallel and the result does not depend on the thread count.

use std::sync::Arc;

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::matmul::{View, matmul};
use super::{AttentionShape, Float, data, dot, softmax_in_place};

/// The attention's dimensions and the rotary tables `[T, d]` of positions `0..T`, `T` the
/// longest sequence.
#[derive(Debug, Clone)]
pub(super) struct Attention {
    pub shape: AttentionShape,
    pub cos: Arc<Vec<f64>>,
    pub sin: Arc<Vec<f64>>,
}

/// The backward kernel: the attention's input and the output's gradient in, the input's
/// gradient out.
struct AttentionGrad(Attention);

/// Per-kernel views of the shape; `t` below is one sequence's length.
struct Plan<T> {
    d: usize,
    heads: usize,
    kv_heads: usize,
    /// Query heads per key/value head.
    group: usize,
    /// Width of an input row.
    width: usize,
    /// Positions a query sees, itself included (`usize::MAX`: every earlier one).
    window: usize,
    scale: T,
    cos: Vec<T>,
    sin: Vec<T>,
}

impl Attention {
    fn plan<T: Float>(&self, input: &Layout) -> Result<Plan<T>> {
        let (n, width) = input.shape().dims2()?;
        let AttentionShape {
            heads,
            kv_heads,
            head_dim: d,
            window,
            ..
        } = self.shape;
        let table = self.shape.longest() * d;
        if n != self.shape.rows()
            || width != (heads + 2 * kv_heads) * d
            || !heads.is_multiple_of(kv_heads)
            || self.cos.len() < table
            || self.sin.len() < table
        {
            candle_core::bail!("attention: input {n}×{width} does not match its plan");
        }
        let table = |v: &[f64]| v[..table].iter().map(|&x| T::of(x)).collect();
        Ok(Plan {
            d,
            heads,
            kv_heads,
            group: heads / kv_heads,
            width,
            window: window.unwrap_or(usize::MAX).max(1),
            scale: T::of(1.0 / (d as f64).sqrt()),
            cos: table(&self.cos),
            sin: table(&self.sin),
        })
    }

    /// `buf` (rows of `width`) cut into the sequences of the shape.
    fn split<'a, T>(&self, mut buf: &'a mut [T], width: usize) -> Vec<&'a mut [T]> {
        let mut out = Vec::with_capacity(self.shape.lengths.len());
        for &len in self.shape.lengths.iter() {
            let (head, rest) = buf.split_at_mut(len * width);
            out.push(head);
            buf = rest;
        }
        out
    }

    /// [`Self::split`], read-only.
    fn sequences<'a, T>(&self, buf: &'a [T], width: usize) -> Vec<&'a [T]> {
        self.shape
            .sequences()
            .map(|(first, len)| &buf[first * width..(first + len) * width])
            .collect()
    }
}

impl<T: Float> Plan<T> {
    /// Column of the first value of query head `h`, key head `g`, value head `g`.
    fn q_col(&self, h: usize) -> usize {
        h * self.d
    }
    fn k_col(&self, g: usize) -> usize {
        (self.heads + g) * self.d
    }
    fn v_col(&self, g: usize) -> usize {
        (self.heads + self.kv_heads + g) * self.d
    }

    /// RoPE of the head starting at column `col` of one sequence's rows, `[t, d]`; the
    /// transpose (the backward) with `transpose`.
    fn rope(&self, rows: &[T], row_width: usize, col: usize, transpose: bool) -> Vec<T> {
        let (t, d, half) = (rows.len() / row_width, self.d, self.d / 2);
        let mut out = vec![T::default(); t * d];
        for p in 0..t {
            let x = &rows[p * row_width + col..][..d];
            let (cos, sin) = (&self.cos[p * d..][..d], &self.sin[p * d..][..d]);
            let y = &mut out[p * d..][..d];
            for i in 0..half {
                if transpose {
                    y[i] = x[i] * cos[i] + x[i + half] * sin[i + half];
                    y[i + half] = x[i + half] * cos[i + half] - x[i] * sin[i];
                } else {
                    y[i] = x[i] * cos[i] - x[i + half] * sin[i];
                    y[i + half] = x[i + half] * cos[i + half] + x[i] * sin[i + half];
                }
            }
        }
        out
    }

    /// The attention weights `P [t, t]` of rotated queries and keys `[t, d]`: scaled scores
    /// `Q·Kᵀ`, softmax over the keys in each query's window (the `window` positions up to
    /// itself), zero elsewhere.
    fn weights(&self, q: &[T], k: &[T], p: &mut [T]) {
        let (t, d) = (q.len() / self.d, self.d);
        matmul(
            p,
            t,
            View::rows(q, t, d, d),
            View::rows(k, t, d, d).t(),
            false,
        );
        for (i, row) in p.chunks_mut(t).enumerate() {
            let (seen, future) = row.split_at_mut(i + 1);
            future.fill(T::default());
            let (past, seen) = seen.split_at_mut((i + 1).saturating_sub(self.window));
            past.fill(T::default());
            for s in seen.iter_mut() {
                *s = *s * self.scale;
            }
            softmax_in_place(seen);
        }
    }
}

fn forward<T: Float>(op: &Attention, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
    let x = data::<T>(s, l, "attention")?;
    let plan = op.plan::<T>(l)?;
    let (d, width) = (plan.d, plan.width);
    let out_width = plan.heads * d;
    let rows = op.shape.rows();
    let mut out = vec![T::default(); rows * out_width];
    op.split(&mut out, out_width)
        .into_par_iter()
        .zip(op.sequences(x, width))
        .for_each(|(out, rows)| {
            let t = rows.len() / width;
            let mut p = vec![T::default(); t * t];
            for g in 0..plan.kv_heads {
                let k = plan.rope(rows, width, plan.k_col(g), false);
                let v = View::rows(&rows[plan.v_col(g)..], t, d, width);
                for h in g * plan.group..(g + 1) * plan.group {
                    let q = plan.rope(rows, width, plan.q_col(h), false);
                    plan.weights(&q, &k, &mut p);
                    matmul(
                        &mut out[h * d..],
                        out_width,
                        View::rows(&p, t, t, t),
                        v,
                        false,
                    );
                }
            }
        });
    Ok((T::store(out), Shape::from((rows, out_width))))
}

fn backward<T: Float>(
    op: &Attention,
    s: &CpuStorage,
    l: &Layout,
    gs: &CpuStorage,
    gl: &Layout,
) -> Result<(CpuStorage, Shape)> {
    let (x, dy) = (
        data::<T>(s, l, "attention")?,
        data::<T>(gs, gl, "attention")?,
    );
    let plan = op.plan::<T>(l)?;
    let (d, width) = (plan.d, plan.width);
    let dy_width = plan.heads * d;
    let mut dx = vec![T::default(); x.len()];
    op.split(&mut dx, width)
        .into_par_iter()
        .zip(
            op.sequences(x, width)
                .into_par_iter()
                .zip(op.sequences(dy, dy_width)),
        )
        .for_each(|(dx, (rows, dy))| {
            let t = rows.len() / width;
            let (mut p, mut ds) = (vec![T::default(); t * t], vec![T::default(); t * t]);
            let mut dq = vec![T::default(); t * d];
            for g in 0..plan.kv_heads {
                let k = plan.rope(rows, width, plan.k_col(g), false);
                let v = View::rows(&rows[plan.v_col(g)..], t, d, width);
                let mut dk = vec![T::default(); t * d];
                for h in g * plan.group..(g + 1) * plan.group {
                    let q = plan.rope(rows, width, plan.q_col(h), false);
                    plan.weights(&q, &k, &mut p);
                    let pv = View::rows(&p, t, t, t);
                    let dyh = View::rows(&dy[h * d..], t, d, dy_width);
                    // dV += Pᵀ·dY, straight into the value columns (shared by the group).
                    matmul(&mut dx[plan.v_col(g)..], width, pv.t(), dyh, true);
                    // dS = P ⊙ (dY·Vᵀ − Σ P·dY·Vᵀ), scaled back through Q·Kᵀ/√d.
                    matmul(&mut ds, t, dyh, v.t(), false);
                    for (pr, dr) in p.chunks(t).zip(ds.chunks_mut(t)) {
                        let mean = dot(pr, dr);
                        for (dr, &pr) in dr.iter_mut().zip(pr) {
                            *dr = pr * (*dr - mean) * plan.scale;
                        }
                    }
                    let dsv = View::rows(&ds, t, t, t);
                    matmul(&mut dq, d, dsv, View::rows(&k, t, d, d), false);
                    matmul(&mut dk, d, dsv.t(), View::rows(&q, t, d, d), true);
                    scatter(dx, width, plan.q_col(h), &plan.rope(&dq, d, 0, true), d);
                }
                scatter(dx, width, plan.k_col(g), &plan.rope(&dk, d, 0, true), d);
            }
        });
    Ok((T::store(dx), l.shape().clone()))
}

/// Writes the `[t, d]` head `head` into the rows of `out` at column `col`.
fn scatter<T: Float>(out: &mut [T], width: usize, col: usize, head: &[T], d: usize) {
    for (row, src) in out.chunks_mut(width).zip(head.chunks(d)) {
        row[col..col + d].copy_from_slice(src);
    }
}

impl CustomOp1 for Attention {
    fn name(&self) -> &'static str {
        "fused-attention"
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        dispatch!(s, forward(self, s, l))
    }
    fn bwd(&self, x: &Tensor, _: &Tensor, dy: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(x.apply_op2_no_bwd(
            &dy.contiguous()?,
            &AttentionGrad(self.clone()),
        )?))
    }
}

impl CustomOp2 for AttentionGrad {
    fn name(&self) -> &'static str {
        "fused-attention-grad"
    }
    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        g: &CpuStorage,
        lg: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, backward(&self.0, x, lx, g, lg))
    }
}
