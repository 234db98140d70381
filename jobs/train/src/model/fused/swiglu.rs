//! The MLP's gate, `silu(gate) · up`, as one CPU kernel and one backward kernel.
//!
//! The input is the two projections side by side, `[N, 2·I]` (what one matmul on the
//! concatenated `gate_proj` and `up_proj` weights gives); the backward writes the gradient of
//! both halves in one pass from one sigmoid per element, where the composed form allocates
//! five tensors and evaluates the sigmoid twice.

use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use super::{Float, data};

pub(super) struct SwiGlu;
struct SwiGluGrad;

/// Rows per parallel task: enough work to amortise the hand-off.
const ROWS_PER_TASK: usize = 32;

fn sigmoid<T: Float>(x: T) -> T {
    T::of(1.0) / (T::of(1.0) + (-x).exp())
}

fn forward<T: Float>(s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
    let x = data::<T>(s, l, "swiglu")?;
    let (n, width) = l.shape().dims2()?;
    let half = width / 2;
    let mut out = vec![T::default(); n * half];
    out.par_chunks_mut(half * ROWS_PER_TASK)
        .zip(x.par_chunks(width * ROWS_PER_TASK))
        .for_each(|(out, rows)| {
            for (y, row) in out.chunks_mut(half).zip(rows.chunks(width)) {
                let (gate, up) = row.split_at(half);
                for ((y, &g), &u) in y.iter_mut().zip(gate).zip(up) {
                    *y = g * sigmoid(g) * u;
                }
            }
        });
    Ok((T::store(out), Shape::from((n, half))))
}

fn backward<T: Float>(
    s: &CpuStorage,
    l: &Layout,
    gs: &CpuStorage,
    gl: &Layout,
) -> Result<(CpuStorage, Shape)> {
    let (x, dy) = (data::<T>(s, l, "swiglu")?, data::<T>(gs, gl, "swiglu")?);
    let width = l.shape().dims2()?.1;
    let half = width / 2;
    let mut dx = vec![T::default(); x.len()];
    dx.par_chunks_mut(width * ROWS_PER_TASK)
        .zip(x.par_chunks(width * ROWS_PER_TASK))
        .zip(dy.par_chunks(half * ROWS_PER_TASK))
        .for_each(|((dx, rows), dy)| {
            for ((dx, row), dy) in dx
                .chunks_mut(width)
                .zip(rows.chunks(width))
                .zip(dy.chunks(half))
            {
                let (gate, up) = row.split_at(half);
                let (dgate, dup) = dx.split_at_mut(half);
                for i in 0..half {
                    let (g, u, sig) = (gate[i], up[i], sigmoid(gate[i]));
                    dup[i] = dy[i] * g * sig;
                    dgate[i] = dy[i] * u * sig * (T::of(1.0) + g * (T::of(1.0) - sig));
                }
            }
        });
    Ok((T::store(dx), l.shape().clone()))
}

impl CustomOp1 for SwiGlu {
    fn name(&self) -> &'static str {
        "fused-swiglu"
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        if l.shape().dims2()?.1 % 2 != 0 {
            candle_core::bail!("swiglu: the input holds gate and up side by side");
        }
        dispatch!(s, forward(s, l))
    }
    fn bwd(&self, x: &Tensor, _: &Tensor, dy: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(x.apply_op2_no_bwd(&dy.contiguous()?, &SwiGluGrad)?))
    }
}

impl CustomOp2 for SwiGluGrad {
    fn name(&self) -> &'static str {
        "fused-swiglu-grad"
    }
    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        g: &CpuStorage,
        lg: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        dispatch!(x, backward(x, lx, g, lg))
    }
}
