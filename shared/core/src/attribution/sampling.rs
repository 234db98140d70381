//! Monte Carlo Shapley values by permutation sampling, with error bars and a stopping rule.
//!
//! Each sample walks one uniformly random permutation of the agents and records every agent's
//! marginal v(pred ∪ i) − v(pred); the mean marginal is an unbiased estimate of φ_i (Castro,
//! Gómez & Tejada 2009). Key properties:
//! - Efficiency of every sample: the marginals of one permutation telescope to v(N) − v(∅), so
//!   the estimates sum to it as well (up to rounding).
//! - Error bars: the standard error per agent is the sample standard deviation of its marginals
//!   over √samples. Normal intervals (±1.96·se) under-cover on sparse games; the Hoeffding
//!   half-width ([`SampledShapley::hoeffding_half_widths`]) is the conservative alternative.
//! - Antithetic pairs (optional): a sample is a permutation and its reverse, averaged. It helps
//!   near-additive games and hurts majority games.
//! - Stopping rule: after at least `min_permutations`, stop as soon as
//!   max_i se_i ≤ `target_error` × spread, where **spread = max_i |φ̂_i|** (the largest estimated
//!   value in magnitude: it is the scale a reader compares errors to, and unlike v(N) − v(∅) it
//!   does not vanish when positive and negative credits cancel). `max_permutations` is a hard cap.
//!   The rule is checked after every sample, so where it stops is a function of the samples only.
//! - Determinism: sample k draws its permutation from ChaCha8 seeded with `seed` on stream k.
//!   Samples are computed in parallel in fixed-size chunks and folded into the statistics in
//!   sample order, so results are bit-identical whatever the rayon thread count.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::Game;
use super::moments::Moments;

/// Samples computed per parallel task (affects speed only, never results).
const CHUNK_SAMPLES: usize = 16;

/// How to sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplingConfig {
    /// Seed of the permutation streams.
    pub seed: u64,
    /// Stop when max_i se_i ≤ `target_error` × max_i |φ̂_i| (e.g. 0.01 for 1%).
    pub target_error: f64,
    /// Permutations before the stopping rule is consulted (default 100).
    pub min_permutations: usize,
    /// Hard cap on permutations (default 10 000).
    pub max_permutations: usize,
    /// Sample each permutation together with its reverse (a pair counts as two permutations).
    pub antithetic: bool,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            target_error: 0.01,
            min_permutations: 100,
            max_permutations: 10_000,
            antithetic: false,
        }
    }
}

/// Shapley estimates with their error bars.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampledShapley {
    /// φ̂_i per agent; sums to v(N) − v(∅) up to rounding.
    pub estimates: Vec<f64>,
    /// Standard error of each estimate.
    pub std_errors: Vec<f64>,
    /// Permutations evaluated (two per antithetic pair).
    pub permutations: usize,
    /// Whether the stopping rule was met (false: stopped at the cap).
    pub target_reached: bool,
    /// max_i |φ̂_i|, the scale of the stopping rule.
    pub spread: f64,
    /// Whether samples were antithetic pairs.
    pub antithetic: bool,
    /// Smallest sampled marginal per agent (pair averages when antithetic).
    pub marginal_min: Vec<f64>,
    /// Largest sampled marginal per agent (pair averages when antithetic).
    pub marginal_max: Vec<f64>,
    /// Evaluations of v made (n + 1 per permutation).
    pub evaluations: u64,
}

impl SampledShapley {
    /// Independent samples behind each estimate (permutations, or pairs when antithetic).
    pub fn samples(&self) -> usize {
        if self.antithetic {
            self.permutations / 2
        } else {
            self.permutations
        }
    }

    /// Hoeffding half-widths at confidence 1 − `delta`, using each agent's observed marginal
    /// range. That plug-in range can understate the true one; use [`hoeffding_half_width`] with
    /// a known bound on the marginals for a guarantee.
    pub fn hoeffding_half_widths(&self, delta: f64) -> Vec<f64> {
        self.marginal_min
            .iter()
            .zip(&self.marginal_max)
            .map(|(lo, hi)| hoeffding_half_width(hi - lo, self.samples(), delta))
            .collect()
    }
}

/// Half-width `r·√(ln(2/δ)/(2m))` of the Hoeffding interval for the mean of `samples`
/// independent values in a range of width `range`, at confidence 1 − `delta`.
pub fn hoeffding_half_width(range: f64, samples: usize, delta: f64) -> f64 {
    range * ((2.0 / delta).ln() / (2.0 * samples as f64)).sqrt()
}

/// Sampling that cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SamplingError {
    /// The game has no agents.
    #[error("a game needs at least one agent")]
    NoAgents,
    /// A configuration field is out of range.
    #[error("invalid sampling configuration: {field} {reason}")]
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// v returned NaN or ±∞ along a sampled permutation.
    #[error("v is not finite on a prefix of permutation {permutation}")]
    NonFiniteValue {
        /// Index of the permutation stream.
        permutation: u64,
    },
}

