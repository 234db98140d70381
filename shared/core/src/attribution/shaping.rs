//! Reward shaping: turning credits (e.g. Shapley values) into shares of a reward pool.
//!
//! Every shaping computes a non-negative weight per agent and pays `pool × w_i / Σ w`:
//! - **Linear**: w_i = c_i, shifted so the minimum is 0 when any credit is negative (the lowest
//!   credit then gets nothing). All-equal or all-zero credits split equally.
//! - **Exponential**: credits are standardised to z-scores (population standard deviation; zero
//!   deviation splits equally), then w_i = exp((z_i − max z)/τ); subtracting the maximum first
//!   keeps every weight in (0, 1] so nothing overflows.
//! - **Sigmoid**: w_i = 1/(1 + e^(−k(z_i − x0))) on the same z-scores.
//!
//! Invariants (tested as properties): the rewards sum to the pool (a rounding residual is
//! shared equally by the agents with the largest reward), the ranking of credits is kept
//! (weakly), equal credits get equal rewards, permuting the agents permutes the rewards exactly
//! (all sums are taken in sorted order), no NaN for negative, zero or equal credits, and a pool
//! of 0 pays 0 to everyone. Credits are divided by max |c_i| first, which changes no shaping
//! but keeps sums of huge credits finite.

use serde::{Deserialize, Serialize};

/// How credits map to shares of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shaping {
    /// Proportional to credit (shifted to a minimum of 0 when any credit is negative).
    Linear,
    /// Proportional to exp(z/τ) of the standardised credits.
    Exponential {
        /// τ > 0: small values concentrate the pool on the best agents.
        temperature: f64,
    },
    /// Proportional to the logistic curve of the standardised credits.
    Sigmoid {
        /// k ≥ 0: how sharp the S-curve is (0 splits equally).
        steepness: f64,
        /// x0: the z-score at the curve's midpoint.
        midpoint: f64,
    },
}

/// Credits or parameters that cannot be shaped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// No agents to pay.
    #[error("no credits to shape")]
    NoAgents,
    /// A credit is NaN or infinite.
    #[error("credit of agent {agent} is not finite")]
    NonFiniteCredit {
        /// The agent.
        agent: usize,
    },
    /// The pool is negative, NaN or infinite.
    #[error("the reward pool {pool} must be finite and ≥ 0")]
    InvalidPool {
        /// The pool.
        pool: f64,
    },
    /// A shaping parameter is out of range.
    #[error("shaping parameter {name} = {value} {requirement}")]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
}

/// Summary of a reward vector.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DistributionStats {
    /// Smallest reward.
    pub min: f64,
    /// Largest reward.
    pub max: f64,
    /// Mean reward.
    pub mean: f64,
    /// Gini coefficient in [0, 1 − 1/n]: 0 for an equal split (and for all zeros).
    pub gini: f64,
}

/// Rewards that cannot be summarised.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// No rewards.
    #[error("no rewards to summarise")]
    Empty,
    /// A reward is NaN or infinite.
    #[error("reward of agent {agent} is not finite")]
    NonFinite {
        /// The agent.
        agent: usize,
    },
    /// The Gini coefficient is defined here for non-negative rewards only.
    #[error("reward of agent {agent} is negative")]
    Negative {
        /// The agent.
        agent: usize,
    },
}

/// Sum in increasing order: the result does not depend on the order of `values`.
fn sorted_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v.iter().sum()
}

impl Shaping {
    fn validate(self) -> Result<(), ShapeError> {
        let invalid = |name, value, requirement| {
            Err(ShapeError::InvalidParameter {
                name,
                value,
                requirement,
            })
        };
        match self {
            Self::Linear => Ok(()),
            Self::Exponential { temperature: t } if !(t.is_finite() && t > 0.0) => {
                invalid("temperature", t, "must be finite and > 0")
            }
            Self::Sigmoid { steepness: k, .. } if !(k.is_finite() && k >= 0.0) => {
                invalid("steepness", k, "must be finite and ≥ 0")
            }
            Self::Sigmoid { midpoint: x0, .. } if !x0.is_finite() => {
                invalid("midpoint", x0, "must be finite")
            }
            Self::Exponential { .. } | Self::Sigmoid { .. } => Ok(()),
        }
    }

    /// Non-negative weights for credits scaled into [−1, 1]; `None` means split equally.
    fn weights(self, credits: &[f64]) -> Option<Vec<f64>> {
        let n = credits.len() as f64;
        let z_scores = || {
            let mean = sorted_sum(credits.iter().copied()) / n;
            let std = (sorted_sum(credits.iter().map(|c| (c - mean) * (c - mean))) / n).sqrt();
            (std > 0.0).then(|| credits.iter().map(|c| (c - mean) / std).collect::<Vec<_>>())
        };
        let weights: Vec<f64> = match self {
            Self::Linear => {
                let min = credits.iter().copied().fold(f64::INFINITY, f64::min);
                let shift = if min < 0.0 { -min } else { 0.0 };
                credits.iter().map(|c| c + shift).collect()
            }
            Self::Exponential { temperature } => {
                let z = z_scores()?;
                let top = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                z.iter().map(|z| ((z - top) / temperature).exp()).collect()
            }
            Self::Sigmoid {
                steepness,
                midpoint,
            } => z_scores()?
                .iter()
                .map(|z| 1.0 / (1.0 + (-steepness * (z - midpoint)).exp()))
                .collect(),
        };
        (sorted_sum(weights.iter().copied()) > 0.0).then_some(weights)
    }
}

