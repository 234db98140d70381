//! Interactive permutation sampling for teams whose v is measured (e.g. by ablation runs).
//!
//! An [`InteractiveShapley`] session proposes batches of coalitions to evaluate — the prefixes of
//! freshly sampled permutations, deduplicated against each other and against values already
//! measured — accepts the measured values, and updates the estimates and their error bars. It is
//! plain data (serde), so a service can persist it between calls; a deserialised session is
//! trusted as is, so persist only sessions this type serialised.
//!
//! Key properties:
//! - Same estimator, stopping rule and permutation streams as
//!   [`sample_shapley`](super::sample_shapley): permutation k comes from ChaCha8(`seed`, stream
//!   k). Completed permutations are folded in index order, and the stopping rule is checked
//!   after each, so given the same measurements the result does not depend on batch sizes or on
//!   the order in which values arrive.
//! - A batch holds at most `batch_size` coalitions, but always at least one whole permutation
//!   (n + 1 prefixes for the first one).
//! - Measured values are kept for reuse when their level is small: a coalition of size s is
//!   retained when C(n, s) ≤ [`RETAIN_LEVEL_LIMIT`] (so every value is kept for n ≤ 12, and
//!   v(∅) and v(N) always). Larger levels are rarely revisited; dropping them bounds the state.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::moments::Moments;
use super::sampling::permutation;
use super::{Coalition, MAX_AGENTS};

/// Levels with at most this many coalitions keep their measured values for reuse.
pub const RETAIN_LEVEL_LIMIT: u64 = 4096;

/// Configuration of an interactive session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InteractiveConfig {
    /// Seed of the permutation streams.
    pub seed: u64,
    /// Stop when max_i se_i ≤ `target_error` × max_i |φ̂_i|.
    pub target_error: f64,
    /// Permutations before the stopping rule is consulted.
    pub min_permutations: u64,
    /// Hard cap on permutations.
    pub max_permutations: u64,
    /// Largest number of coalitions per proposed batch (at least one permutation is proposed),
    /// and of permutations waiting on measurements: with few agents every coalition is soon
    /// awaited, and without the second bound one batch would hold every permutation up to the
    /// cap (a million pending permutations of five agents are 63 MB of state).
    pub batch_size: usize,
}

impl Default for InteractiveConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            target_error: 0.01,
            min_permutations: 100,
            max_permutations: 10_000,
            batch_size: 256,
        }
    }
}

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// More measurements are needed.
    Running,
    /// The stopping rule was met.
    TargetReached,
    /// `max_permutations` permutations are complete.
    CapReached,
}

/// The estimates after the measurements so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractiveProgress {
    /// φ̂_i per agent (0 before the first complete permutation).
    pub estimates: Vec<f64>,
    /// Standard errors, once two permutations are complete.
    pub std_errors: Option<Vec<f64>>,
    /// max_i |φ̂_i|, the scale of the stopping rule.
    pub spread: f64,
    /// Permutations whose marginals are folded in.
    pub permutations_completed: u64,
    /// Permutations proposed so far.
    pub permutations_proposed: u64,
    /// Coalitions proposed and not yet measured.
    pub awaiting: usize,
    /// Where the session is.
    pub status: SessionStatus,
}

/// A session that cannot be started.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SessionError {
    /// No agents.
    #[error("a game needs at least one agent")]
    NoAgents,
    /// More agents than a coalition holds.
    #[error("{n} agents is too many (at most {max})")]
    TooManyAgents {
        /// Agents requested.
        n: usize,
        /// [`MAX_AGENTS`].
        max: usize,
    },
    /// A configuration field is out of range.
    #[error("invalid interactive configuration: {field} {reason}")]
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Measurements that cannot be accepted; the session is left unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SubmitError {
    /// A value is NaN or infinite.
    #[error("v({members:?}) = {value} is not finite")]
    NonFinite {
        /// Members of the coalition.
        members: Vec<usize>,
        /// The value.
        value: f64,
    },
    /// The coalition was not proposed (or its value was already used and dropped).
    #[error("coalition {members:?} was not requested")]
    NotRequested {
        /// Members of the coalition.
        members: Vec<usize>,
    },
    /// A different value is already known for the coalition.
    #[error("coalition {members:?} already has value {known}, got {submitted}")]
    ConflictingValue {
        /// Members of the coalition.
        members: Vec<usize>,
        /// The value on record.
        known: f64,
        /// The value submitted.
        submitted: f64,
    },
}

/// A proposed permutation waiting for its prefix values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PendingPermutation {
    order: Vec<usize>,
    /// v of each prefix (k = 0..=n), when known.
    values: Vec<Option<f64>>,
}

