//! Feedback statistics: Wilson lower bound, Bayesian average and half-life decay.
//!
//! - **Wilson lower bound** of the positive share, with `n = positive + negative`,
//!   `p = positive / n` and `z = 1.96`:
//!   `(p + z²/2n − z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n)`; 0 when `n = 0`. It works on
//!   decayed (fractional) counts too.
//! - **Bayesian average** of 1–5 ratings: `(5 × 3 + Σ ratings) / (5 + count)`, i.e. five
//!   phantom ratings of 3, so a few early ratings cannot swing it to an extreme.
//! - **Half-life decay**: an item at `t` weighs `2^(−(anchor − t) / half_life)` relative to
//!   the anchor time. Sums are kept relative to the anchor, and moving the anchor later by `Δ`
//!   multiplies them by `2^(−Δ / half_life)`, so the result is the same in any order.

/// One day in milliseconds.
pub(crate) const DAY_MS: i64 = 86_400_000;
/// The normal quantile of the Wilson bound (95% two-sided).
pub const WILSON_Z: f64 = 1.96;
/// The Bayesian average's prior mean rating.
pub const RATING_PRIOR_MEAN: f64 = 3.0;
/// The Bayesian average's prior weight, in ratings.
pub const RATING_PRIOR_WEIGHT: f64 = 5.0;

/// The Wilson score lower bound of `positive / (positive + negative)`.
pub fn wilson_lower_bound(positive: f64, negative: f64) -> f64 {
    let n = positive + negative;
    if n <= 0.0 || !n.is_finite() {
        return 0.0;
    }
    let p = positive / n;
    let z2 = WILSON_Z * WILSON_Z;
    let centre = p + z2 / (2.0 * n);
    let spread = WILSON_Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // Never negative, and never above `p`, even after rounding.
    ((centre - spread) / (1.0 + z2 / n)).max(0.0).min(p)
}

/// The Bayesian average of `count` ratings summing to `sum`.
pub fn bayesian_average(sum: f64, count: f64) -> f64 {
    (RATING_PRIOR_WEIGHT * RATING_PRIOR_MEAN + sum) / (RATING_PRIOR_WEIGHT + count)
}

/// `2^(−elapsed / half_life)`.
pub(crate) fn decay(elapsed_ms: i64, half_life_days: f64) -> f64 {
    (-(elapsed_ms as f64) / (half_life_days * DAY_MS as f64)).exp2()
}

/// Moves `anchor` forward to `at_ms` when that is later, returning the factor that rescales
/// sums kept relative to the old anchor.
pub(crate) fn advance(anchor: &mut Option<i64>, at_ms: i64, half_life_days: f64) -> f64 {
    match *anchor {
        Some(a) if a >= at_ms => 1.0,
        Some(a) => {
            *anchor = Some(at_ms);
            decay(at_ms - a, half_life_days)
        }
        None => {
            *anchor = Some(at_ms);
            1.0
        }
    }
}

/// The weight, relative to `anchor`, of an item at `at_ms ≤ anchor`.
pub(crate) fn weight_at(anchor: i64, at_ms: i64, half_life_days: f64) -> f64 {
    decay(anchor.saturating_sub(at_ms).max(0), half_life_days)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wilson_known_values() {
        assert_eq!(wilson_lower_bound(0.0, 0.0), 0.0);
        // 8 of 10 at z = 1.96 ≈ 0.4902 (Wilson 1927; Evan Miller's table).
        assert!((wilson_lower_bound(8.0, 2.0) - 0.4902).abs() < 1e-4);
        assert!(wilson_lower_bound(100.0, 0.0) > 0.96);
    }

    #[test]
    fn bayesian_average_starts_at_the_prior() {
        assert_eq!(bayesian_average(0.0, 0.0), 3.0);
        assert_eq!(bayesian_average(5.0, 1.0), 20.0 / 6.0);
    }

    #[test]
    fn decay_halves_per_half_life() {
        assert_eq!(decay(14 * DAY_MS, 14.0), 0.5);
        let mut anchor = None;
        assert_eq!(advance(&mut anchor, 10, 14.0), 1.0);
        assert_eq!(advance(&mut anchor, 5, 14.0), 1.0);
        assert_eq!(anchor, Some(10));
        assert_eq!(advance(&mut anchor, 10 + 28 * DAY_MS, 14.0), 0.25);
        assert_eq!(weight_at(28 * DAY_MS, 0, 14.0), 0.25);
    }

    proptest! {
        #[test]
        fn wilson_is_below_the_positive_fraction(positive in 0u32..10_000, negative in 0u32..10_000) {
            let (p, n) = (f64::from(positive), f64::from(negative));
            let lb = wilson_lower_bound(p, n);
            let fraction = if p + n > 0.0 { p / (p + n) } else { 0.0 };
            prop_assert!((0.0..=fraction).contains(&lb), "{lb} > {fraction}");
        }

        #[test]
        fn wilson_is_below_the_fraction_of_decayed_counts(p in 0.0..1e4f64, n in 0.0..1e4f64) {
            let lb = wilson_lower_bound(p, n);
            let fraction = if p + n > 0.0 { p / (p + n) } else { 0.0 };
            prop_assert!((0.0..=fraction).contains(&lb));
        }
    }
}