/// Shares of `pool` for each agent's credit under `shaping` (see the module docs).
///
/// # Errors
/// [`ShapeError`] for no credits, a non-finite credit, an invalid pool or parameter.
pub fn shape_rewards(credits: &[f64], pool: f64, shaping: Shaping) -> Result<Vec<f64>, ShapeError> {
    if credits.is_empty() {
        return Err(ShapeError::NoAgents);
    }
    if let Some(agent) = credits.iter().position(|c| !c.is_finite()) {
        return Err(ShapeError::NonFiniteCredit { agent });
    }
    if !(pool.is_finite() && pool >= 0.0) {
        return Err(ShapeError::InvalidPool { pool });
    }
    shaping.validate()?;
    let n = credits.len();
    if pool == 0.0 {
        return Ok(vec![0.0; n]);
    }
    let scale = credits.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    let scaled: Vec<f64> = credits.iter().map(|c| c / scale).collect();
    let weights = (scale > 0.0).then(|| shaping.weights(&scaled)).flatten();
    let mut rewards = match weights {
        Some(w) => {
            let total = sorted_sum(w.iter().copied());
            w.iter().map(|w| pool * (w / total)).collect()
        }
        None => vec![pool / n as f64; n],
    };
    assign_residual(&mut rewards, pool);
    Ok(rewards)
}

/// Shares `pool − Σ rewards` equally among the agents with the largest reward.
fn assign_residual(rewards: &mut [f64], pool: f64) {
    let residual = pool - sorted_sum(rewards.iter().copied());
    let top = rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ties = rewards.iter().filter(|r| **r == top).count();
    let share = residual / ties as f64;
    for r in rewards.iter_mut().filter(|r| **r == top) {
        *r += share;
    }
}

