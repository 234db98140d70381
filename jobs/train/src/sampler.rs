//! Drawing the next token of every row of a batch on the logits' own device: only the drawn
//! ids and their log-probabilities cross to the host (the logits of a 151,936-token vocabulary
//! are 0.6 MB a row).
//!
//! Temperature, then top-k, then top-p (HF's warper order), then a draw by the Gumbel-max trick
//! — `argmax(logits / T + g)` with `g = −ln(−ln u)`, `u` uniform — which draws from the
//! softmax of what is kept. Top-k and top-p keep the tokens whose probability reaches a
//! per-row threshold, found by bisection over the probabilities (no sort: vocabularies are
//! too wide for the device sorts): for top-p the largest `τ` with `Σ_{p ≥ τ} p ≥ top_p`, the
//! smallest set of most likely tokens holding `top_p`; for top-k the largest `τ` with
//! `#{p ≥ τ} ≥ k`. Ties at the threshold are kept. The recorded log-probability is the
//! policy's at temperature 1, what `train logprobs` prints.

use candle_core::{D, DType, Result, Tensor};

/// How a row's next token is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draw {
    /// 0 = greedy.
    pub temperature: f64,
    /// Nucleus mass (1 = off).
    pub top_p: f64,
    /// Most likely tokens kept (0 = off).
    pub top_k: usize,
}

/// Bisection steps of a threshold: 2⁻⁴⁰ of the largest probability.
const STEPS: usize = 40;

/// The next token of each row of `logits [rows, V]` and its log-probability at temperature 1;
/// `uniform [rows, V]` in (0, 1) on the logits' device is the draw's randomness (unused when
/// greedy).
///
/// # Errors
/// Shapes that disagree.
pub fn draw(logits: &Tensor, spec: Draw, uniform: &Tensor) -> Result<(Vec<u32>, Vec<f32>)> {
    let logits = logits.to_dtype(DType::F32)?;
    let max = logits.max_keepdim(D::Minus1)?;
    let lse = (logits
        .broadcast_sub(&max)?
        .exp()?
        .sum_keepdim(D::Minus1)?
        .log()?
        + &max)?;
    let tokens = if spec.temperature <= 0.0 {
        logits.argmax_keepdim(D::Minus1)?
    } else {
        let scaled = (&logits / spec.temperature)?;
        let top = scaled.max_keepdim(D::Minus1)?;
        let e = scaled.broadcast_sub(&top)?.exp()?;
        let mut p = e.broadcast_div(&e.sum_keepdim(D::Minus1)?)?;
        let vocab = logits.dim(D::Minus1)?;
        if spec.top_k > 0 && spec.top_k < vocab {
            let k = spec.top_k as f64;
            let tau = threshold(&p, |kept| kept.sum_keepdim(D::Minus1)?.ge(k))?;
            p = renormalized(&p.broadcast_ge(&tau)?.where_cond(&p, &p.zeros_like()?)?)?;
        }
        if spec.top_p < 1.0 {
            let mass = spec.top_p;
            let tau = threshold(&p, |kept| (kept * &p)?.sum_keepdim(D::Minus1)?.ge(mass))?;
            p = p.broadcast_ge(&tau)?.where_cond(&p, &p.zeros_like()?)?;
        }
        let gumbel = uniform.log()?.neg()?.log()?.neg()?;
        let kept = p.gt(0.0)?;
        let score = (scaled + gumbel)?;
        let none = Tensor::full(f32::NEG_INFINITY, score.shape(), score.device())?;
        kept.where_cond(&score, &none)?.argmax_keepdim(D::Minus1)?
    };
    let logp = (logits.gather(&tokens, D::Minus1)? - lse)?;
    Ok((
        tokens.flatten_all()?.to_vec1::<u32>()?,
        logp.flatten_all()?.to_vec1::<f32>()?,
    ))
}

