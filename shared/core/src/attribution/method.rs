//! Choosing between exact computation and sampling: [`attribute`] with [`Method::Auto`].
//!
//! `Auto` is exact whenever exactness is cheap in evaluations of v: a full table is given, the
//! game has a closed form (additive, pairwise), or the game has at most
//! `exact_max_agents` (default 20) agents and can be tabulated (2^n evaluations). Otherwise it
//! samples permutations.

use serde::{Deserialize, Serialize};

use super::{
    ExactError, ExactShapley, Game, MAX_TABLE_AGENTS, SampledShapley, SamplingConfig,
    SamplingError, exact_for_game, sample_shapley,
};

/// Which estimator to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Exact when cheap (see the module docs), else sampling.
    #[default]
    Auto,
    /// Exact: closed form, table, or tabulation of at most 20 agents.
    Exact,
    /// Permutation sampling.
    Sampling,
}

/// Configuration of [`attribute`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AttributionConfig {
    /// The estimator.
    pub method: Method,
    /// Largest n that `Auto` tabulates for a game without table or closed form (≤ 20).
    pub exact_max_agents: usize,
    /// Sampling parameters, used when sampling.
    pub sampling: SamplingConfig,
}

impl Default for AttributionConfig {
    fn default() -> Self {
        Self {
            method: Method::Auto,
            exact_max_agents: MAX_TABLE_AGENTS,
            sampling: SamplingConfig::default(),
        }
    }
}

/// The outcome of [`attribute`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Attribution {
    /// Exact values.
    Exact(ExactShapley),
    /// Estimates with error bars.
    Sampled(SampledShapley),
}

impl Attribution {
    /// φ (exact) or φ̂ (sampled), one per agent.
    pub fn shapley(&self) -> &[f64] {
        match self {
            Self::Exact(e) => &e.shapley,
            Self::Sampled(s) => &s.estimates,
        }
    }

    /// Standard errors when sampled; `None` when exact.
    pub fn std_errors(&self) -> Option<&[f64]> {
        match self {
            Self::Exact(_) => None,
            Self::Sampled(s) => Some(&s.std_errors),
        }
    }
}

/// An attribution that cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AttributeError {
    /// Exact computation was requested (or chosen) and failed.
    #[error(transparent)]
    Exact(#[from] ExactError),
    /// Sampling failed.
    #[error(transparent)]
    Sampling(#[from] SamplingError),
    /// `exact_max_agents` is above the table limit.
    #[error("exact_max_agents {value} is above the table limit {max}")]
    InvalidExactLimit {
        /// The configured value.
        value: usize,
        /// [`MAX_TABLE_AGENTS`].
        max: usize,
    },
}

/// Shapley values of `game` by the configured method.
///
/// # Errors
/// [`AttributeError`] when the chosen estimator fails or the configuration is invalid.
pub fn attribute<G: Game + ?Sized>(
    game: &G,
    config: &AttributionConfig,
) -> Result<Attribution, AttributeError> {
    if config.exact_max_agents > MAX_TABLE_AGENTS {
        return Err(AttributeError::InvalidExactLimit {
            value: config.exact_max_agents,
            max: MAX_TABLE_AGENTS,
        });
    }
    let exact = match config.method {
        Method::Exact => true,
        Method::Sampling => false,
        Method::Auto => {
            game.as_table().is_some()
                || game.closed_form().is_some()
                || game.n() <= config.exact_max_agents
        }
    };
    Ok(if exact {
        Attribution::Exact(exact_for_game(game)?)
    } else {
        Attribution::Sampled(sample_shapley(game, &config.sampling)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::{ClosureGame, CoalitionTable, ExactSource, Pairwise};

    #[test]
    fn auto_picks_exact_when_cheap_and_sampling_otherwise() {
        let auto = AttributionConfig::default();
        let table = CoalitionTable::from_fn(3, |m| f64::from(m.count_ones())).unwrap();
        let r = attribute(&table, &auto).unwrap();
        assert!(matches!(&r, Attribution::Exact(e) if e.source == ExactSource::Enumeration));
        assert!(r.std_errors().is_none());

        let big_pairwise = Pairwise::new(vec![1.0; 50], [(0, 1, 2.0)]).unwrap();
        let r = attribute(&big_pairwise, &auto).unwrap();
        assert!(matches!(&r, Attribution::Exact(e) if e.source == ExactSource::ClosedForm));
        assert_eq!(r.shapley()[0], 2.0);

        let small = ClosureGame::new(4, |c| c.len() as f64).unwrap();
        assert!(matches!(
            attribute(&small, &auto).unwrap(),
            Attribution::Exact(_)
        ));

        let large = ClosureGame::new(30, |c| (c.len() as f64).sqrt()).unwrap();
        let r = attribute(&large, &auto).unwrap();
        assert!(matches!(r, Attribution::Sampled(_)));
        assert_eq!(r.std_errors().map(<[f64]>::len), Some(30));
    }

    #[test]
    fn explicit_methods_are_obeyed() {
        let table = CoalitionTable::from_fn(3, |m| f64::from(m.count_ones())).unwrap();
        let sampling = AttributionConfig {
            method: Method::Sampling,
            ..AttributionConfig::default()
        };
        assert!(matches!(
            attribute(&table, &sampling).unwrap(),
            Attribution::Sampled(_)
        ));

        let large = ClosureGame::new(21, |c| c.len() as f64).unwrap();
        let exact = AttributionConfig {
            method: Method::Exact,
            ..AttributionConfig::default()
        };
        assert!(matches!(
            attribute(&large, &exact),
            Err(AttributeError::Exact(_))
        ));

        let bad = AttributionConfig {
            exact_max_agents: 25,
            ..AttributionConfig::default()
        };
        assert_eq!(
            attribute(&table, &bad),
            Err(AttributeError::InvalidExactLimit { value: 25, max: 20 })
        );
    }
}
