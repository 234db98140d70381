//! Rotary position embeddings as `transformers` computes them (`modeling_rope_utils.py`): the
//! inverse frequencies of each RoPE type it ships for Qwen and Llama models (`default`,
//! `linear`, `llama3`, `yarn`) and the type's attention factor, which scales the cos/sin
//! tables the trainer builds from them.
//!
//! transformers computes the frequencies and the angles `position · inv_freq` in fp32; so does
//! this module, so that long positions round to the same angles (at position 30,000 one fp32
//! ulp of the angle is 0.002 rad).

/// How the frequencies are scaled (`rope_type` and its parameters).
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    /// Plain RoPE.
    Default,
    /// Position interpolation: every frequency divided by `factor`.
    Linear {
        /// The divisor.
        factor: f64,
    },
    /// Llama 3.1: low frequencies divided by `factor`, high ones kept, a smooth ramp between.
    Llama3 {
        /// The divisor of the low frequencies.
        factor: f64,
        /// Wavelengths above `original / low_freq_factor` are scaled.
        low_freq_factor: f64,
        /// Wavelengths below `original / high_freq_factor` are kept.
        high_freq_factor: f64,
        /// The context length of pre-training.
        original_max_position_embeddings: f64,
    },
    /// YaRN: interpolation blended with extrapolation by a ramp over the dimensions, cos/sin
    /// scaled by an attention factor.
    Yarn {
        /// The interpolation divisor.
        factor: f64,
        /// The context length of pre-training.
        original_max_position_embeddings: f64,
        /// The cos/sin scale (from `factor`, `mscale` and `mscale_all_dim` when absent).
        attention_factor: f64,
        /// Rotations that bound extrapolation.
        beta_fast: f64,
        /// Rotations that bound interpolation.
        beta_slow: f64,
        /// Round the ramp's bounds outwards to whole dimensions.
        truncate: bool,
    },
}

/// A model's RoPE: base θ and scaling.
#[derive(Debug, Clone, PartialEq)]
pub struct Rope {
    /// Base of the frequencies.
    pub theta: f64,
    /// The scaling.
    pub scaling: RopeScaling,
}

impl Rope {
    /// The `head_dim / 2` inverse frequencies, in fp32 as transformers computes them.
    #[must_use]
    pub fn inv_freq(&self, head_dim: usize) -> Vec<f32> {
        let dim = head_dim as f32;
        let base = self.theta as f32;
        // `base ** (arange(0, dim, 2) / dim)`, each step in fp32.
        let powers: Vec<f32> = (0..head_dim / 2)
            .map(|i| base.powf((2 * i) as f32 / dim))
            .collect();
        let plain = || powers.iter().map(|&p| 1.0 / p);
        match &self.scaling {
            RopeScaling::Default => plain().collect(),
            RopeScaling::Linear { factor } => plain().map(|f| f / *factor as f32).collect(),
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings,
            } => {
                let (factor, low, high) = (
                    *factor as f32,
                    *low_freq_factor as f32,
                    *high_freq_factor as f32,
                );
                let old = *original_max_position_embeddings as f32;
                let (low_wavelen, high_wavelen) = (old / low, old / high);
                plain()
                    .map(|f| {
                        let wavelen = 2.0 * std::f32::consts::PI / f;
                        let scaled = if wavelen > low_wavelen { f / factor } else { f };
                        if wavelen < high_wavelen || wavelen > low_wavelen {
                            scaled
                        } else {
                            let smooth = (old / wavelen - low) / (high - low);
                            (1.0 - smooth) * scaled / factor + smooth * scaled
                        }
                    })
                    .collect()
            }
            RopeScaling::Yarn {
                factor,
                original_max_position_embeddings,
                beta_fast,
                beta_slow,
                truncate,
                ..
            } => {
                let (low, high) = yarn_range(
                    *beta_fast,
                    *beta_slow,
                    head_dim,
                    self.theta,
                    *original_max_position_embeddings,
                    *truncate,
                );
                let (low, mut high) = (low as f32, high as f32);
                if low == high {
                    high += 0.001;
                }
                let factor = *factor as f32;
                powers
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| {
                        let ramp = ((i as f32 - low) / (high - low)).clamp(0.0, 1.0);
                        let extrapolation = 1.0 - ramp;
                        let (interpolated, extrapolated) = (1.0 / (factor * p), 1.0 / p);
                        interpolated * (1.0 - extrapolation) + extrapolated * extrapolation
                    })
                    .collect()
            }
        }
    }

    /// The scale of cos and sin (1 but for YaRN).
    #[must_use]
    pub fn attention_factor(&self) -> f64 {
        match self.scaling {
            RopeScaling::Yarn {
                attention_factor, ..
            } => attention_factor,
            _ => 1.0,
        }
    }
}