/// `p` scaled to sum to 1 along each row.
fn renormalized(p: &Tensor) -> Result<Tensor> {
    p.broadcast_div(&p.sum_keepdim(D::Minus1)?)
}

/// Per row of `p [rows, V]`, the largest `τ` in `[0, max p]` for which `enough(kept)` holds,
/// `kept` being the row's `p ≥ τ` as 0/1 fp32 (`enough` must hold at `τ = 0` and only get
/// harder as `τ` grows): `[rows, 1]`.
fn threshold(p: &Tensor, enough: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let mut low = p.zeros_like()?.narrow(D::Minus1, 0, 1)?;
    let mut high = p.max_keepdim(D::Minus1)?;
    for _ in 0..STEPS {
        let mid = ((&low + &high)? * 0.5)?;
        let kept = p.broadcast_ge(&mid)?.to_dtype(DType::F32)?;
        let ok = enough(&kept)?;
        low = ok.where_cond(&mid, &low)?;
        high = ok.where_cond(&high, &mid)?;
    }
    Ok(low)
}

#[cfg(test)]
mod tests {
    use candle_core::Device;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// One row of the distribution `probs`, drawn `n` times with fresh noise.
    fn counts(probs: &[f32], spec: Draw, n: usize) -> Vec<usize> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let v = probs.len();
        let logits: Vec<f32> = probs.iter().map(|p| p.ln()).collect();
        let logits = Tensor::from_vec(logits.repeat(n), (n, v), &Device::Cpu).unwrap();
        let u: Vec<f32> = (0..n * v).map(|_| rng.random_range(1e-7..1.0)).collect();
        let u = Tensor::from_vec(u, (n, v), &Device::Cpu).unwrap();
        let (tokens, logp) = draw(&logits, spec, &u).unwrap();
        for (&t, &l) in tokens.iter().zip(&logp) {
            assert!(
                (l - probs[t as usize].ln()).abs() < 1e-5,
                "logp of {t}: {l}"
            );
        }
        let mut c = vec![0; v];
        tokens.iter().for_each(|&t| c[t as usize] += 1);
        c
    }

    const P: [f32; 5] = [0.4, 0.3, 0.15, 0.1, 0.05];

    #[test]
    fn greedy_takes_the_most_likely_token() {
        let spec = Draw {
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
        };
        assert_eq!(counts(&P, spec, 10), [10, 0, 0, 0, 0]);
    }

    #[test]
    fn draws_follow_the_distribution_top_k_and_top_p_cut_it() {
        let n = 20_000;
        let full = Draw {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
        };
        let c = counts(&P, full, n);
        for (i, &p) in P.iter().enumerate() {
            let seen = c[i] as f32 / n as f32;
            // Five standard deviations of a binomial proportion.
            assert!(
                (seen - p).abs() < 5.0 * (p * (1.0 - p) / n as f32).sqrt(),
                "{i}: {seen} vs {p}"
            );
        }
        // top_p 0.65: {0.4, 0.3} is the smallest set holding it; renormalised 4/7 and 3/7.
        let c = counts(
            &P,
            Draw {
                top_p: 0.65,
                ..full
            },
            n,
        );
        assert_eq!(c[2..], [0, 0, 0]);
        let seen = c[0] as f32 / n as f32;
        assert!((seen - 4.0 / 7.0).abs() < 0.02, "{seen}");
        // top_k 3 keeps 0.4, 0.3, 0.15; top_p 0.9 of the renormalised (0.47, 0.35, 0.18)
        // needs all three (the first two hold 0.82).
        let c = counts(
            &P,
            Draw {
                top_k: 3,
                top_p: 0.9,
                ..full
            },
            n,
        );
        assert_eq!(c[3..], [0, 0]);
        assert!(c[2] > 0);
        // Temperature sharpens: at 0.25 the first token dominates.
        let c = counts(
            &P,
            Draw {
                temperature: 0.25,
                ..full
            },
            n,
        );
        assert!(c[0] as f32 / n as f32 > 0.7, "{c:?}");
    }
}
