//! Optional differential privacy on released rewards: the Laplace mechanism with per-tenant
//! ε accounting.
//!
//! Key properties:
//! - A value clamped to [−Δ/2, Δ/2] plus Laplace(0, Δ/ε) noise is ε-differentially private
//!   for sensitivity Δ ([`DpConfig::release`] clamps, so the bound holds whatever comes in).
//!   The default Δ = 2 fits rewards in [−1, 1].
//! - Noise is drawn by inverse-CDF sampling from a ChaCha20 stream seeded by the caller. Derive
//!   the seed from a secret and the trajectory id (see `Pseudonymizer::keyed_digest`): a
//!   redelivered trajectory then gets the same noise, so averaging redeliveries reveals nothing.
//! - Sequential composition: every release spends its ε from the tenant's [`PrivacyLedger`].
//!   Once the budget is exhausted, rewards are suppressed (`None`) rather than released with
//!   less noise or without it. Idempotent charging of a redelivery is the caller's job (the
//!   same seed gives the same value, but the ledger cannot tell a redelivery from a new one).
//!
//! Reference: Dwork & Roth, *The Algorithmic Foundations of Differential Privacy*, §3.3.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

/// One draw from Laplace(0, `scale`), fully determined by `seed`.
///
/// A non-finite or non-positive `scale` yields NaN, so a misconfigured caller cannot silently
/// release a value without noise.
pub fn laplace_noise(seed: [u8; 32], scale: f64) -> f64 {
    if !(scale.is_finite() && scale > 0.0) {
        return f64::NAN;
    }
    let mut rng = ChaCha20Rng::from_seed(seed);
    // 53 random bits, offset by half a step: p lies strictly inside (0, 1), so ln() below never
    // sees 0 and the noise is bounded by about 37 × scale.
    let p = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u = p - 0.5;
    -scale * u.signum() * (1.0 - 2.0 * u.abs()).ln()
}

/// A tenant's differential-privacy settings.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpConfig {
    /// ε spent by one release, > 0; smaller is more private and noisier.
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0))]
    pub epsilon: f64,
    /// Δ: the range width of a released value, > 0 (2.0 for rewards in [−1, 1]).
    #[serde(default = "default_sensitivity")]
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0))]
    pub sensitivity: f64,
    /// Total ε a tenant may spend: > 0, and at least `epsilon`, or nothing could be released.
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0))]
    pub budget: f64,
}

fn default_sensitivity() -> f64 {
    DpConfig::DEFAULT_SENSITIVITY
}

/// A DP setting out of range; `field` names it.
pub type DpConfigError = crate::FieldError;

impl DpConfig {
    /// Δ for rewards in [−1, 1].
    pub const DEFAULT_SENSITIVITY: f64 = 2.0;

    /// Checks that ε, Δ and the budget are finite and positive, and that one release fits.
    ///
    /// # Errors
    /// [`DpConfigError`] naming the first field out of range.
    pub fn validate(&self) -> Result<(), DpConfigError> {
        for (field, v) in [
            ("epsilon", self.epsilon),
            ("sensitivity", self.sensitivity),
            ("budget", self.budget),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(DpConfigError::new(
                    field,
                    "must be finite and greater than 0",
                ));
            }
        }
        if self.budget < self.epsilon {
            return Err(DpConfigError::new(
                "budget",
                "must be at least epsilon, or nothing can ever be released",
            ));
        }
        Ok(())
    }

    /// The Laplace scale b = Δ / ε.
    pub fn scale(&self) -> f64 {
        self.sensitivity / self.epsilon
    }

    /// Releases `value` with noise, charging ε to `ledger`; `None` when the budget is exhausted
    /// or `value` is not a number. The value is clamped to [−Δ/2, Δ/2] first; the noisy result
    /// is not clamped, because clamping it would bias the mean the trainer relies on.
    pub fn release(&self, ledger: &mut PrivacyLedger, value: f64, seed: [u8; 32]) -> Option<f64> {
        if value.is_nan() {
            return None;
        }
        ledger.charge(self.epsilon, self.budget).ok()?;
        self.noisy(value, seed)
    }

    /// `value` clamped to [−Δ/2, Δ/2] plus the noise of `seed`, without charging: for a value
    /// whose release was already charged (the same seed gives the same noise).
    pub fn noisy(&self, value: f64, seed: [u8; 32]) -> Option<f64> {
        if value.is_nan() {
            return None;
        }
        let half = self.sensitivity / 2.0;
        let noisy = value.clamp(-half, half) + laplace_noise(seed, self.scale());
        noisy.is_finite().then_some(noisy)
    }
}

/// ε a tenant has spent so far (persisted by the caller).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PrivacyLedger {
    /// Total ε spent.
    pub spent: f64,
}

/// A release was refused: it would take the tenant past its ε budget.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("privacy budget exhausted: spent {spent} + requested {requested} exceeds {budget}")]
pub struct BudgetExhausted {
    /// ε already spent.
    pub spent: f64,
    /// ε this release would spend.
    pub requested: f64,
    /// The tenant's total.
    pub budget: f64,
}

impl PrivacyLedger {
    /// Relative slack so that, e.g., ten releases of ε = 0.1 fit a budget of 1.0 despite
    /// floating-point rounding.
    const TOLERANCE: f64 = 1e-9;

