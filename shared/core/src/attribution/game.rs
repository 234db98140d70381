//! Cooperative games over `n` agents: the [`Game`] trait and the parametric games.
//!
//! A game is its characteristic function v(S), the value coalition S achieves. Agents are
//! indices `0..n`; callers map names to indices. Besides [`CoalitionTable`](super::CoalitionTable)
//! there are two parametric games with a closed-form Shapley value, used as models and as exact
//! checks for the samplers:
//! - [`Additive`]: v(S) = Σ_{i∈S} c_i, so φ_i = c_i.
//! - [`Pairwise`]: v(S) = Σ_{i∈S} a_i + Σ_{i<j∈S} w_ij, so φ_i = a_i + ½ Σ_j w_ij (and the
//!   Banzhaf value is the same, since the game has degree 2).
//!
//! and [`ClosureGame`] wraps any `Fn(&Coalition) -> f64` for large teams (up to
//! [`MAX_AGENTS`]).

use std::fmt;

use super::{Coalition, CoalitionTable, MAX_AGENTS};

/// A characteristic function over agents `0..n()`.
///
/// `Sync` because the samplers evaluate permutations in parallel.
pub trait Game: Sync {
    /// Number of agents.
    fn n(&self) -> usize;

    /// v(S). Members of `coalition` are all `< n()`.
    fn value(&self, coalition: &Coalition) -> f64;

    /// Writes v of every prefix of `order` into `out`: `out[k]` = v(first `k` agents of
    /// `order`), so `out[0]` = v(∅) and `out[n]` = v(N). `order` is a permutation of `0..n()`
    /// and `out.len() == n() + 1`.
    ///
    /// The default calls [`Game::value`] `n + 1` times; games with cheap marginals override it.
    fn prefix_values(&self, order: &[usize], out: &mut [f64]) {
        let mut coalition = Coalition::empty();
        out[0] = self.value(&coalition);
        for (k, &agent) in order.iter().enumerate() {
            coalition.insert(agent);
            out[k + 1] = self.value(&coalition);
        }
    }

    /// The exact Shapley value when the game has a closed form.
    fn closed_form(&self) -> Option<ClosedForm> {
        None
    }

    /// The full table of values, when the game is one.
    fn as_table(&self) -> Option<&CoalitionTable> {
        None
    }
}

/// A Shapley value known in closed form (see [`Game::closed_form`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedForm {
    /// φ_i per agent.
    pub shapley: Vec<f64>,
    /// The Banzhaf value per agent.
    pub banzhaf: Vec<f64>,
    /// Whether the game is additive (every marginal of agent i equals φ_i).
    pub additive: bool,
}

/// A parametric game that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    /// A game needs at least one agent.
    #[error("a game needs at least one agent")]
    NoAgents,
    /// More agents than a coalition can hold.
    #[error("{n} agents is too many (at most {max})")]
    TooManyAgents {
        /// Agents requested.
        n: usize,
        /// The limit.
        max: usize,
    },
    /// A parameter is NaN or infinite.
    #[error("{what} is not finite")]
    NonFinite {
        /// Which parameter.
        what: String,
    },
    /// An interaction names an agent `≥ n`.
    #[error("agent {agent} is out of range for a game of {n} agents")]
    AgentOutOfRange {
        /// The index.
        agent: usize,
        /// Agents in the game.
        n: usize,
    },
    /// An interaction pairs an agent with itself.
    #[error("interaction of agent {agent} with itself")]
    SelfInteraction {
        /// The index.
        agent: usize,
    },
    /// The same pair is given twice (in either order).
    #[error("interaction between agents {i} and {j} is given twice")]
    DuplicatePair {
        /// Smaller index.
        i: usize,
        /// Larger index.
        j: usize,
    },
}

fn check_n(n: usize) -> Result<(), GameError> {
    match n {
        0 => Err(GameError::NoAgents),
        n if n > MAX_AGENTS => Err(GameError::TooManyAgents { n, max: MAX_AGENTS }),
        _ => Ok(()),
    }
}

/// v(S) = Σ_{i∈S} c_i.
#[derive(Debug, Clone, PartialEq)]
pub struct Additive {
    contributions: Vec<f64>,
}

impl Additive {
    /// The additive game with per-agent contributions `c_i`.
    ///
    /// # Errors
    /// [`GameError::NoAgents`], [`GameError::TooManyAgents`] or [`GameError::NonFinite`].
    pub fn new(contributions: Vec<f64>) -> Result<Self, GameError> {
        check_n(contributions.len())?;
        if let Some(i) = contributions.iter().position(|c| !c.is_finite()) {
            return Err(GameError::NonFinite {
                what: format!("contribution of agent {i}"),
            });
        }
        Ok(Self { contributions })
    }

