//! Offline evaluation on a dataset's `validation.parquet`: how good the policy is, measured on
//! trajectories it did not train on, the same way for the base model and the trained one, so
//! the promotion gate can compare them.
//!
//! For each validation group (the candidates answering one prompt, `group_id`) the policy's
//! probability of each candidate is its sequence likelihood, `exp(Σ log π(token))` over the
//! candidate's loss tokens; normalised within the group, that is the chance that the policy,
//! choosing among those candidates, picks each one. The **validation reward** is the mean over
//! groups of `Σ pᵢ·rᵢ` (the expected episode reward of that choice) and the **safety-violation
//! rate** the mean of `Σ pᵢ·[i violated a safety rule]`. A policy that learnt to prefer the
//! better and safe answers scores higher and lower; the same data and code score the base
//! model. Groups of one candidate say nothing about preferences and are left out; when no
//! group has two, every trajectory counts with equal weight (`groups` is then 0: the numbers
//! are the data's, not the policy's).

pub use agentrl_core::training::Evaluation;

use crate::data::{DataRollout, Rollouts};
use crate::error::Result;
use crate::model::Model;
use crate::step::{TrainSeq, response_logprobs};

/// Scores `model` on `rollouts` (the validation split), `budget` packed tokens per forward;
/// turns are loaded from the store a few micro-batches at a time.
///
/// # Errors
/// Tensor failures, I/O.
pub fn evaluate(
    model: &Model,
    rollouts: &Rollouts,
    validation_set: &str,
    budget: usize,
) -> Result<Option<Evaluation>> {
    if rollouts.items.is_empty() {
        return Ok(None);
    }
    let mut loglik = vec![0.0f64; rollouts.items.len()];
    let mut seqs = Vec::new();
    let mut tokens = 0;
    for i in 0..rollouts.items.len() {
        for t in rollouts.turns(i)? {
            let n = t.ids.len() - t.start;
            tokens += t.ids.len();
            seqs.push(TrainSeq {
                ids: t.ids,
                start: t.start,
                mask: t.mask,
                advantages: vec![0.0; n],
                behaviour: None,
                rollout: i,
                weight: 0.0,
            });
        }
        if tokens >= CHUNK_MICRO_BATCHES * budget || i + 1 == rollouts.items.len() {
            add_loglik(model, &seqs, budget, &mut loglik)?;
            seqs.clear();
            tokens = 0;
        }
    }
    Ok(Some(score(&rollouts.items, &loglik, validation_set)))
}

/// Micro-batches of turns loaded at once while scoring.
const CHUNK_MICRO_BATCHES: usize = 8;

/// Adds each sequence's log-likelihood (over its loss tokens) to its rollout's.
fn add_loglik(model: &Model, seqs: &[TrainSeq], budget: usize, loglik: &mut [f64]) -> Result<()> {
    let logprobs = response_logprobs(model, seqs, budget)?;
    for (seq, lp) in seqs.iter().zip(&logprobs) {
        loglik[seq.rollout] += seq
            .mask
            .iter()
            .zip(lp)
            .filter(|(m, _)| **m)
            .map(|(_, &l)| f64::from(l))
            .sum::<f64>();
    }
    Ok(())
}

/// The scores from each rollout's sequence log-likelihood.
fn score(rollouts: &[DataRollout], loglik: &[f64], validation_set: &str) -> Evaluation {
    let mut groups: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for (i, r) in rollouts.iter().enumerate() {
        groups.entry(r.group.as_str()).or_default().push(i);
    }
    let informative: Vec<&Vec<usize>> = groups.values().filter(|g| g.len() >= 2).collect();
    let (mut reward, mut unsafe_rate) = (0.0, 0.0);
    if informative.is_empty() {
        let n = rollouts.len() as f64;
        reward = rollouts.iter().map(|r| r.reward).sum::<f64>() / n;
        unsafe_rate = rollouts.iter().filter(|r| r.safety_violation).count() as f64 / n;
    } else {
        for group in &informative {
            // Softmax of the log-likelihoods, shifted by the largest for stability.
            let top = group
                .iter()
                .map(|&i| loglik[i])
                .fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = group.iter().map(|&i| (loglik[i] - top).exp()).collect();
            let total: f64 = weights.iter().sum();
            for (&i, w) in group.iter().zip(&weights) {
                let p = w / total;
                reward += p * rollouts[i].reward;
                unsafe_rate += p * f64::from(u8::from(rollouts[i].safety_violation));
            }
        }
        reward /= informative.len() as f64;
        unsafe_rate /= informative.len() as f64;
    }
    Evaluation {
        validation_set: validation_set.to_owned(),
        reward,
        safety_violation_rate: unsafe_rate,
        trajectories: rollouts.len() as u64,
        groups: informative.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(group: &str, reward: f64, unsafe_: bool) -> DataRollout {
        DataRollout {
            group: group.into(),
            reward,
            turn_rewards: Vec::new(),
            turns: Vec::new(),
            safety_violation: unsafe_,
        }
    }

    #[test]
    fn the_likelier_candidate_weighs_more() {
        let rollouts = [
            rollout("g", 1.0, false),
            rollout("g", 0.0, true),
            rollout("solo", 0.5, false),
        ];
        // Equal likelihoods: the group's mean; the single-candidate group is left out.
        let even = score(&rollouts, &[-3.0, -3.0, -1.0], "h");
        assert!(
            (even.reward - 0.5).abs() < 1e-12 && (even.safety_violation_rate - 0.5).abs() < 1e-12
        );
        assert_eq!((even.groups, even.trajectories), (1, 3));
        // The good answer e² times likelier than the unsafe one.
        let good = score(&rollouts, &[-1.0, -3.0, -1.0], "h");
        let p = 1.0 / (1.0 + (-2.0f64).exp());
        assert!((good.reward - p).abs() < 1e-12);
        assert!((good.safety_violation_rate - (1.0 - p)).abs() < 1e-12);
        // Huge log-likelihoods do not overflow.
        let far = score(&rollouts, &[-1000.0, -5000.0, 0.0], "h");
        assert!((far.reward - 1.0).abs() < 1e-12);
    }

    #[test]
    fn without_groups_the_data_is_the_score() {
        let rollouts = [rollout("a", 1.0, false), rollout("b", 0.0, true)];
        let e = score(&rollouts, &[-1.0, -9.0], "h");
        assert_eq!((e.reward, e.safety_violation_rate, e.groups), (0.5, 0.5, 0));
    }
}