/// Min, max, mean and Gini coefficient of a (non-negative) reward vector.
///
/// # Errors
/// [`StatsError`] for an empty vector, a non-finite or a negative reward.
pub fn distribution_stats(rewards: &[f64]) -> Result<DistributionStats, StatsError> {
    if rewards.is_empty() {
        return Err(StatsError::Empty);
    }
    if let Some(agent) = rewards.iter().position(|r| !r.is_finite()) {
        return Err(StatsError::NonFinite { agent });
    }
    if let Some(agent) = rewards.iter().position(|r| *r < 0.0) {
        return Err(StatsError::Negative { agent });
    }
    let mut sorted = rewards.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let total: f64 = sorted.iter().sum();
    // G = Σ_i (2i − n + 1)·x_(i) / (n Σx), i = 0-based rank.
    let gini = if total > 0.0 {
        let weighted: f64 = sorted
            .iter()
            .enumerate()
            .map(|(i, x)| (2.0 * i as f64 - n + 1.0) * x)
            .sum();
        (weighted / (n * total)).max(0.0)
    } else {
        0.0
    };
    Ok(DistributionStats {
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        mean: total / n,
        gini,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const SHAPINGS: [Shaping; 5] = [
        Shaping::Linear,
        Shaping::Exponential { temperature: 1.0 },
        Shaping::Exponential { temperature: 0.05 },
        Shaping::Sigmoid {
            steepness: 2.0,
            midpoint: 0.0,
        },
        Shaping::Sigmoid {
            steepness: 50.0,
            midpoint: 1.0,
        },
    ];

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn linear_shapes_proportionally_and_shifts_negatives() {
        let s = Shaping::Linear;
        assert!(close(
            &shape_rewards(&[1.0, 3.0], 4.0, s).unwrap(),
            &[1.0, 3.0]
        ));
        assert!(close(
            &shape_rewards(&[-1.0, 1.0], 4.0, s).unwrap(),
            &[0.0, 4.0]
        ));
        assert!(close(
            &shape_rewards(&[-3.0, -1.0, -2.0], 3.0, s).unwrap(),
            &[0.0, 2.0, 1.0]
        ));
        assert_eq!(shape_rewards(&[0.0; 4], 2.0, s).unwrap(), vec![0.5; 4]);
        assert_eq!(shape_rewards(&[-2.0; 4], 2.0, s).unwrap(), vec![0.5; 4]);
        assert!(close(
            &shape_rewards(&[1e308, -1e308], 1.0, s).unwrap(),
            &[1.0, 0.0]
        ));
    }

    #[test]
    fn exponential_and_sigmoid_use_z_scores() {
        let r = shape_rewards(&[0.0, 1.0], 1.0, Shaping::Exponential { temperature: 1.0 }).unwrap();
        // z = ∓1, weights e^−2 and 1.
        let e = (-2.0f64).exp();
        assert!(close(&r, &[e / (1.0 + e), 1.0 / (1.0 + e)]), "{r:?}");
        let sig = Shaping::Sigmoid {
            steepness: 1.0,
            midpoint: 0.0,
        };
        let r = shape_rewards(&[5.0, 7.0], 1.0, sig).unwrap();
        let (lo, hi) = (1.0 / (1.0 + 1f64.exp()), 1.0 / (1.0 + (-1f64).exp()));
        assert!(close(&r, &[lo / (lo + hi), hi / (lo + hi)]), "{r:?}");
        assert_eq!(shape_rewards(&[3.0; 3], 3.0, sig).unwrap(), vec![1.0; 3]);
    }

    #[test]
    fn invalid_inputs_are_refused() {
        let s = Shaping::Linear;
        assert_eq!(shape_rewards(&[], 1.0, s), Err(ShapeError::NoAgents));
        assert_eq!(
            shape_rewards(&[1.0, f64::NAN], 1.0, s),
            Err(ShapeError::NonFiniteCredit { agent: 1 })
        );
        assert!(matches!(
            shape_rewards(&[1.0], -1.0, s),
            Err(ShapeError::InvalidPool { .. })
        ));
        let bad = Shaping::Exponential { temperature: 0.0 };
        assert!(matches!(
            shape_rewards(&[1.0], 1.0, bad),
            Err(ShapeError::InvalidParameter {
                name: "temperature",
                ..
            })
        ));
        let bad = Shaping::Sigmoid {
            steepness: -1.0,
            midpoint: 0.0,
        };
        assert!(matches!(
            shape_rewards(&[1.0], 1.0, bad),
            Err(ShapeError::InvalidParameter {
                name: "steepness",
                ..
            })
        ));
    }

    #[test]
    fn stats_summarise_the_distribution() {
        let s = distribution_stats(&[0.0, 0.0, 0.0, 4.0]).unwrap();
        assert_eq!((s.min, s.max, s.mean), (0.0, 4.0, 1.0));
        assert!((s.gini - 0.75).abs() < 1e-12);
        assert_eq!(distribution_stats(&[2.0; 5]).unwrap().gini, 0.0);
        assert_eq!(distribution_stats(&[0.0; 3]).unwrap().gini, 0.0);
        assert_eq!(distribution_stats(&[]), Err(StatsError::Empty));
        assert_eq!(
            distribution_stats(&[1.0, -1.0]),
            Err(StatsError::Negative { agent: 1 })
        );
        assert_eq!(
            distribution_stats(&[f64::INFINITY]),
            Err(StatsError::NonFinite { agent: 0 })
        );
    }

    fn credits() -> impl Strategy<Value = Vec<f64>> {
        let credit = prop_oneof![
            4 => -1e3f64..1e3,
            1 => Just(0.0),
            1 => Just(-5.0),
            1 => Just(5.0),
            1 => -1e-9f64..1e-9,
        ];
        prop::collection::vec(credit, 1..40)
    }

    fn pool() -> impl Strategy<Value = f64> {
        prop_oneof![Just(0.0), Just(1.0), 0.0f64..1e6, Just(1e9)]
    }

    proptest! {
        #[test]
        fn shaped_rewards_keep_the_invariants(credits in credits(), pool in pool()) {
            for shaping in SHAPINGS {
                let r = shape_rewards(&credits, pool, shaping).unwrap();
                prop_assert_eq!(r.len(), credits.len());
                prop_assert!(r.iter().all(|x| x.is_finite() && *x >= 0.0), "{:?}", r);
                let total: f64 = r.iter().sum();
                prop_assert!((total - pool).abs() <= 1e-9 * pool.max(1.0), "{} vs {}", total, pool);
                if pool == 0.0 {
                    prop_assert!(r.iter().all(|x| *x == 0.0));
                }
                let stats = distribution_stats(&r).unwrap();
                prop_assert!(stats.gini.is_finite() && stats.gini >= 0.0 && stats.gini < 1.0);
                for i in 0..credits.len() {
                    for j in 0..credits.len() {
                        if credits[i] == credits[j] {
                            prop_assert_eq!(r[i], r[j]);
                        } else if credits[i] > credits[j] {
                            prop_assert!(r[i] >= r[j] - 1e-12 * pool, "{:?} {:?} {:?}", shaping, credits, r);
                        }
                    }
                }
            }
        }

        #[test]
        fn permuting_agents_permutes_rewards(
            (credits, order) in credits().prop_flat_map(|c| {
                let n = c.len();
                (Just(c), Just((0..n).collect::<Vec<_>>()).prop_shuffle())
            }),
            pool in pool(),
        ) {
            let permuted: Vec<f64> = order.iter().map(|&i| credits[i]).collect();
            for shaping in SHAPINGS {
                let r = shape_rewards(&credits, pool, shaping).unwrap();
                let rp = shape_rewards(&permuted, pool, shaping).unwrap();
                let expected: Vec<f64> = order.iter().map(|&i| r[i]).collect();
                prop_assert_eq!(rp, expected);
            }
        }
    }
}