    /// The contributions `c_i`.
    pub fn contributions(&self) -> &[f64] {
        &self.contributions
    }
}

impl Game for Additive {
    fn n(&self) -> usize {
        self.contributions.len()
    }

    fn value(&self, coalition: &Coalition) -> f64 {
        coalition.members().map(|i| self.contributions[i]).sum()
    }

    fn prefix_values(&self, order: &[usize], out: &mut [f64]) {
        out[0] = 0.0;
        for (k, &agent) in order.iter().enumerate() {
            out[k + 1] = out[k] + self.contributions[agent];
        }
    }

    fn closed_form(&self) -> Option<ClosedForm> {
        Some(ClosedForm {
            shapley: self.contributions.clone(),
            banzhaf: self.contributions.clone(),
            additive: true,
        })
    }
}

/// v(S) = Σ_{i∈S} a_i + Σ_{i<j∈S} w_ij.
#[derive(Debug, Clone, PartialEq)]
pub struct Pairwise {
    singles: Vec<f64>,
    /// Dense symmetric n×n matrix, zero diagonal.
    interactions: Vec<f64>,
}

impl Pairwise {
    /// The pairwise game with stand-alone values `a_i` and interactions `(i, j, w_ij)`;
    /// pairs not listed interact with weight 0.
    ///
    /// # Errors
    /// [`GameError`] for a bad agent count, a non-finite parameter, an index `≥ n`, a
    /// self-interaction or a pair listed twice.
    pub fn new(
        singles: Vec<f64>,
        interactions: impl IntoIterator<Item = (usize, usize, f64)>,
    ) -> Result<Self, GameError> {
        let n = singles.len();
        check_n(n)?;
        if let Some(i) = singles.iter().position(|a| !a.is_finite()) {
            return Err(GameError::NonFinite {
                what: format!("stand-alone value of agent {i}"),
            });
        }
        let mut matrix = vec![0.0; n * n];
        let mut seen = vec![false; n * n];
        for (i, j, w) in interactions {
            if let Some(agent) = [i, j].into_iter().find(|a| *a >= n) {
                return Err(GameError::AgentOutOfRange { agent, n });
            }
            if i == j {
                return Err(GameError::SelfInteraction { agent: i });
            }
            if !w.is_finite() {
                return Err(GameError::NonFinite {
                    what: format!("interaction between agents {i} and {j}"),
                });
            }
            let (lo, hi) = (i.min(j), i.max(j));
            if std::mem::replace(&mut seen[lo * n + hi], true) {
                return Err(GameError::DuplicatePair { i: lo, j: hi });
            }
            matrix[i * n + j] = w;
            matrix[j * n + i] = w;
        }
        Ok(Self {
            singles,
            interactions: matrix,
        })
    }

    /// The stand-alone values `a_i`.
    pub fn singles(&self) -> &[f64] {
        &self.singles
    }

    /// w_ij (0 on the diagonal).
    pub fn interaction(&self, i: usize, j: usize) -> f64 {
        self.interactions[i * self.n() + j]
    }
}

impl Game for Pairwise {
    fn n(&self) -> usize {
        self.singles.len()
    }

    fn value(&self, coalition: &Coalition) -> f64 {
        let n = self.n();
        let members: Vec<usize> = coalition.members().collect();
        let mut v = 0.0;
        for (k, &i) in members.iter().enumerate() {
            v += self.singles[i];
            let row = &self.interactions[i * n..(i + 1) * n];
            v += members[k + 1..].iter().map(|&j| row[j]).sum::<f64>();
        }
        v
    }

    /// O(n²) per permutation: keeps Σ_{j∈S} w_ij for every i and adds one row per step.
    fn prefix_values(&self, order: &[usize], out: &mut [f64]) {
        let n = self.n();
        let mut pull = vec![0.0; n];
        out[0] = 0.0;
        for (k, &agent) in order.iter().enumerate() {
            out[k + 1] = out[k] + self.singles[agent] + pull[agent];
            let row = &self.interactions[agent * n..(agent + 1) * n];
            for (p, w) in pull.iter_mut().zip(row) {
                *p += w;
            }
        }
    }

    fn closed_form(&self) -> Option<ClosedForm> {
        let n = self.n();
        let shapley: Vec<f64> = (0..n)
            .map(|i| {
                let row = &self.interactions[i * n..(i + 1) * n];
                self.singles[i] + 0.5 * row.iter().sum::<f64>()
            })
            .collect();
        Some(ClosedForm {
            banzhaf: shapley.clone(),
            shapley,
            additive: self.interactions.iter().all(|w| *w == 0.0),
        })
    }
}

