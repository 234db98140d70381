//! Matrix products inside the kernels, on the `gemm` crate that candle's own CPU matmul runs
//! on (runtime-dispatched SIMD): a per-element loop over the attention's `T × T` products ran
//! at a small fraction of its speed.

use super::Float;

/// A read-only matrix: element `(r, c)` is `data[r·rs + c·cs]`.
#[derive(Debug, Clone, Copy)]
pub(super) struct View<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a, T> View<'a, T> {
    /// `rows × cols` in row-major order with `stride` elements between rows.
    pub fn rows(data: &'a [T], rows: usize, cols: usize, stride: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            rs: stride,
            cs: 1,
        }
    }

    /// The transpose (no copy).
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }

    /// Whether every element lies inside `data`.
    fn in_bounds(&self) -> bool {
        self.rows == 0
            || self.cols == 0
            || (self.rows - 1) * self.rs + (self.cols - 1) * self.cs < self.data.len()
    }
}

/// `c = a·b`, or `c += a·b` with `accumulate`; `c` is `a.rows × b.cols`, row-major with
/// `c_stride` elements between rows.
///
/// # Panics
/// Shapes that disagree or reach outside their slices (a bug in the calling kernel).
#[allow(
    unsafe_code,
    reason = "gemm takes raw pointers; the bounds are checked first"
)]
pub(super) fn matmul<T: Float>(
    c: &mut [T],
    c_stride: usize,
    a: View<'_, T>,
    b: View<'_, T>,
    accumulate: bool,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(k, b.rows, "matmul: inner dimensions differ");
    assert!(
        a.in_bounds() && b.in_bounds(),
        "matmul: operand out of bounds"
    );
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        c_stride >= n && (m - 1) * c_stride + n <= c.len(),
        "matmul: destination out of bounds"
    );
    if k == 0 {
        if !accumulate {
            c.chunks_mut(c_stride)
                .take(m)
                .for_each(|row| row[..n].fill(T::default()));
        }
        return;
    }
    // SAFETY: `gemm` reads `a` at `r·rs + c·cs` for r < m, c < k and `b` likewise for r < k,
    // c < n, all inside their slices (`in_bounds`, asserted above); it writes `c` at
    // `r·c_stride + j` for r < m, j < n, inside `c` (asserted above), and `c` is a unique
    // borrow so no operand aliases it. `T` is f32 or f64 (`Float`), both types `gemm`
    // implements. Strides fit in isize: they index slices, which never exceed isize::MAX.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            c_stride as isize,
            accumulate,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            T::of(1.0),
            T::of(1.0),
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{View, matmul};

    #[test]
    fn products_of_strided_and_transposed_views_equal_the_loops() {
        let a: Vec<f64> = (0..15).map(|i| f64::from(i) * 0.5 - 3.0).collect();
        let b: Vec<f64> = (0..20).map(|i| f64::from(i % 7) - 2.0).collect();
        // a: 3 × 4 inside rows of 5; b: 4 × 5 row-major, used transposed as 5 × 4 below.
        let (av, bv) = (View::rows(&a, 3, 4, 5), View::rows(&b, 4, 5, 5));
        let mut c = vec![1.0; 3 * 7];
        matmul(&mut c, 7, av, bv, true);
        for i in 0..3 {
            for j in 0..5 {
                let want: f64 = (0..4).map(|k| a[i * 5 + k] * b[k * 5 + j]).sum::<f64>() + 1.0;
                assert_eq!(c[i * 7 + j], want);
            }
            assert_eq!(c[i * 7 + 5..i * 7 + 7], [1.0, 1.0]);
        }
        let mut d = vec![9.0; 5 * 3];
        matmul(&mut d, 3, bv.t(), av.t(), false);
        for i in 0..5 {
            for j in 0..3 {
                let want: f64 = (0..4).map(|k| b[k * 5 + i] * a[j * 5 + k]).sum();
                assert_eq!(d[i * 3 + j], want);
            }
        }
    }
}
