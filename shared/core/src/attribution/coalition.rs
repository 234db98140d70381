//! A coalition of agents: a fixed-size bitset over agent indices `0..MAX_AGENTS`.
//!
//! Fixed size so it is `Copy`, allocation-free in the samplers' inner loops and usable as a
//! map key. It serialises as the sorted list of member indices.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The largest number of agents a game may have (the capacity of a [`Coalition`]).
pub const MAX_AGENTS: usize = 1024;

const WORDS: usize = MAX_AGENTS / 64;

/// A set of agent indices, each `< MAX_AGENTS`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "Vec<usize>", into = "Vec<usize>")]
pub struct Coalition {
    words: [u64; WORDS],
}

/// A member list that is not a coalition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoalitionError {
    /// An index is not below [`MAX_AGENTS`].
    #[error("agent {agent} is out of range (at most {max} agents)")]
    AgentOutOfRange {
        /// The offending index.
        agent: usize,
        /// [`MAX_AGENTS`].
        max: usize,
    },
    /// An index appears twice.
    #[error("agent {agent} is listed twice in one coalition")]
    RepeatedAgent {
        /// The repeated index.
        agent: usize,
    },
}

impl Default for Coalition {
    fn default() -> Self {
        Self::empty()
    }
}

impl Coalition {
    /// The empty coalition.
    pub const fn empty() -> Self {
        Self { words: [0; WORDS] }
    }

    /// The grand coalition `{0, …, n−1}` (`n` is clamped to [`MAX_AGENTS`]).
    pub fn full(n: usize) -> Self {
        let mut c = Self::empty();
        for i in 0..n.min(MAX_AGENTS) {
            c.insert(i);
        }
        c
    }

    /// The coalition whose members are the set bits of `mask`.
    pub const fn from_mask(mask: u32) -> Self {
        let mut words = [0; WORDS];
        words[0] = mask as u64;
        Self { words }
    }

    /// The coalition of `members`.
    ///
    /// # Errors
    /// [`CoalitionError`] when an index is `≥ MAX_AGENTS` or repeated.
    pub fn from_members(members: &[usize]) -> Result<Self, CoalitionError> {
        let mut c = Self::empty();
        for &agent in members {
            if agent >= MAX_AGENTS {
                return Err(CoalitionError::AgentOutOfRange {
                    agent,
                    max: MAX_AGENTS,
                });
            }
            if !c.insert(agent) {
                return Err(CoalitionError::RepeatedAgent { agent });
            }
        }
        Ok(c)
    }

    /// The bitmask of this coalition when every member is below 32.
    pub fn mask(&self) -> Option<u32> {
        let low = self.words[0];
        (low <= u64::from(u32::MAX) && self.words[1..].iter().all(|w| *w == 0))
            .then_some(low as u32)
    }

    /// Whether `agent` is a member.
    pub fn contains(&self, agent: usize) -> bool {
        agent < MAX_AGENTS && self.words[agent / 64] & (1 << (agent % 64)) != 0
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the coalition has no members.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// The largest member plus one (0 when empty): the smallest `n` this coalition fits.
    pub fn min_agents(&self) -> usize {
        self.words
            .iter()
            .enumerate()
            .rev()
            .find(|(_, w)| **w != 0)
            .map_or(0, |(k, w)| k * 64 + 64 - w.leading_zeros() as usize)
    }

    /// Members in increasing order.
    pub fn members(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(k, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    k * 64 + bit
                })
            })
        })
    }

    /// Adds `agent` (must be `< MAX_AGENTS`); returns whether it was newly added.
    pub(crate) fn insert(&mut self, agent: usize) -> bool {
        let (word, bit) = (agent / 64, 1u64 << (agent % 64));
        let fresh = self.words[word] & bit == 0;
        self.words[word] |= bit;
        fresh
    }
}

impl fmt::Debug for Coalition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.members()).finish()
    }
}

impl fmt::Display for Coalition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl TryFrom<Vec<usize>> for Coalition {
    type Error = CoalitionError;

    fn try_from(members: Vec<usize>) -> Result<Self, Self::Error> {
        Self::from_members(&members)
    }
}

impl From<Coalition> for Vec<usize> {
    fn from(c: Coalition) -> Self {
        c.members().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_round_trip_through_bits() {
        let c = Coalition::from_members(&[0, 3, 63, 64, 1023]).unwrap();
        assert_eq!(c.members().collect::<Vec<_>>(), vec![0, 3, 63, 64, 1023]);
        assert_eq!(c.len(), 5);
        assert_eq!(c.min_agents(), 1024);
        assert!(c.contains(64) && !c.contains(65) && !c.contains(5000));
        assert_eq!(c.mask(), None);
        assert_eq!(c.to_string(), "{0, 3, 63, 64, 1023}");
    }

    #[test]
    fn masks_and_full() {
        assert_eq!(Coalition::from_mask(0b1011).mask(), Some(0b1011));
        assert_eq!(Coalition::full(3), Coalition::from_mask(0b111));
        assert_eq!(Coalition::full(70).len(), 70);
        assert!(Coalition::empty().is_empty());
        assert_eq!(Coalition::empty().min_agents(), 0);
    }

    #[test]
    fn serialises_as_a_member_list() {
        use serde::de::IntoDeserializer;
        use serde::de::value::{Error, SeqDeserializer};

        let from = |members: Vec<usize>| {
            let d: SeqDeserializer<_, Error> = members.into_deserializer();
            Coalition::deserialize(d)
        };
        let c = from(vec![3, 1]).unwrap();
        assert_eq!(c, Coalition::from_mask(0b1010));
        assert_eq!(Vec::<usize>::from(c), vec![1, 3]);
        assert!(from(vec![1, 1]).is_err() && from(vec![MAX_AGENTS]).is_err());
    }

    #[test]
    fn invalid_member_lists_are_refused() {
        assert_eq!(
            Coalition::from_members(&[1, 1]),
            Err(CoalitionError::RepeatedAgent { agent: 1 })
        );
        assert_eq!(
            Coalition::from_members(&[MAX_AGENTS]),
            Err(CoalitionError::AgentOutOfRange {
                agent: MAX_AGENTS,
                max: MAX_AGENTS
            })
        );
    }
}