/// A game given by a function, for teams too large for a table.
pub struct ClosureGame {
    n: usize,
    value: Box<dyn Fn(&Coalition) -> f64 + Send + Sync>,
}

impl ClosureGame {
    /// The game of `n` agents whose v is `value`.
    ///
    /// # Errors
    /// [`GameError::NoAgents`] or [`GameError::TooManyAgents`].
    pub fn new(
        n: usize,
        value: impl Fn(&Coalition) -> f64 + Send + Sync + 'static,
    ) -> Result<Self, GameError> {
        check_n(n)?;
        Ok(Self {
            n,
            value: Box::new(value),
        })
    }
}

impl fmt::Debug for ClosureGame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClosureGame")
            .field("n", &self.n)
            .finish_non_exhaustive()
    }
}

impl Game for ClosureGame {
    fn n(&self) -> usize {
        self.n
    }

    fn value(&self, coalition: &Coalition) -> f64 {
        (self.value)(coalition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefixes<G: Game>(game: &G, order: &[usize]) -> Vec<f64> {
        let mut out = vec![f64::NAN; game.n() + 1];
        game.prefix_values(order, &mut out);
        out
    }

    fn default_prefixes<G: Game>(game: &G, order: &[usize]) -> Vec<f64> {
        let mut coalition = Coalition::empty();
        let mut out = vec![game.value(&coalition)];
        for &a in order {
            coalition.insert(a);
            out.push(game.value(&coalition));
        }
        out
    }

    #[test]
    fn pairwise_prefixes_match_values() {
        let g = Pairwise::new(
            vec![1.0, 2.0, -0.5, 0.25],
            [(0, 1, 0.5), (2, 1, -1.0), (3, 0, 2.0)],
        )
        .unwrap();
        let order = [2, 0, 3, 1];
        let fast = prefixes(&g, &order);
        let slow = default_prefixes(&g, &order);
        for (a, b) in fast.iter().zip(&slow) {
            assert!((a - b).abs() < 1e-12, "{fast:?} vs {slow:?}");
        }
        assert_eq!(g.value(&Coalition::from_members(&[0, 1]).unwrap()), 3.5);
        assert_eq!(g.interaction(1, 2), -1.0);
        let cf = g.closed_form().unwrap();
        assert_eq!(cf.shapley, vec![2.25, 1.75, -1.0, 1.25]);
        assert!(!cf.additive);
    }

    #[test]
    fn additive_is_its_own_shapley_value() {
        let g = Additive::new(vec![1.0, -2.0, 3.0]).unwrap();
        assert_eq!(prefixes(&g, &[2, 1, 0]), vec![0.0, 3.0, 1.0, 2.0]);
        let cf = g.closed_form().unwrap();
        assert!(cf.additive);
        assert_eq!(cf.shapley, g.contributions());
    }

    #[test]
    fn invalid_games_are_refused() {
        assert_eq!(Additive::new(vec![]), Err(GameError::NoAgents));
        assert!(matches!(
            Additive::new(vec![1.0, f64::NAN]),
            Err(GameError::NonFinite { what }) if what == "contribution of agent 1"
        ));
        assert_eq!(
            Pairwise::new(vec![0.0; 3], [(0, 1, 1.0), (1, 0, 1.0)]),
            Err(GameError::DuplicatePair { i: 0, j: 1 })
        );
        assert_eq!(
            Pairwise::new(vec![0.0; 3], [(2, 2, 1.0)]),
            Err(GameError::SelfInteraction { agent: 2 })
        );
        assert_eq!(
            Pairwise::new(vec![0.0; 3], [(0, 3, 1.0)]),
            Err(GameError::AgentOutOfRange { agent: 3, n: 3 })
        );
        assert!(matches!(
            Pairwise::new(vec![0.0; 3], [(0, 1, f64::INFINITY)]),
            Err(GameError::NonFinite { .. })
        ));
        assert_eq!(
            ClosureGame::new(MAX_AGENTS + 1, |_| 0.0).map(|_| ()),
            Err(GameError::TooManyAgents {
                n: MAX_AGENTS + 1,
                max: MAX_AGENTS
            })
        );
    }

    #[test]
    fn closure_game_uses_the_default_prefixes() {
        let g = ClosureGame::new(3, |c| (c.len() * c.len()) as f64).unwrap();
        assert_eq!(prefixes(&g, &[1, 0, 2]), vec![0.0, 1.0, 4.0, 9.0]);
        assert!(g.closed_form().is_none() && g.as_table().is_none());
    }
}
