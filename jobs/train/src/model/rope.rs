//! The cos/sin tables of rotary position embeddings, from the frequencies of the model's RoPE
//! type ([`Rope::inv_freq`]) and scaled by its attention factor.
//!
//! transformers computes the frequencies and the angles `position · inv_freq` in fp32; so does
//! this module, so that long positions round to the same angles (at position 30,000 one fp32
//! ulp of the angle is 0.002 rad).

use candle_core::{DType, Device, Result, Tensor};

pub use agentrl_core::training::architecture::{Rope, RopeScaling, yarn_attention_factor};

/// The rotary tables of `positions`: `cos` and `sin`, one `[head_dim]` row each, the
/// frequencies repeated over both halves, as `dtype` on `device`.
///
/// # Errors
/// Tensor failures.
pub fn tables(
    rope: &Rope,
    positions: impl ExactSizeIterator<Item = usize>,
    head_dim: usize,
    dtype: DType,
    device: &Device,
) -> Result<(Tensor, Tensor)> {
    let len = positions.len();
    let inv_freq = rope.inv_freq(head_dim);
    let scale = rope.attention_factor() as f32;
    let mut cos = Vec::with_capacity(len * head_dim);
    let mut sin = Vec::with_capacity(len * head_dim);
    for pos in positions {
        for _ in 0..2 {
            for &f in &inv_freq {
                let angle = f64::from(pos as f32 * f);
                cos.push(angle.cos() as f32 * scale);
                sin.push(angle.sin() as f32 * scale);
            }
        }
    }
    let cos = Tensor::from_vec(cos, (len, head_dim), device)?.to_dtype(dtype)?;
    let sin = Tensor::from_vec(sin, (len, head_dim), device)?.to_dtype(dtype)?;
    Ok((cos, sin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yarn_scales_the_tables_by_its_attention_factor() {
        let yarn = Rope {
            theta: 500_000.0,
            scaling: RopeScaling::Yarn {
                factor: 4.0,
                original_max_position_embeddings: 4096.0,
                attention_factor: yarn_attention_factor(4.0, None, None),
                beta_fast: 32.0,
                beta_slow: 1.0,
                truncate: true,
            },
        };
        let (cos, _) = tables(&yarn, 0..1, 64, DType::F32, &Device::Cpu).unwrap();
        let at_zero: Vec<f32> = cos.flatten_all().unwrap().to_vec1().unwrap();
        let expected = (0.1 * 4.0f64.ln() + 1.0) as f32;
        assert!(at_zero.iter().all(|&c| (c - expected).abs() < 1e-6));
    }
}