impl SamplingConfig {
    /// Checks the configuration; returns the per-sample permutation count.
    fn validate(&self) -> Result<usize, SamplingError> {
        let per_sample = if self.antithetic { 2 } else { 1 };
        let invalid = |field, reason| Err(SamplingError::InvalidConfig { field, reason });
        if !(self.target_error.is_finite() && self.target_error >= 0.0) {
            return invalid("target_error", "must be finite and ≥ 0");
        }
        if self.min_permutations < 2 * per_sample {
            return invalid("min_permutations", "must allow at least two samples");
        }
        if self.max_permutations < self.min_permutations {
            return invalid("max_permutations", "must be ≥ min_permutations");
        }
        Ok(per_sample)
    }
}

/// The permutation of `0..n` for stream `index`.
pub(crate) fn permutation(seed: u64, index: u64, n: usize) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng);
    order
}

/// Adds the marginals along `order` to `acc` (scaled by `weight`); false if v is not finite.
fn add_marginals<G: Game + ?Sized>(
    game: &G,
    order: &[usize],
    prefix: &mut [f64],
    weight: f64,
    acc: &mut [f64],
) -> bool {
    game.prefix_values(order, prefix);
    if !prefix.iter().all(|v| v.is_finite()) {
        return false;
    }
    for (k, &agent) in order.iter().enumerate() {
        acc[agent] += weight * (prefix[k + 1] - prefix[k]);
    }
    true
}

/// Marginals of samples `start..end`, flattened (n per sample).
fn run_chunk<G: Game + ?Sized>(
    game: &G,
    config: &SamplingConfig,
    start: usize,
    end: usize,
) -> Result<Vec<f64>, SamplingError> {
    let n = game.n();
    let mut out = vec![0.0; (end - start) * n];
    let mut prefix = vec![0.0; n + 1];
    for (k, acc) in (start..end).zip(out.chunks_exact_mut(n)) {
        let permutation_index = k as u64;
        let mut order = permutation(config.seed, permutation_index, n);
        let ok = if config.antithetic {
            let first = add_marginals(game, &order, &mut prefix, 0.5, acc);
            order.reverse();
            first && add_marginals(game, &order, &mut prefix, 0.5, acc)
        } else {
            add_marginals(game, &order, &mut prefix, 1.0, acc)
        };
        if !ok {
            return Err(SamplingError::NonFiniteValue {
                permutation: permutation_index,
            });
        }
    }
    Ok(out)
}

