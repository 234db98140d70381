//! Exact Shapley and Banzhaf values by one pass over a full table of 2^n values.
//!
//! φ_i = Σ_{S ⊆ N∖i} |S|!(n−|S|−1)!/n! · (v(S∪i) − v(S)) and
//! β_i = 2^{−(n−1)} Σ_{S ⊆ N∖i} (v(S∪i) − v(S)).
//!
//! Key properties:
//! - Efficiency: Σ φ_i = v(N) − v(∅) (up to rounding); Banzhaf is not efficient in general.
//! - Cost: n · 2^(n−1) marginals, streamed over the table block by block (for agent i the pairs
//!   (S, S∪i) are two contiguous runs of length 2^i), in parallel over agents. Each agent's sum
//!   is computed by one task in a fixed order, so results do not depend on the thread count.
//!   n = 20 takes tens of milliseconds; the real cost is usually the 2^n evaluations of v.
//! - Additive games (v(S) = v(∅) + Σ_{i∈S} c_i, up to 1e-9 relative) are detected and flagged:
//!   there φ_i = β_i = c_i and sampling would compute nothing.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{CoalitionTable, Game, TableError};

/// Relative tolerance of the additivity test.
pub const ADDITIVE_TOLERANCE: f64 = 1e-9;

/// How an exact value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExactSource {
    /// Enumeration of all 2^n coalitions.
    Enumeration,
    /// The game's closed form (additive or pairwise).
    ClosedForm,
}

/// Exact Shapley and Banzhaf values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExactShapley {
    /// φ_i per agent; sums to v(N) − v(∅).
    pub shapley: Vec<f64>,
    /// β_i per agent.
    pub banzhaf: Vec<f64>,
    /// Whether the game is additive (then φ_i = β_i = v({i}) − v(∅) and sampling is pointless).
    pub additive: bool,
    /// How the values were obtained.
    pub source: ExactSource,
}

/// A game whose exact value cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExactError {
    /// The game has no closed form and could not be tabulated (too many agents, or a value
    /// that is not finite).
    #[error("the game cannot be tabulated for exact computation: {0}")]
    Tabulation(#[source] TableError),
}

/// Exact values of a full table.
pub fn exact_shapley(table: &CoalitionTable) -> ExactShapley {
    let n = table.n();
    let v = table.values();
    let weights = shapley_weights(n);
    let sizes = coalition_sizes(n);
    let sums: Vec<(f64, f64)> = (0..n)
        .into_par_iter()
        .map(|i| marginal_sums(v, &sizes, &weights, i))
        .collect();
    let scale = 0.5f64.powi(n as i32 - 1);
    ExactShapley {
        shapley: sums.iter().map(|s| s.0).collect(),
        banzhaf: sums.iter().map(|s| s.1 * scale).collect(),
        additive: is_additive(table),
        source: ExactSource::Enumeration,
    }
}

/// Exact values of any game: its closed form if it has one, else its table, else a
/// tabulation (2^n evaluations of v, n ≤ [`MAX_TABLE_AGENTS`](super::MAX_TABLE_AGENTS)).
///
/// # Errors
/// [`ExactError::Tabulation`] when the game must be tabulated and has more than
/// [`MAX_TABLE_AGENTS`](super::MAX_TABLE_AGENTS) agents or a non-finite value.
pub fn exact_for_game<G: Game + ?Sized>(game: &G) -> Result<ExactShapley, ExactError> {
    if let Some(cf) = game.closed_form() {
        return Ok(ExactShapley {
            shapley: cf.shapley,
            banzhaf: cf.banzhaf,
            additive: cf.additive,
            source: ExactSource::ClosedForm,
        });
    }
    if let Some(table) = game.as_table() {
        return Ok(exact_shapley(table));
    }
    let table = CoalitionTable::tabulate(game).map_err(ExactError::Tabulation)?;
    Ok(exact_shapley(&table))
}

/// `w[s] = s!(n−s−1)!/n! = 1 / (n · C(n−1, s))` for `s` in `0..n`.
fn shapley_weights(n: usize) -> Vec<f64> {
    let mut binomial = 1.0; // C(n−1, s)
    (0..n)
        .map(|s| {
            let w = 1.0 / (n as f64 * binomial);
            binomial = binomial * (n - 1 - s) as f64 / (s + 1) as f64;
            w
        })
        .collect()
}