/// YaRN's attention factor when the config gives none: `0.1·ln(factor) + 1`, or the ratio of
/// that with `mscale` over that with `mscale_all_dim` when both are set.
#[must_use]
pub fn yarn_attention_factor(factor: f64, mscale: Option<f64>, mscale_all_dim: Option<f64>) -> f64 {
    let get = |scale: f64, m: f64| {
        if scale <= 1.0 {
            1.0
        } else {
            0.1 * m * scale.ln() + 1.0
        }
    };
    match (mscale, mscale_all_dim) {
        (Some(m), Some(all)) if m != 0.0 && all != 0.0 => get(factor, m) / get(factor, all),
        _ => get(factor, 1.0),
    }
}

/// The dimensions between which YaRN's ramp runs (`find_correction_range`), in f64 as
/// transformers computes them.
fn yarn_range(
    beta_fast: f64,
    beta_slow: f64,
    head_dim: usize,
    base: f64,
    original: f64,
    truncate: bool,
) -> (f64, f64) {
    let dim = head_dim as f64;
    let at = |rotations: f64| {
        dim * (original / (rotations * 2.0 * std::f64::consts::PI)).ln() / (2.0 * base.ln())
    };
    let (mut low, mut high) = (at(beta_fast), at(beta_slow));
    if truncate {
        low = low.floor();
        high = high.ceil();
    }
    (low.max(0.0), high.min(dim - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rope(scaling: RopeScaling) -> Rope {
        Rope {
            theta: 500_000.0,
            scaling,
        }
    }

    #[test]
    fn llama3_keeps_high_frequencies_and_divides_low_ones() {
        let plain = rope(RopeScaling::Default).inv_freq(64);
        let scaled = rope(RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192.0,
        })
        .inv_freq(64);
        assert_eq!(scaled[0], plain[0]);
        let last = plain.len() - 1;
        assert!((scaled[last] - plain[last] / 8.0).abs() <= f32::EPSILON * plain[last]);
        assert!(
            scaled
                .iter()
                .zip(&plain)
                .all(|(s, p)| s <= p && *s >= p / 8.0)
        );
    }

    #[test]
    fn yarn_interpolates_low_frequencies_and_scales_by_its_attention_factor() {
        let yarn = rope(RopeScaling::Yarn {
            factor: 4.0,
            original_max_position_embeddings: 4096.0,
            attention_factor: yarn_attention_factor(4.0, None, None),
            beta_fast: 32.0,
            beta_slow: 1.0,
            truncate: true,
        });
        let (plain, scaled) = (rope(RopeScaling::Default).inv_freq(64), yarn.inv_freq(64));
        assert_eq!(scaled[0], plain[0]);
        let last = plain.len() - 1;
        assert!((scaled[last] - plain[last] / 4.0).abs() <= f32::EPSILON * plain[last]);
        assert!((yarn.attention_factor() - (0.1 * 4.0f64.ln() + 1.0)).abs() < 1e-12);
    }
}