/// Estimates the Shapley values of `game` by permutation sampling (see the module docs for
/// the stopping rule and the determinism guarantee).
///
/// # Errors
/// [`SamplingError`] for a game without agents, an invalid configuration, or a non-finite value
/// of v met before the sampler stopped.
pub fn sample_shapley<G: Game + ?Sized>(
    game: &G,
    config: &SamplingConfig,
) -> Result<SampledShapley, SamplingError> {
    let per_sample = config.validate()?;
    let n = game.n();
    if n == 0 {
        return Err(SamplingError::NoAgents);
    }
    let min_samples = config.min_permutations.div_ceil(per_sample);
    let max_samples = config.max_permutations / per_sample;
    let round = CHUNK_SAMPLES * 4 * rayon::current_num_threads();
    let compute = |start: usize, end: usize| -> Vec<Result<Vec<f64>, SamplingError>> {
        (start..end)
            .step_by(CHUNK_SAMPLES)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|s| run_chunk(game, config, s, (s + CHUNK_SAMPLES).min(end)))
            .collect()
    };

    let mut moments = Moments::new(n);
    let mut done = 0;
    let mut end = min_samples.min(max_samples);
    let mut current = compute(0, end);
    let target_reached = loop {
        // Fold the current round in sample order while the next one is computed speculatively.
        let next_end = (end + round).min(max_samples);
        let (folded, next) = rayon::join(
            || -> Result<bool, SamplingError> {
                for chunk in current {
                    for sample in chunk?.chunks_exact(n) {
                        moments.push(sample);
                        done += 1;
                        if done >= min_samples && moments.target_met(config.target_error) {
                            return Ok(true);
                        }
                    }
                }
                Ok(false)
            },
            || compute(end, next_end),
        );
        let reached = folded?;
        if reached || done == max_samples {
            break reached;
        }
        (current, end) = (next, next_end);
    };

    let (lo, hi) = moments.ranges();
    let permutations = done * per_sample;
    Ok(SampledShapley {
        estimates: moments.means().to_vec(),
        std_errors: moments.std_errors().unwrap_or_else(|| vec![0.0; n]),
        permutations,
        target_reached,
        spread: moments.spread(),
        antithetic: config.antithetic,
        marginal_min: lo.to_vec(),
        marginal_max: hi.to_vec(),
        evaluations: (permutations * (n + 1)) as u64,
    })
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::attribution::{Additive, ClosureGame, Coalition, Pairwise, exact_for_game};

    fn random_pairwise(n: usize, seed: u64) -> Pairwise {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let singles: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
        let pairs: Vec<(usize, usize, f64)> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .map(|(i, j)| (i, j, rng.random_range(-1.0..1.0)))
            .collect();
        Pairwise::new(singles, pairs).unwrap()
    }

    fn config(seed: u64) -> SamplingConfig {
        SamplingConfig {
            seed,
            target_error: 0.02,
            min_permutations: 200,
            max_permutations: 20_000,
            antithetic: false,
        }
    }

    #[test]
    fn every_sample_is_efficient() {
        let g = random_pairwise(7, 1);
        let mut acc = vec![0.0; 7];
        let mut prefix = vec![0.0; 8];
        for k in 0..20 {
            acc.iter_mut().for_each(|a| *a = 0.0);
            assert!(add_marginals(
                &g,
                &permutation(3, k, 7),
                &mut prefix,
                1.0,
                &mut acc
            ));
            let total = g.value(&Coalition::full(7)) - g.value(&Coalition::empty());
            assert!((acc.iter().sum::<f64>() - total).abs() < 1e-12);
        }
        let r = sample_shapley(&g, &config(3)).unwrap();
        let total = g.value(&Coalition::full(7));
        assert!((r.estimates.iter().sum::<f64>() - total).abs() < 1e-9);
    }

    #[test]
    fn normal_intervals_cover_at_about_the_nominal_rate() {
        let (mut covered, mut total) = (0, 0);
        for trial in 0..50 {
            let g = random_pairwise(10, 1000 + trial);
            let exact = exact_for_game(&g).unwrap().shapley;
            let r = sample_shapley(&g, &config(trial)).unwrap();
            for ((est, se), truth) in r.estimates.iter().zip(&r.std_errors).zip(&exact) {
                total += 1;
                covered += usize::from((est - truth).abs() <= 1.96 * se);
            }
        }
        let rate = covered as f64 / total as f64;
        assert!(rate >= 0.85, "coverage {rate}");
    }

    #[test]
    fn antithetic_pairs_are_efficient_and_accurate() {
        let g = random_pairwise(10, 5);
        let exact = exact_for_game(&g).unwrap().shapley;
        let r = sample_shapley(
            &g,
            &SamplingConfig {
                antithetic: true,
                ..config(9)
            },
        )
        .unwrap();
        assert!(r.antithetic && r.permutations.is_multiple_of(2));
        assert_eq!(r.samples() * 2, r.permutations);
        let total: f64 = exact.iter().sum();
        assert!((r.estimates.iter().sum::<f64>() - total).abs() < 1e-9);
        for ((est, se), truth) in r.estimates.iter().zip(&r.std_errors).zip(&exact) {
            assert!(
                (est - truth).abs() <= 5.0 * se + 1e-12,
                "{est} vs {truth} ± {se}"
            );
        }
        let hoeffding = r.hoeffding_half_widths(0.05);
        assert!(hoeffding.iter().zip(&r.std_errors).all(|(h, se)| h >= se));
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let g = random_pairwise(12, 2);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| sample_shapley(&g, &config(42)).unwrap())
        };
        let (one, four) = (run(1), run(4));
        assert_eq!(one, four);
        assert!(one.permutations > 200);
    }

    #[test]
    fn stops_early_on_an_easy_game_and_at_the_cap_on_an_impossible_target() {
        let easy = Pairwise::new((0..8).map(|i| 1.0 + i as f64).collect(), [(0, 1, 0.01)]).unwrap();
        let r = sample_shapley(&easy, &config(1)).unwrap();
        assert!(r.target_reached && r.permutations < 20_000, "{r:?}");
        assert_eq!(r.permutations, 200, "se is tiny from the start");

        let hard = random_pairwise(8, 3);
        let capped = SamplingConfig {
            target_error: 0.0,
            max_permutations: 500,
            ..config(1)
        };
        let r = sample_shapley(&hard, &capped).unwrap();
        assert!(!r.target_reached);
        assert_eq!(r.permutations, 500);
        assert_eq!(r.evaluations, 500 * 9);
    }

    #[test]
    fn additive_games_stop_at_the_minimum_with_zero_error() {
        let g = Additive::new(vec![1.0, 2.0, 3.0]).unwrap();
        let r = sample_shapley(&g, &config(0)).unwrap();
        assert_eq!(r.permutations, 200);
        assert!(r.std_errors.iter().all(|se| se.abs() < 1e-12));
    }

    #[test]
    fn invalid_configs_and_values_are_reported() {
        let g = Additive::new(vec![1.0]).unwrap();
        let bad = SamplingConfig {
            target_error: f64::NAN,
            ..config(0)
        };
        assert!(matches!(
            sample_shapley(&g, &bad),
            Err(SamplingError::InvalidConfig {
                field: "target_error",
                ..
            })
        ));
        let bad = SamplingConfig {
            max_permutations: 10,
            ..config(0)
        };
        assert!(matches!(
            sample_shapley(&g, &bad),
            Err(SamplingError::InvalidConfig {
                field: "max_permutations",
                ..
            })
        ));
        let nan = ClosureGame::new(3, |c| if c.len() == 2 { f64::NAN } else { 0.0 }).unwrap();
        assert_eq!(
            sample_shapley(&nan, &config(0)),
            Err(SamplingError::NonFiniteValue { permutation: 0 })
        );
    }
}