/// The n + 1 prefixes of `order`, from ∅ to the grand coalition.
fn prefixes(order: &[usize]) -> impl Iterator<Item = Coalition> + '_ {
    let mut c = Coalition::empty();
    std::iter::once(c).chain(order.iter().map(move |&a| {
        c.insert(a);
        c
    }))
}

/// An interactive Shapley sampling session (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractiveShapley {
    n: usize,
    config: InteractiveConfig,
    proposed: u64,
    pending: VecDeque<PendingPermutation>,
    awaiting: BTreeSet<Coalition>,
    #[serde(with = "pairs")]
    known: BTreeMap<Coalition, f64>,
    moments: Moments,
    status: SessionStatus,
}

impl InteractiveShapley {
    /// A new session over `n` agents.
    ///
    /// # Errors
    /// [`SessionError`] for a bad `n` or configuration.
    pub fn new(n: usize, config: InteractiveConfig) -> Result<Self, SessionError> {
        if n == 0 {
            return Err(SessionError::NoAgents);
        }
        if n > MAX_AGENTS {
            return Err(SessionError::TooManyAgents { n, max: MAX_AGENTS });
        }
        let invalid = |field, reason| Err(SessionError::InvalidConfig { field, reason });
        if !(config.target_error.is_finite() && config.target_error >= 0.0) {
            return invalid("target_error", "must be finite and ≥ 0");
        }
        if config.min_permutations < 2 {
            return invalid("min_permutations", "must be at least 2");
        }
        if config.max_permutations < config.min_permutations {
            return invalid("max_permutations", "must be ≥ min_permutations");
        }
        if config.batch_size == 0 {
            return invalid("batch_size", "must be at least 1");
        }
        Ok(Self {
            n,
            config,
            proposed: 0,
            pending: VecDeque::new(),
            awaiting: BTreeSet::new(),
            known: BTreeMap::new(),
            moments: Moments::new(n),
            status: SessionStatus::Running,
        })
    }

    /// The next coalitions to evaluate; empty when the session is finished, or when every
    /// permutation up to the cap or `batch_size` permutations wait on measurements (then submit
    /// the [`outstanding`](Self::outstanding) ones).
    pub fn propose(&mut self) -> Vec<Coalition> {
        let mut batch: Vec<Coalition> = Vec::new();
        while self.status == SessionStatus::Running
            && self.proposed < self.config.max_permutations
            && self.pending.len() < self.config.batch_size
        {
            let order = permutation(self.config.seed, self.proposed, self.n);
            let mut pending = PendingPermutation {
                values: vec![None; self.n + 1],
                order,
            };
            let mut fresh = Vec::new();
            for (k, c) in prefixes(&pending.order).enumerate() {
                if let Some(v) = self.known.get(&c) {
                    pending.values[k] = Some(*v);
                } else if !self.awaiting.contains(&c) {
                    fresh.push(c);
                }
            }
            if !batch.is_empty() && batch.len() + fresh.len() > self.config.batch_size {
                break;
            }
            self.awaiting.extend(fresh.iter().copied());
            batch.extend(fresh);
            self.pending.push_back(pending);
            self.proposed += 1;
            self.advance();
        }
        batch
    }

    /// Coalitions proposed and not yet measured, in increasing order.
    pub fn outstanding(&self) -> Vec<Coalition> {
        self.awaiting.iter().copied().collect()
    }

    /// Records measured values, folds in every permutation that became complete, and reports.
    /// Re-submitting a value already on record is accepted and ignored.
    ///
    /// # Errors
    /// [`SubmitError`] for a non-finite value, a coalition that was not requested, or a value
    /// that conflicts with one on record; nothing is recorded then.
    pub fn submit(
        &mut self,
        measurements: &[(Coalition, f64)],
    ) -> Result<InteractiveProgress, SubmitError> {
        let mut received: BTreeMap<Coalition, f64> = BTreeMap::new();
        for &(coalition, value) in measurements {
            if !value.is_finite() {
                return Err(SubmitError::NonFinite {
                    members: coalition.members().collect(),
                    value,
                });
            }
            let on_record = received
                .get(&coalition)
                .or_else(|| self.known.get(&coalition));
            match on_record {
                Some(&known) if known != value => {
                    return Err(SubmitError::ConflictingValue {
                        members: coalition.members().collect(),
                        known,
                        submitted: value,
                    });
                }
                Some(_) => {}
                None if self.awaiting.contains(&coalition) => {
                    received.insert(coalition, value);
                }
                None => {
                    return Err(SubmitError::NotRequested {
                        members: coalition.members().collect(),
                    });
                }
            }
        }
        for (coalition, value) in &received {
            self.awaiting.remove(coalition);
            if retained(self.n, coalition.len()) {
                self.known.insert(*coalition, *value);
            }
        }
        for pending in &mut self.pending {
            for (slot, c) in pending.values.iter_mut().zip(prefixes(&pending.order)) {
                if slot.is_none() {
                    *slot = received.get(&c).copied();
                }
            }
        }
        self.advance();
        Ok(self.progress())
    }

