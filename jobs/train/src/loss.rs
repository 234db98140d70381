//! The GRPO policy loss on per-token tensors, with the anchors' clipping and aggregation.
//!
//! Per token, with `r = exp(clamp(logp − old, ±20))` and advantage `A`:
//! `pg = max(−A·r, −A·clip(r, 1−ε_low, 1+ε_high))`, and for `A < 0` the dual clip
//! `pg = min(pg, −c·A)` (verl); then `pg·w_is` with the truncated importance weight of
//! off-policy rows, plus `β·k3` when a reference is given (k3 = `exp(ref−logp) − (ref−logp) − 1`).
//! The aggregation weights come from [`token_weights`], so the loss of a micro-batch is a plain
//! weighted sum and micro-batches add up to the batch loss.

use candle_core::{Result, Tensor};

pub use agentrl_core::training::config::Aggregation;

/// Clipping parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clip {
    /// ε_low.
    pub low: f64,
    /// ε_high (clip-higher).
    pub high: f64,
    /// Dual-clip constant c for negative advantages.
    pub dual: f64,
}

/// Per-token inputs of a micro-batch, all of shape `[N]`.
#[derive(Debug)]
pub struct TokenInputs<'a> {
    /// log π_θ of the token (carries the graph).
    pub logp: &'a Tensor,
    /// log π_old (detached).
    pub old: &'a Tensor,
    /// Advantage of the token.
    pub advantages: &'a Tensor,
    /// Aggregation weight of the token.
    pub weights: &'a Tensor,
    /// Truncated importance weight (1 for on-policy tokens).
    pub is_weights: &'a Tensor,
    /// log π_ref and β, when the KL term is on.
    pub reference: Option<(&'a Tensor, f64)>,
}

/// The scalar loss of a micro-batch.
///
/// # Errors
/// Shape mismatches.
pub fn grpo_loss(t: &TokenInputs<'_>, clip: Clip) -> Result<Tensor> {
    let ratio = (t.logp - t.old)?.clamp(-20.0, 20.0)?.exp()?;
    let neg_a = t.advantages.neg()?;
    let pg1 = (&neg_a * &ratio)?;
    let pg2 = (&neg_a * ratio.clamp(1.0 - clip.low, 1.0 + clip.high)?)?;
    let clipped = pg1.maximum(&pg2)?;
    let dual = (&neg_a * clip.dual)?.minimum(&clipped)?;
    let negative = t.advantages.lt(0.0)?;
    let mut pg = (negative.where_cond(&dual, &clipped)? * t.is_weights)?;
    if let Some((reference, beta)) = t.reference {
        let d = (reference - t.logp)?;
        let k3 = ((d.exp()? - &d)? - 1.0)?;
        pg = (pg + (k3 * beta)?)?;
    }
    (pg * t.weights)?.sum_all()
}

/// Aggregation weight of every response token: `lengths[i]` loss tokens in rollout `rollout[i]`
/// for each of the sequences; `rollouts` in all; `max_len` for Dr. GRPO's constant.
#[must_use]
pub fn token_weights(
    aggregation: Aggregation,
    lengths: &[usize],
    rollout: &[usize],
    rollouts: usize,
    max_len: usize,
) -> Vec<f64> {
    let total: usize = lengths.iter().sum();
    let mut per_rollout = vec![0usize; rollouts];
    for (&n, &r) in lengths.iter().zip(rollout) {
        per_rollout[r] += n;
    }
    lengths
        .iter()
        .zip(rollout)
        .map(|(_, &r)| match aggregation {
            Aggregation::TokenMean => 1.0 / total.max(1) as f64,
            Aggregation::SequenceMean => 1.0 / (rollouts.max(1) * per_rollout[r].max(1)) as f64,
            Aggregation::DrGrpo => 1.0 / (rollouts.max(1) * max_len.max(1)) as f64,
        })
        .collect()
}
