//! A game given by its full table of values, one per coalition bitmask (n ≤ 20).
//!
//! Construction validates everything exact computation relies on: every value finite, no
//! coalition given twice, and every non-empty coalition present (v(∅) defaults to 0). A missing
//! coalition is an error that names the coalitions; values are never filled in or renormalised.

use std::fmt;

use rayon::prelude::*;

use super::{Coalition, Game};

/// The largest `n` for which a full table (2^n values) is accepted.
pub const MAX_TABLE_AGENTS: usize = 20;

/// How many missing coalitions [`TableError::MissingCoalitions`] lists.
pub const MISSING_LISTED: usize = 10;

/// v for all 2^n coalitions, indexed by bitmask (bit i = agent i).
#[derive(Debug, Clone, PartialEq)]
pub struct CoalitionTable {
    n: usize,
    values: Vec<f64>,
}

/// A table that cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableError {
    /// A game needs at least one agent.
    #[error("a game needs at least one agent")]
    NoAgents,
    /// More agents than a full table allows.
    #[error("{n} agents is too many for a full table (at most {max})")]
    TooManyAgents {
        /// Agents requested.
        n: usize,
        /// [`MAX_TABLE_AGENTS`].
        max: usize,
    },
    /// A value is NaN or infinite.
    #[error("{what} is not finite")]
    NonFinite {
        /// Which value.
        what: String,
    },
    /// A coalition names an agent `≥ n`.
    #[error("entry {entry}: agent {agent} is out of range for a game of {n} agents")]
    AgentOutOfRange {
        /// Position of the entry in the input.
        entry: usize,
        /// The index.
        agent: usize,
        /// Agents in the game.
        n: usize,
    },
    /// A coalition lists the same agent twice.
    #[error("entry {entry}: agent {agent} is listed twice")]
    RepeatedMember {
        /// Position of the entry in the input.
        entry: usize,
        /// The index.
        agent: usize,
    },
    /// Two entries give a value for the same coalition.
    #[error("entry {entry}: coalition {} already has a value", Coalition::from_mask(*.mask))]
    DuplicateCoalition {
        /// Position of the second entry in the input.
        entry: usize,
        /// Bitmask of the coalition.
        mask: u32,
    },
    /// Coalitions without a value (exact computation needs all of them).
    #[error(
        "{total_missing} coalitions have no value; the first {} are {}",
        .missing.len(),
        MaskList(.missing)
    )]
    MissingCoalitions {
        /// Bitmasks of the first [`MISSING_LISTED`] missing coalitions, in increasing order.
        missing: Vec<u32>,
        /// How many are missing in all.
        total_missing: usize,
    },
}

/// Displays bitmasks as member sets: `{0, 2}, {1}`.
struct MaskList<'a>(&'a [u32]);

impl fmt::Display for MaskList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, mask) in self.0.iter().enumerate() {
            if k > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", Coalition::from_mask(*mask))?;
        }
        Ok(())
    }
}

fn check_n(n: usize) -> Result<(), TableError> {
    match n {
        0 => Err(TableError::NoAgents),
        n if n > MAX_TABLE_AGENTS => Err(TableError::TooManyAgents {
            n,
            max: MAX_TABLE_AGENTS,
        }),
        _ => Ok(()),
    }
}

impl CoalitionTable {
    /// The table of `n` agents from `(members, value)` entries.
    ///
    /// # Errors
    /// [`TableError`]: bad `n`, a member `≥ n` or repeated, a non-finite value, a coalition given
    /// twice, or coalitions missing (listed in [`TableError::MissingCoalitions`]).
    pub fn from_members<M: AsRef<[usize]>>(
        n: usize,
        entries: impl IntoIterator<Item = (M, f64)>,
    ) -> Result<Self, TableError> {
        check_n(n)?;
        let masks = entries
            .into_iter()
            .enumerate()
            .map(|(entry, (members, v))| {
                let mut mask = 0u32;
                for &agent in members.as_ref() {
                    if agent >= n {
                        return Err(TableError::AgentOutOfRange { entry, agent, n });
                    }
                    if mask & (1 << agent) != 0 {
                        return Err(TableError::RepeatedMember { entry, agent });
                    }
                    mask |= 1 << agent;
                }
                Ok((mask, v))
            });
        Self::collect(n, masks)
    }

    /// The table of `n` agents from `(bitmask, value)` entries.
    ///
    /// # Errors
    /// As [`CoalitionTable::from_members`].
    pub fn from_masks(
        n: usize,
        entries: impl IntoIterator<Item = (u32, f64)>,
    ) -> Result<Self, TableError> {
        check_n(n)?;
        let masks = entries.into_iter().enumerate().map(|(entry, (mask, v))| {
            match (0..32).find(|b| mask & (1 << b) != 0 && *b as usize >= n) {
                Some(agent) => Err(TableError::AgentOutOfRange {
                    entry,
                    agent: agent as usize,
                    n,
                }),
                None => Ok((mask, v)),
            }
        });
        Self::collect(n, masks)
    }

    /// The table with v(S) = `value(mask of S)` for every coalition, v(∅) included.
    ///
    /// # Errors
    /// Bad `n` or a non-finite value.
    pub fn from_fn(n: usize, value: impl Fn(u32) -> f64 + Sync) -> Result<Self, TableError> {
        check_n(n)?;
        let values: Vec<f64> = (0..1u32 << n).into_par_iter().map(&value).collect();
        Self::finite(n, values)
    }