/// `|S|` for every bitmask `S` of `n` bits.
fn coalition_sizes(n: usize) -> Vec<u8> {
    let mut sizes = vec![0u8; 1 << n];
    for m in 1..sizes.len() {
        sizes[m] = sizes[m >> 1] + (m & 1) as u8;
    }
    sizes
}

/// (Σ w(|S|)·Δ, Σ Δ) over S ∌ i, with Δ = v(S∪i) − v(S).
fn marginal_sums(v: &[f64], sizes: &[u8], weights: &[f64], i: usize) -> (f64, f64) {
    let run = 1usize << i;
    let (mut shapley, mut banzhaf) = (0.0, 0.0);
    for base in (0..v.len()).step_by(2 * run) {
        let without = &v[base..base + run];
        let with = &v[base + run..base + 2 * run];
        let size = &sizes[base..base + run];
        for ((a, b), s) in without.iter().zip(with).zip(size) {
            let d = b - a;
            shapley += weights[*s as usize] * d;
            banzhaf += d;
        }
    }
    (shapley, banzhaf)
}

/// v(S) − v(S ∖ {lowest member}) = v({lowest}) − v(∅) for every S ≠ ∅, within
/// [`ADDITIVE_TOLERANCE`] × max(1, max |v|).
fn is_additive(table: &CoalitionTable) -> bool {
    let v = table.values();
    let scale = v.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    let tolerance = ADDITIVE_TOLERANCE * scale;
    (1..v.len()).all(|m| {
        let low = m & m.wrapping_neg();
        (v[m] - v[m ^ low] - (v[low] - v[0])).abs() <= tolerance
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::attribution::{Additive, ClosureGame, Pairwise};

    /// φ and β straight from the definitions, with factorial weights.
    fn brute_force(n: usize, v: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let factorial = |k: usize| (1..=k).map(|x| x as f64).product::<f64>();
        let mut phi = vec![0.0; n];
        let mut beta = vec![0.0; n];
        for (i, (phi_i, beta_i)) in phi.iter_mut().zip(&mut beta).enumerate() {
            for s in 0..1usize << n {
                if s & (1 << i) != 0 {
                    continue;
                }
                let size = s.count_ones() as usize;
                let weight = factorial(size) * factorial(n - size - 1) / factorial(n);
                let marginal = v[s | (1 << i)] - v[s];
                *phi_i += weight * marginal;
                *beta_i += marginal / 2f64.powi(n as i32 - 1);
            }
        }
        (phi, beta)
    }

    fn random_table(n: usize, seed: u64) -> CoalitionTable {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let values: Vec<f64> = (0..1 << n).map(|_| rng.random_range(-10.0..10.0)).collect();
        CoalitionTable::from_fn(n, |m| values[m as usize]).unwrap()
    }

    fn table(n: usize, values: &[f64]) -> CoalitionTable {
        CoalitionTable::from_fn(n, |m| values[m as usize]).unwrap()
    }

    fn close(a: &[f64], b: &[f64], tolerance: f64) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tolerance)
    }

    fn games() -> impl Strategy<Value = (usize, Vec<f64>)> {
        (1usize..=8).prop_flat_map(|n| (Just(n), prop::collection::vec(-10.0f64..10.0, 1 << n)))
    }

    #[test]
    fn weights_are_the_factorial_weights() {
        let w = shapley_weights(4);
        let expected = [6.0 / 24.0, 2.0 / 24.0, 2.0 / 24.0, 6.0 / 24.0];
        assert!(close(&w, &expected, 1e-15), "{w:?}");
    }

    #[test]
    fn matches_brute_force_up_to_twelve_agents() {
        for n in 1..=12 {
            for seed in 0..3 {
                let t = random_table(n, seed * 100 + n as u64);
                let exact = exact_shapley(&t);
                let (phi, beta) = brute_force(n, t.values());
                assert!(
                    close(&exact.shapley, &phi, 1e-9),
                    "n={n}: {exact:?} vs {phi:?}"
                );
                assert!(close(&exact.banzhaf, &beta, 1e-9), "n={n}");
                assert_eq!(exact.additive, n == 1, "every one-agent game is additive");
            }
        }
    }

    #[test]
    fn pairwise_closed_form_equals_enumeration() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for n in 1..=12 {
            let singles: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let pairs: Vec<(usize, usize, f64)> = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .map(|(i, j)| (i, j, rng.random_range(-1.0..1.0)))
                .collect();
            let game = Pairwise::new(singles, pairs).unwrap();
            let closed = exact_for_game(&game).unwrap();
            assert_eq!(closed.source, ExactSource::ClosedForm);
            let enumerated = exact_shapley(&CoalitionTable::tabulate(&game).unwrap());
            assert!(close(&closed.shapley, &enumerated.shapley, 1e-9), "n={n}");
            assert!(close(&closed.banzhaf, &enumerated.banzhaf, 1e-9), "n={n}");
            assert_eq!(closed.additive, enumerated.additive, "n={n}");
        }
    }

    #[test]
    fn additive_games_are_detected() {
        let c = [1.5, -2.0, 0.25, 4.0];
        let base = 3.0;
        let v: Vec<f64> = (0..16usize)
            .map(|m| {
                base + (0..4)
                    .filter(|i| m & (1 << i) != 0)
                    .map(|i| c[i])
                    .sum::<f64>()
            })
            .collect();
        let exact = exact_shapley(&table(4, &v));
        assert!(exact.additive);
        assert!(close(&exact.shapley, &c, 1e-12) && close(&exact.banzhaf, &c, 1e-12));

        let mut bent = v.clone();
        bent[0b1010] += 1e-3;
        assert!(!exact_shapley(&table(4, &bent)).additive);
        assert!(
            exact_for_game(&Additive::new(c.to_vec()).unwrap())
                .unwrap()
                .additive
        );
    }

    #[test]
    fn general_games_are_tabulated_and_large_ones_refused() {
        let g = ClosureGame::new(3, |c| (c.len() * c.len()) as f64).unwrap();
        let exact = exact_for_game(&g).unwrap();
        assert_eq!(exact.source, ExactSource::Enumeration);
        assert!(close(&exact.shapley, &[3.0; 3], 1e-12));
        let big = ClosureGame::new(21, |c| c.len() as f64).unwrap();
        assert_eq!(
            exact_for_game(&big),
            Err(ExactError::Tabulation(TableError::TooManyAgents {
                n: 21,
                max: 20
            }))
        );
    }

    proptest! {
        #[test]
        fn efficiency((n, v) in games()) {
            let exact = exact_shapley(&table(n, &v));
            let total: f64 = exact.shapley.iter().sum();
            prop_assert!((total - (v[(1 << n) - 1] - v[0])).abs() < 1e-9);
        }

        #[test]
        fn symmetric_agents_get_equal_values((n, mut v) in games().prop_filter("two agents", |g| g.0 >= 2)) {
            // Make agents 0 and 1 interchangeable: v(S ∪ {1}) = v(S ∪ {0}) for S ∌ 0, 1.
            for m in (0..1usize << n).filter(|m| m & 0b11 == 0b01) {
                v[m ^ 0b11] = v[m];
            }
            let exact = exact_shapley(&table(n, &v));
            prop_assert!((exact.shapley[0] - exact.shapley[1]).abs() < 1e-9);
            prop_assert!((exact.banzhaf[0] - exact.banzhaf[1]).abs() < 1e-9);
        }

        #[test]
        fn null_players_get_zero((n, mut v) in games(), k in 0usize..8) {
            let k = k % n;
            for m in (0..1usize << n).filter(|m| m & (1 << k) != 0) {
                v[m] = v[m ^ (1 << k)];
            }
            let exact = exact_shapley(&table(n, &v));
            prop_assert!(exact.shapley[k].abs() < 1e-12 && exact.banzhaf[k].abs() < 1e-12);
        }

        #[test]
        fn values_are_additive_in_the_game((n, v) in games(), seed in any::<u64>()) {
            let w = random_table(n, seed);
            let sum: Vec<f64> = v.iter().zip(w.values()).map(|(a, b)| a + b).collect();
            let (ev, ew, esum) = (exact_shapley(&table(n, &v)), exact_shapley(&w), exact_shapley(&table(n, &sum)));
            for i in 0..n {
                prop_assert!((esum.shapley[i] - ev.shapley[i] - ew.shapley[i]).abs() < 1e-9);
                prop_assert!((esum.banzhaf[i] - ev.banzhaf[i] - ew.banzhaf[i]).abs() < 1e-9);
            }
        }
    }
}
