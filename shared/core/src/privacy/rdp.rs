//! Rényi-DP accounting of the Gaussian mechanism, for federated rounds: what a tenant's
//! participation in `rounds` rounds of DP-FedAvg costs in (ε, δ).
//!
//! Key properties:
//! - Every member of a federation takes part in every round it is in (no sampling of
//!   participants, q = 1), so one round is the Gaussian mechanism with noise multiplier z on
//!   an update of sensitivity C: RDP of order α is α / (2z²), and rounds compose by adding
//!   ([Mironov 2017], Prop. 1 and 7).
//! - (ε, δ) comes from the RDP curve by the improved conversion of [Canonne, Kamath and
//!   Steinke 2020] (Prop. 12), minimised over the orders — exactly what `dp-accounting`'s
//!   `RdpAccountant` does, with its default orders ([`DEFAULT_ORDERS`]), so the figures can be
//!   checked against it (the test in `jobs/train/tests/federate.rs` does).
//! - z = 0 (no noise) is ε = ∞: such a round cannot fit any budget.
//! - One round at z is ρ = 1/(2z²) (the RDP curve α·ρ); a history of rounds is the sum of
//!   their ρ ([`rho_epsilon`]), which is what a tenant's ledger keeps.
//!
//! [Mironov 2017]: https://arxiv.org/abs/1702.07476
//! [Canonne, Kamath and Steinke 2020]: https://arxiv.org/abs/2004.00010

/// `dp-accounting`'s `DEFAULT_RDP_ORDERS`: 1.1, 1.2, …, 10.9, then 11..=63, 128, 256, 512,
/// 1024.
#[must_use]
pub fn default_orders() -> Vec<f64> {
    (1..100)
        .map(|x| 1.0 + f64::from(x) / 10.0)
        .chain((11..64).map(f64::from))
        .chain([128.0, 256.0, 512.0, 1024.0])
        .collect()
}

/// The number of orders [`default_orders`] returns.
pub const DEFAULT_ORDERS: usize = 99 + 53 + 4;

/// ρ of one round of the Gaussian mechanism with noise multiplier `z`: its RDP of order α is
/// `α·ρ` with `ρ = 1 / (2z²)` (∞ when `z` is 0). Rounds compose by adding their ρ, so a
/// tenant's whole history of rounds, at whatever noise, is one number.
#[must_use]
pub fn gaussian_rho(z: f64) -> f64 {
    if z > 0.0 {
        1.0 / (2.0 * z * z)
    } else {
        f64::INFINITY
    }
}

/// The RDP curve `α·ρ` at each order (0 everywhere when nothing was spent).
#[must_use]
pub fn rdp_of_rho(rho: f64, orders: &[f64]) -> Vec<f64> {
    orders
        .iter()
        .map(|&alpha| if rho == 0.0 { 0.0 } else { alpha * rho })
        .collect()
}

/// The smallest ε over the orders for which the RDP curve gives (ε, δ)-DP, and that order.
/// ε is ∞ (order 0) for δ ≤ 0 unless nothing was spent.
#[must_use]
pub fn epsilon(orders: &[f64], rdp: &[f64], delta: f64) -> (f64, f64) {
    if delta <= 0.0 {
        return if rdp.iter().all(|&r| r == 0.0) {
            (0.0, 0.0)
        } else {
            (f64::INFINITY, 0.0)
        };
    }
    let mut best = (f64::INFINITY, orders.first().copied().unwrap_or(0.0));
    for (&alpha, &r) in orders.iter().zip(rdp) {
        let eps = if r < 0.0 || delta * delta + (-r).exp_m1() > 0.0 {
            // δ ≥ sqrt(1 − e^(−KL)): the KL bound alone gives ε = 0.
            0.0
        } else if alpha > 1.01 {
            // Unstable as α → 1, where it is useless anyway: dp-accounting's cut-off.
            r + (-1.0 / alpha).ln_1p() - (delta * alpha).ln() / (alpha - 1.0)
        } else {
            f64::INFINITY
        };
        if eps < best.0 {
            best = (eps, alpha);
        }
    }
    (best.0.max(0.0), best.1)
}

/// ε for `delta` of a history of Gaussian rounds whose ρ add up to `rho`, over
/// [`default_orders`].
#[must_use]
pub fn rho_epsilon(rho: f64, delta: f64) -> f64 {
    let orders = default_orders();
    epsilon(&orders, &rdp_of_rho(rho, &orders), delta).0
}

/// ε for `delta` of `rounds` rounds at noise multiplier `z`.
#[must_use]
pub fn gaussian_epsilon(z: f64, rounds: u32, delta: f64) -> f64 {
    if rounds == 0 {
        return 0.0;
    }
    rho_epsilon(f64::from(rounds) * gaussian_rho(z), delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_orders_are_dp_accountings() {
        let orders = default_orders();
        assert_eq!(orders.len(), DEFAULT_ORDERS);
        assert!((orders[0] - 1.1).abs() < 1e-12);
        assert!((orders[98] - 10.9).abs() < 1e-12);
        assert_eq!(&orders[99..101], &[11.0, 12.0]);
        assert_eq!(orders[DEFAULT_ORDERS - 1], 1024.0);
    }

    #[test]
    fn epsilon_grows_with_rounds_and_falls_with_noise() {
        let e1 = gaussian_epsilon(1.0, 1, 1e-5);
        let e10 = gaussian_epsilon(1.0, 10, 1e-5);
        let quiet = gaussian_epsilon(4.0, 10, 1e-5);
        assert!(e1 > 0.0 && e10 > e1 && quiet < e10, "{e1} {e10} {quiet}");
        assert_eq!(gaussian_epsilon(0.0, 1, 1e-5), f64::INFINITY);
        assert_eq!(gaussian_epsilon(1.0, 0, 1e-5), 0.0);
    }

    #[test]
    fn no_delta_is_no_guarantee() {
        let orders = default_orders();
        assert_eq!(
            epsilon(&orders, &rdp_of_rho(gaussian_rho(1.0), &orders), 0.0).0,
            f64::INFINITY
        );
    }
}