    /// The table of any game with `n ≤ 20`: 2^n evaluations of v, in parallel.
    ///
    /// # Errors
    /// Bad `n` or a non-finite value.
    pub fn tabulate<G: Game + ?Sized>(game: &G) -> Result<Self, TableError> {
        Self::from_fn(game.n(), |mask| game.value(&Coalition::from_mask(mask)))
    }

    fn finite(n: usize, values: Vec<f64>) -> Result<Self, TableError> {
        if let Some(mask) = values.iter().position(|v| !v.is_finite()) {
            return Err(TableError::NonFinite {
                what: format!("v({})", Coalition::from_mask(mask as u32)),
            });
        }
        Ok(Self { n, values })
    }

    fn collect(
        n: usize,
        entries: impl Iterator<Item = Result<(u32, f64), TableError>>,
    ) -> Result<Self, TableError> {
        let mut values = vec![0.0; 1 << n];
        let mut seen = vec![false; 1 << n];
        for (entry, item) in entries.enumerate() {
            let (mask, v) = item?;
            if !v.is_finite() {
                return Err(TableError::NonFinite {
                    what: format!("entry {entry}: v({})", Coalition::from_mask(mask)),
                });
            }
            if std::mem::replace(&mut seen[mask as usize], true) {
                return Err(TableError::DuplicateCoalition { entry, mask });
            }
            values[mask as usize] = v;
        }
        seen[0] = true; // v(∅) defaults to 0
        let mut missing = (0..1u32 << n).filter(|m| !seen[*m as usize]);
        let listed: Vec<u32> = missing.by_ref().take(MISSING_LISTED).collect();
        if !listed.is_empty() {
            let total_missing = listed.len() + missing.count();
            return Err(TableError::MissingCoalitions {
                missing: listed,
                total_missing,
            });
        }
        Ok(Self { n, values })
    }

    /// Number of agents.
    pub fn n(&self) -> usize {
        self.n
    }

    /// v of the coalition with bitmask `mask` (bits `≥ n` are ignored).
    pub fn value_of(&self, mask: u32) -> f64 {
        self.values[(mask as usize) & (self.values.len() - 1)]
    }

    /// All 2^n values, indexed by bitmask.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
}

impl Game for CoalitionTable {
    fn n(&self) -> usize {
        self.n
    }

    fn value(&self, coalition: &Coalition) -> f64 {
        self.value_of(coalition.mask().unwrap_or(u32::MAX))
    }

    fn prefix_values(&self, order: &[usize], out: &mut [f64]) {
        let mut mask = 0usize;
        out[0] = self.values[0];
        for (k, &agent) in order.iter().enumerate() {
            mask |= 1 << agent;
            out[k + 1] = self.values[mask];
        }
    }

    fn as_table(&self) -> Option<&CoalitionTable> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_table_is_accepted_and_empty_defaults_to_zero() {
        let t =
            CoalitionTable::from_members(2, [(vec![0], 1.0), (vec![1], 2.0), (vec![1, 0], 4.0)])
                .unwrap();
        assert_eq!(t.values(), &[0.0, 1.0, 2.0, 4.0]);
        assert_eq!(t.value(&Coalition::from_members(&[0, 1]).unwrap()), 4.0);
        let with_empty = CoalitionTable::from_masks(1, [(0, 0.5), (1, 1.5)]).unwrap();
        assert_eq!(with_empty.value_of(0), 0.5);
    }

    #[test]
    fn missing_coalitions_are_named_and_counted() {
        let err = CoalitionTable::from_members(5, [(vec![0], 1.0)]).unwrap_err();
        let TableError::MissingCoalitions {
            missing,
            total_missing,
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(*total_missing, 30);
        assert_eq!(missing, &[2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        assert!(
            err.to_string()
                .starts_with("30 coalitions have no value; the first 10 are {1}, {0, 1}, {2}"),
            "{err}"
        );
    }

    #[test]
    fn invalid_entries_are_refused() {
        assert!(matches!(
            CoalitionTable::from_members(1, [(vec![0], f64::NAN)]),
            Err(TableError::NonFinite { .. })
        ));
        assert_eq!(
            CoalitionTable::from_masks(1, [(1, 1.0), (1, 2.0)]),
            Err(TableError::DuplicateCoalition { entry: 1, mask: 1 })
        );
        assert_eq!(
            CoalitionTable::from_masks(2, [(3, 1.0), (3, 2.0)])
                .unwrap_err()
                .to_string(),
            "entry 1: coalition {0, 1} already has a value"
        );
        assert_eq!(
            CoalitionTable::from_members(2, [(vec![1, 1], 1.0)]),
            Err(TableError::RepeatedMember { entry: 0, agent: 1 })
        );
        assert_eq!(
            CoalitionTable::from_masks(2, [(0b100, 1.0)]),
            Err(TableError::AgentOutOfRange {
                entry: 0,
                agent: 2,
                n: 2
            })
        );
        assert_eq!(
            CoalitionTable::from_fn(21, |_| 0.0),
            Err(TableError::TooManyAgents { n: 21, max: 20 })
        );
        assert_eq!(
            CoalitionTable::from_fn(0, |_| 0.0),
            Err(TableError::NoAgents)
        );
        assert!(matches!(
            CoalitionTable::from_fn(2, |m| if m == 3 { f64::INFINITY } else { 0.0 }),
            Err(TableError::NonFinite { what }) if what == "v({0, 1})"
        ));
    }

    #[test]
    fn prefix_values_walk_the_masks() {
        let t = CoalitionTable::from_fn(3, f64::from).unwrap();
        let mut out = [0.0; 4];
        t.prefix_values(&[2, 0, 1], &mut out);
        assert_eq!(out, [0.0, 4.0, 5.0, 7.0]);
    }
}