    /// Spends `epsilon` of `budget` (sequential composition).
    ///
    /// # Errors
    /// [`BudgetExhausted`] when the charge would exceed the budget. It fails closed: a
    /// non-finite or non-positive ε, a non-finite budget or a corrupt ledger is refused too,
    /// and nothing is charged.
    pub fn charge(&mut self, epsilon: f64, budget: f64) -> Result<(), BudgetExhausted> {
        let refused = BudgetExhausted {
            spent: self.spent,
            requested: epsilon,
            budget,
        };
        let sane = epsilon.is_finite()
            && epsilon > 0.0
            && budget.is_finite()
            && self.spent.is_finite()
            && self.spent >= 0.0;
        if !sane || self.spent + epsilon > budget * (1.0 + Self::TOLERANCE) {
            return Err(refused);
        }
        self.spent += epsilon;
        Ok(())
    }

    /// ε still available under `budget` (never negative).
    pub fn remaining(&self, budget: f64) -> f64 {
        (budget - self.spent).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seed(base: u64, i: u64) -> [u8; 32] {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&base.to_le_bytes());
        s[8..16].copy_from_slice(&i.to_le_bytes());
        s
    }

    #[test]
    fn same_seed_same_noise() {
        assert_eq!(laplace_noise([7; 32], 1.5), laplace_noise([7; 32], 1.5));
        assert_ne!(laplace_noise([7; 32], 1.5), laplace_noise([8; 32], 1.5));
        assert_eq!(
            laplace_noise([7; 32], 3.0),
            2.0 * laplace_noise([7; 32], 1.5)
        );
    }

    #[test]
    fn bad_scale_is_nan_not_zero() {
        for s in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(laplace_noise([1; 32], s).is_nan());
        }
    }

    #[test]
    fn config_validation_names_fields() {
        let ok = DpConfig {
            epsilon: 0.5,
            sensitivity: 2.0,
            budget: 10.0,
        };
        ok.validate().unwrap();
        let parsed: DpConfig = serde_json::from_str(r#"{"epsilon": 1, "budget": 5}"#).unwrap();
        assert_eq!(parsed.sensitivity, 2.0);
        for (cfg, field) in [
            (
                DpConfig {
                    epsilon: 0.0,
                    ..ok.clone()
                },
                "epsilon",
            ),
            (
                DpConfig {
                    epsilon: f64::NAN,
                    ..ok.clone()
                },
                "epsilon",
            ),
            (
                DpConfig {
                    sensitivity: -2.0,
                    ..ok.clone()
                },
                "sensitivity",
            ),
            (
                DpConfig {
                    budget: f64::INFINITY,
                    ..ok.clone()
                },
                "budget",
            ),
            (
                DpConfig {
                    budget: 0.1,
                    ..ok.clone()
                },
                "budget",
            ),
        ] {
            assert_eq!(cfg.validate().unwrap_err().field, field);
        }
    }

    #[test]
    fn ledger_composes_sequentially_and_fails_closed() {
        let mut l = PrivacyLedger::default();
        for _ in 0..10 {
            l.charge(0.1, 1.0).unwrap();
        }
        let e = l.charge(0.1, 1.0).unwrap_err();
        assert_eq!(e.budget, 1.0);
        assert!((l.spent - 1.0).abs() < 1e-12);
        assert!(l.remaining(1.0) < 1e-12);

        let mut l = PrivacyLedger::default();
        assert!(l.charge(f64::NAN, 1.0).is_err());
        assert!(l.charge(-0.5, 1.0).is_err());
        assert!(l.charge(0.5, f64::NAN).is_err());
        assert_eq!(l.spent, 0.0);
        let mut corrupt = PrivacyLedger { spent: f64::NAN };
        assert!(corrupt.charge(0.1, 1.0).is_err());
    }

    #[test]
    fn release_suppresses_once_exhausted() {
        let cfg = DpConfig {
            epsilon: 1.0,
            sensitivity: 2.0,
            budget: 2.0,
        };
        let mut l = PrivacyLedger::default();
        let a = cfg.release(&mut l, 5.0, [1; 32]).unwrap();
        assert_eq!(a, 1.0 + laplace_noise([1; 32], 2.0));
        assert!(cfg.release(&mut l, 0.0, [2; 32]).is_some());
        assert_eq!(cfg.release(&mut l, 0.0, [3; 32]), None);
        assert_eq!(
            cfg.release(&mut PrivacyLedger::default(), f64::NAN, [3; 32]),
            None
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]
        #[test]
        fn noise_is_centred_with_mean_absolute_value_scale(base in any::<u64>(), scale in 0.01f64..100.0) {
            let n = 10_000u64;
            let draws: Vec<f64> = (0..n).map(|i| laplace_noise(seed(base, i), scale)).collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let mean_abs = draws.iter().map(|x| x.abs()).sum::<f64>() / n as f64;
            // Standard errors: √2·b/√n ≈ 0.014·b for the mean, b/√n = 0.01·b for the mean |x|; the
            // bounds are 4 and 5 σ.
            prop_assert!(mean.abs() < 0.06 * scale, "mean {mean} for scale {scale}");
            prop_assert!((mean_abs / scale - 1.0).abs() < 0.05, "mean |x| {mean_abs} for scale {scale}");
            prop_assert!(draws.iter().all(|x| x.is_finite() && x.abs() < 40.0 * scale));
        }
    }
}
