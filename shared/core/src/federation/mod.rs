//! Federated rounds over tenants' LoRA adapters (DP-FedAvg with fixed clipping): the
//! arithmetic of one aggregation, a tenant's opt-in, and the privacy a round costs.
//!
//! Key properties:
//! - A tenant's update is its locally trained adapter minus the round's global adapter, over
//!   every tensor; it is scaled down to L2 norm `clip` when longer, so no tenant moves the
//!   average by more than `clip · wᵢ / Σ w` (a bound on both privacy loss and poisoning).
//! - The next global adapter is `global + Σ wᵢ·clip(uᵢ) / Σ wᵢ + N(0, σ²)` per element, with
//!   `σ = z · clip · max wᵢ / Σ wᵢ` ([`noise_std`]): the sensitivity of the weighted mean to
//!   one tenant is `clip · max wᵢ / Σ wᵢ`, so the round is the Gaussian mechanism with noise
//!   multiplier z at tenant level, and [`crate::privacy::rdp`] accounts for it.
//! - With LoRA, averaging A and B separately is not averaging `B·A`; rounds train B only on a
//!   shared, frozen A (FFA-LoRA, `lora.freeze_a`), which makes the mean update exact.

mod opt_in;

pub use opt_in::{FederatedModel, FederationOptIn};

use crate::FieldError;

/// How much each participant's clipped update counts.
///
/// # Errors
/// A weight that is not finite and positive, or a count that is not the participants'.
pub fn check_weights(weights: &[f64], participants: usize) -> Result<(), FieldError> {
    if weights.len() != participants {
        return Err(FieldError::new(
            "weights",
            format!("{} weights for {participants} participants", weights.len()),
        ));
    }
    if let Some(i) = weights.iter().position(|w| !(w.is_finite() && *w > 0.0)) {
        return Err(FieldError::new(
            format!("weights[{i}]"),
            "must be finite and positive",
        ));
    }
    Ok(())
}

/// The standard deviation of the noise added to each element of the weighted mean:
/// `z · clip · max wᵢ / Σ wᵢ` (`z · clip / n` with uniform weights).
#[must_use]
pub fn noise_std(z: f64, clip: f64, weights: &[f64]) -> f64 {
    let total: f64 = weights.iter().sum();
    let max = weights.iter().copied().fold(0.0, f64::max);
    if total > 0.0 {
        z * clip * max / total
    } else {
        0.0
    }
}

/// The factor that brings an update of L2 norm `norm` within `clip`: 1 when it already is.
#[must_use]
pub fn clip_factor(norm: f64, clip: f64) -> f64 {
    if norm > clip { clip / norm } else { 1.0 }
}

/// `Σ wᵢ · clip(localᵢ − global) / Σ wᵢ`, element by element, in f64: the mean clipped
/// update before noise. Every vector is the adapter's tensors flattened in one order.
///
/// # Panics
/// Locals of another length than `global`, or weights not one per local (checked by the
/// callers' input validation).
#[must_use]
pub fn mean_clipped_update(
    global: &[f32],
    locals: &[&[f32]],
    weights: &[f64],
    clip: f64,
) -> Vec<f64> {
    assert_eq!(locals.len(), weights.len(), "one weight per local adapter");
    let total: f64 = weights.iter().sum();
    let mut mean = vec![0.0; global.len()];
    for (local, w) in locals.iter().zip(weights) {
        assert_eq!(local.len(), global.len(), "an adapter of another shape");
        let norm = local
            .iter()
            .zip(global)
            .map(|(l, g)| (f64::from(*l) - f64::from(*g)).powi(2))
            .sum::<f64>()
            .sqrt();
        let scale = clip_factor(norm, clip) * w / total;
        for ((m, l), g) in mean.iter_mut().zip(*local).zip(global) {
            *m += scale * (f64::from(*l) - f64::from(*g));
        }
    }
    mean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_update_is_clipped_to_the_bound_and_a_short_one_is_kept() {
        let global = [0.0_f32, 0.0];
        let long = [3.0_f32, 4.0]; // norm 5
        let short = [0.3_f32, 0.4]; // norm 0.5
        let mean = mean_clipped_update(&global, &[&long, &short], &[1.0, 1.0], 1.0);
        assert!((mean[0] - (0.6 + 0.3) / 2.0).abs() < 1e-6, "{mean:?}");
        assert!((mean[1] - (0.8 + 0.4) / 2.0).abs() < 1e-6, "{mean:?}");
    }

    #[test]
    fn noise_follows_the_largest_weight() {
        assert!((noise_std(1.0, 2.0, &[1.0; 4]) - 0.5).abs() < 1e-12);
        assert!((noise_std(1.0, 2.0, &[1.0, 3.0]) - 1.5).abs() < 1e-12);
    }

    #[test]
    fn weights_must_be_positive_and_one_per_participant() {
        assert_eq!(check_weights(&[1.0], 2).unwrap_err().field, "weights");
        assert_eq!(
            check_weights(&[1.0, 0.0], 2).unwrap_err().field,
            "weights[1]"
        );
        assert!(check_weights(&[1.0, 2.0], 2).is_ok());
    }
}