    /// The estimates so far.
    pub fn progress(&self) -> InteractiveProgress {
        InteractiveProgress {
            estimates: self.moments.means().to_vec(),
            std_errors: self.moments.std_errors(),
            spread: self.moments.spread(),
            permutations_completed: self.moments.count(),
            permutations_proposed: self.proposed,
            awaiting: self.awaiting.len(),
            status: self.status,
        }
    }

    /// Number of agents.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The configuration.
    pub fn config(&self) -> &InteractiveConfig {
        &self.config
    }

    /// Folds complete permutations in index order and applies the stopping rule after each.
    fn advance(&mut self) {
        let mut sample = vec![0.0; self.n];
        while self.status == SessionStatus::Running {
            let Some(front) = self.pending.front() else {
                break;
            };
            let Some(values) = front.values.iter().copied().collect::<Option<Vec<f64>>>() else {
                break;
            };
            for (k, &agent) in front.order.iter().enumerate() {
                sample[agent] = values[k + 1] - values[k];
            }
            self.pending.pop_front();
            self.moments.push(&sample);
            let completed = self.moments.count();
            if completed >= self.config.min_permutations
                && self.moments.target_met(self.config.target_error)
            {
                self.status = SessionStatus::TargetReached;
            } else if completed >= self.config.max_permutations {
                self.status = SessionStatus::CapReached;
            }
        }
        if self.status != SessionStatus::Running {
            self.pending.clear();
            self.awaiting.clear();
        }
    }
}

/// Whether values of coalitions of size `s` among `n` agents are kept: C(n, s) ≤ limit.
fn retained(n: usize, s: usize) -> bool {
    let k = s.min(n - s) as u64;
    let mut binomial = 1u64;
    for i in 0..k {
        // C(n, i+1) = C(n, i) · (n − i) / (i + 1), exact in integers.
        binomial = binomial * (n as u64 - i) / (i + 1);
        if binomial > RETAIN_LEVEL_LIMIT {
            return false;
        }
    }
    true
}

/// Serialises a coalition-keyed map as a list of pairs (JSON keys must be strings).
mod pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};

    use super::Coalition;

    pub(super) fn serialize<S: Serializer>(
        map: &BTreeMap<Coalition, f64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(map)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<Coalition, f64>, D::Error> {
        Ok(Vec::<(Coalition, f64)>::deserialize(deserializer)?
            .into_iter()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde::de::DeserializeOwned;

    use super::*;
    use crate::attribution::{CoalitionTable, Game, exact_shapley};

    fn random_table(n: usize, seed: u64) -> CoalitionTable {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let values: Vec<f64> = (0..1 << n).map(|_| rng.random_range(0.0..10.0)).collect();
        CoalitionTable::from_fn(n, |m| if m == 0 { 0.0 } else { values[m as usize] }).unwrap()
    }

    fn run(game: &impl Game, config: InteractiveConfig) -> (InteractiveProgress, usize) {
        let mut session = InteractiveShapley::new(game.n(), config).unwrap();
        let mut evaluations = 0;
        loop {
            let batch = session.propose();
            if batch.is_empty() {
                let progress = session.progress();
                assert_ne!(progress.status, SessionStatus::Running);
                return (progress, evaluations);
            }
            evaluations += batch.len();
            let values: Vec<(Coalition, f64)> = batch.iter().map(|c| (*c, game.value(c))).collect();
            session.submit(&values).unwrap();
        }
    }

    fn config(batch_size: usize) -> InteractiveConfig {
        InteractiveConfig {
            seed: 11,
            target_error: 0.02,
            min_permutations: 100,
            max_permutations: 50_000,
            batch_size,
        }
    }

    #[test]
    fn converges_to_the_exact_values_within_its_error_bars() {
        for seed in 0..5 {
            let table = random_table(5, seed);
            let exact = exact_shapley(&table).shapley;
            let (progress, evaluations) = run(&table, config(16));
            assert_eq!(progress.status, SessionStatus::TargetReached);
            assert!(
                evaluations <= 32,
                "each coalition is measured once, got {evaluations}"
            );
            let se = progress.std_errors.unwrap();
            for i in 0..5 {
                let err = (progress.estimates[i] - exact[i]).abs();
                assert!(err <= 4.0 * se[i], "agent {i}: {err} > 4·{}", se[i]);
                assert!(se[i] <= 0.02 * progress.spread);
            }
            let total: f64 = progress.estimates.iter().sum();
            assert!((total - table.value_of(31)).abs() < 1e-9);
        }
    }

    #[test]
    fn results_do_not_depend_on_the_batch_size() {
        let table = random_table(9, 3);
        let (small, _) = run(&table, config(1));
        let (large, _) = run(&table, config(10_000));
        assert_eq!(small.estimates, large.estimates);
        assert_eq!(small.permutations_completed, large.permutations_completed);
    }

    #[test]
    fn batches_are_deduplicated_and_bounded() {
        let mut session = InteractiveShapley::new(30, config(100)).unwrap();
        let batch = session.propose();
        // 31 prefixes for the first permutation, then 29 new ones each (∅ and N are shared).
        assert_eq!(batch.len(), 31 + 29 * 2);
        let distinct: BTreeSet<_> = batch.iter().collect();
        assert_eq!(distinct.len(), batch.len());
        assert_eq!(batch.iter().filter(|c| c.is_empty()).count(), 1);
        assert_eq!(session.outstanding().len(), batch.len());
        assert_eq!(session.progress().permutations_proposed, 3);
        let tiny = InteractiveShapley::new(30, config(1)).unwrap().propose();
        assert_eq!(tiny.len(), 31, "at least one whole permutation");
    }

    #[test]
    fn few_agents_and_a_high_cap_keep_the_pending_permutations_bounded() {
        let table = random_table(5, 2);
        let config = InteractiveConfig {
            target_error: 0.0,
            max_permutations: 999_999,
            ..config(256)
        };
        let mut session = InteractiveShapley::new(5, config.clone()).unwrap();
        let batch = session.propose();
        assert_eq!(batch.len(), 32, "every coalition of five agents");
        assert_eq!(session.progress().permutations_proposed, 256);
        assert!(serde_json::to_vec(&session).unwrap().len() < 100_000);
        let (progress, evaluations) = run(
            &table,
            InteractiveConfig {
                max_permutations: 5_000,
                ..config
            },
        );
        assert_eq!(progress.permutations_completed, 5_000);
        assert_eq!(evaluations, 32, "each coalition measured once");
    }

    #[test]
    fn stops_at_the_cap() {
        let table = random_table(6, 1);
        let capped = InteractiveConfig {
            target_error: 0.0,
            max_permutations: 150,
            ..config(64)
        };
        let (progress, _) = run(&table, capped);
        assert_eq!(progress.status, SessionStatus::CapReached);
        assert_eq!(progress.permutations_completed, 150);
        assert_eq!(progress.awaiting, 0);
    }

    #[test]
    fn bad_measurements_are_refused_and_change_nothing() {
        let mut session = InteractiveShapley::new(3, config(100)).unwrap();
        let batch = session.propose();
        let before = session.clone();
        let stranger = Coalition::from_members(&[7]).unwrap();
        assert_eq!(
            session.submit(&[(stranger, 1.0)]).unwrap_err().to_string(),
            "coalition [7] was not requested"
        );
        assert_eq!(
            session.submit(&[(batch[0], 1.0), (stranger, 1.0)]),
            Err(SubmitError::NotRequested { members: vec![7] })
        );
        assert!(matches!(
            session.submit(&[(batch[1], f64::NAN)]),
            Err(SubmitError::NonFinite { .. })
        ));
        assert!(matches!(
            session.submit(&[(batch[1], 1.0), (batch[1], 2.0)]),
            Err(SubmitError::ConflictingValue {
                known: 1.0,
                submitted: 2.0,
                ..
            })
        ));
        assert_eq!(session, before);
        session.submit(&[(batch[0], 0.0)]).unwrap();
        session.submit(&[(batch[0], 0.0)]).unwrap();
        assert!(matches!(
            session.submit(&[(batch[0], 5.0)]),
            Err(SubmitError::ConflictingValue { .. })
        ));
    }

    #[test]
    fn invalid_sessions_are_refused() {
        assert_eq!(
            InteractiveShapley::new(0, config(1)),
            Err(SessionError::NoAgents)
        );
        assert!(matches!(
            InteractiveShapley::new(3, config(0)),
            Err(SessionError::InvalidConfig {
                field: "batch_size",
                ..
            })
        ));
    }

    #[test]
    fn retention_keeps_small_levels() {
        assert!((0..=12).all(|s| retained(12, s)));
        assert!(retained(1000, 0) && retained(1000, 1000) && retained(1000, 1));
        assert!(!retained(1000, 2) && !retained(20, 10));
    }

    #[test]
    fn the_session_is_serialisable() {
        fn assert_serde<T: Serialize + DeserializeOwned>() {}
        assert_serde::<InteractiveShapley>();
        assert_serde::<InteractiveProgress>();
    }
}
