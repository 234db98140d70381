//! One optimizer step over a batch of sequences: micro-batches bounded by a token budget,
//! gradients accumulated, clipped, then AdamW. The objective is the SFT negative
//! log-likelihood or the GRPO loss of [`crate::loss`].

use candle_core::{DType, Device, Tensor, Var};

use crate::error::{Result, TrainError};
use crate::loss::{Clip, TokenInputs, grpo_loss};
use crate::model::{Dropout, Model, Sink, Tokens, vocab};
use crate::optim::{Accumulator, AdamW};

/// One training sequence: prompt then response, with per-response-token data.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainSeq {
    /// Prompt and response token ids.
    pub ids: Vec<u32>,
    /// Where the response starts.
    pub start: usize,
    /// Per response token: trained on (model-generated) or not.
    pub mask: Vec<bool>,
    /// Per response token advantage (1 for SFT).
    pub advantages: Vec<f32>,
    /// Per response token behaviour log-probability, when the data's policy is the model's.
    pub behaviour: Option<Vec<f32>>,
    /// The rollout this sequence belongs to (for per-rollout weighting).
    pub rollout: usize,
    /// Aggregation weight of each of its loss tokens.
    pub weight: f64,
}

impl TrainSeq {
    /// `response` after `prompt`, every response token counted (advantage 1, weight 1): a
    /// completion as [`response_logprobs`] scores it.
    #[must_use]
    pub fn completion(prompt: &[u32], response: &[u32]) -> Self {
        let n = response.len();
        Self {
            ids: [prompt, response].concat(),
            start: prompt.len(),
            mask: vec![true; n],
            advantages: vec![1.0; n],
            behaviour: None,
            rollout: 0,
            weight: 1.0,
        }
    }

    /// Loss tokens.
    #[must_use]
    pub fn loss_tokens(&self) -> usize {
        self.mask.iter().filter(|&&m| m).count()
    }
}

/// What a step optimises.
#[derive(Debug, Clone, Copy)]
pub enum Objective {
    /// −Σ w·log π(token).
    Nll,
    /// The GRPO loss.
    Grpo {
        /// Clipping.
        clip: Clip,
        /// β of the KL term (needs a reference model).
        kl_beta: f64,
        /// Truncation C of importance weights.
        importance_cap: f64,
        /// Updates on the same batch (μ).
        updates: u32,
    },
}

/// Averages over the step's loss tokens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepStats {
    /// The objective's value (the last update's).
    pub loss: f64,
    /// Mean k3 KL to the reference (0 when off).
    pub kl: f64,
    /// Fraction of tokens whose ratio was clipped.
    pub clip_fraction: f64,
    /// Mean entropy of the policy at loss tokens.
    pub entropy: f64,
    /// Global gradient norm before clipping (the last update's).
    pub grad_norm: f64,
    /// Loss tokens.
    pub tokens: usize,
    /// Mean truncated importance weight.
    pub importance_weight: f64,
}

/// Sequences split into micro-batches of at most `budget` tokens, packed end to end (one
/// sequence longer than the budget goes alone).
#[must_use]
pub fn micro_batches(seqs: &[TrainSeq], budget: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut tokens) = (0, 0);
    for (i, s) in seqs.iter().enumerate() {
        if i > start && tokens + s.ids.len() > budget {
            out.push(start..i);
            (start, tokens) = (i, 0);
        }
        tokens += s.ids.len();
    }
    if start < seqs.len() {
        out.push(start..seqs.len());
    }
    out
}

/// Tensors of one micro-batch: its sequences packed, and for every loss token its hidden row
/// and target.
pub(crate) struct Packed {
    pub tokens: Tokens,
    pub rows: Tensor,
    pub targets: Tensor,
    /// (sequence, response index) of each loss token.
    pub index: Vec<(usize, usize)>,
}

pub(crate) fn pack(seqs: &[TrainSeq], device: &Device, every_token: bool) -> Result<Packed> {
    let (mut rows, mut targets, mut index) = (Vec::new(), Vec::new(), Vec::new());
    let mut first = 0;
    for (i, s) in seqs.iter().enumerate() {
        if s.start == 0 {
            return Err(TrainError::Data(
                "a sequence has an empty prompt: nothing predicts its first token".into(),
            ));
        }
        for j in 0..s.ids.len() - s.start {
            if every_token || s.mask[j] {
                rows.push((first + s.start + j - 1) as u32);
                targets.push(s.ids[s.start + j]);
                index.push((i, j));
            }
        }
        first += s.ids.len();
    }
    let n = rows.len();
    Ok(Packed {
        tokens: Tokens::packed(seqs.iter().map(|s| s.ids.as_slice()), device)?,
        rows: Tensor::from_vec(rows, n, device)?,
        targets: Tensor::from_vec(targets, n, device)?,
        index,
    })
}

/// Log-probabilities of every response token of `seqs` under `model` (no graph), micro-batch
/// by micro-batch: never more than one micro-batch of logits exists at once.
///
/// # Errors
/// Tensor failures.
pub fn response_logprobs(model: &Model, seqs: &[TrainSeq], budget: usize) -> Result<Vec<Vec<f32>>> {
    let frozen = model.frozen_view();
    let mut out: Vec<Vec<f32>> = seqs
        .iter()
        .map(|s| vec![0.0; s.ids.len() - s.start])
        .collect();
    for range in micro_batches(seqs, budget) {
        let batch = &seqs[range.clone()];
        let p = pack(batch, model.device(), true)?;
        if p.index.is_empty() {
            continue;
        }
        let hidden = frozen.hidden(&p.tokens, None)?;
        let logp = frozen
            .token_logprobs(&hidden, &p.rows, &p.targets)?
            .logp
            .to_dtype(DType::F32)?
            .to_vec1::<f32>()?;
        for ((i, j), v) in p.index.iter().zip(logp) {
            out[range.start + i][*j] = v;
        }
    }
    Ok(out)
}

fn f32s(values: Vec<f32>, device: &Device, dtype: DType) -> Result<Tensor> {
    let n = values.len();
    Ok(Tensor::from_vec(values, n, device)?.to_dtype(dtype)?)
}

/// Everything one step needs besides the batch.
#[derive(Debug)]
pub struct StepContext<'a> {
    /// The policy being trained.
    pub model: &'a Model,
    /// The KL reference, when `kl_beta > 0`.
    pub reference: Option<&'a Model>,
    /// The optimizer.
    pub optimizer: &'a mut AdamW,
    /// Learning rate of this step.
    pub lr: f64,
    /// Micro-batch budget in tokens (sequences packed end to end).
    pub budget: usize,
    /// LoRA dropout, its seed this step's (each micro-batch and update derives its own).
    pub dropout: Option<Dropout>,
    /// Recompute each decoder layer in the backward instead of keeping its activations.
    pub checkpointing: bool,
}

/// Runs the objective's updates on `seqs` (weights in each sequence's `weight`).
///
/// # Errors
/// A non-finite gradient, tensor failures.
pub fn train_step(
    ctx: &mut StepContext<'_>,
    seqs: &[TrainSeq],
    objective: Objective,
) -> Result<StepStats> {
    let model = ctx.model;
    let mut pass = Pass::new(model, ctx.reference, seqs, ctx.budget)?;
    pass.checkpointing = ctx.checkpointing;
    let updates = match objective {
        Objective::Nll => 1,
        Objective::Grpo { updates, .. } => updates.max(1),
    };
    let mut stats = StepStats::default();
    for update in 0..updates {
        let dropout = ctx.dropout.map(|d| Dropout {
            seed: d.seed ^ u64::from(update).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ..d
        });
        let (acc, mut s) = pass.gradients(objective, dropout)?;
        s.grad_norm = ctx.optimizer.step(model.vars(), &acc, ctx.lr)?;
        stats = s;
    }
    Ok(stats)
}

/// The gradients one update of `objective` on `seqs` applies, accumulated over micro-batches
/// of `budget` packed tokens, with or without activation checkpointing and LoRA dropout: what
/// [`train_step`] hands the optimizer.
///
/// # Errors
/// Tensor failures, a batch without loss tokens.
pub fn gradients(
    model: &Model,
    seqs: &[TrainSeq],
    objective: Objective,
    budget: usize,
    checkpointing: bool,
    dropout: Option<Dropout>,
) -> Result<Accumulator> {
    let mut pass = Pass::new(model, None, seqs, budget)?;
    pass.checkpointing = checkpointing;
    Ok(pass.gradients(objective, dropout)?.0)
}

/// The micro-batches of one step and what stays fixed across its updates: π_old and the
/// reference's log-probabilities, computed at the first update.
struct Pass<'a> {
    model: &'a Model,
    reference: Option<&'a Model>,
    seqs: &'a [TrainSeq],
    batches: Vec<std::ops::Range<usize>>,
    packed: Vec<Packed>,
    old: Vec<Option<Tensor>>,
    reference_logp: Vec<Option<Tensor>>,
    checkpointing: bool,
}

/// Sums over a pass's loss tokens.
#[derive(Default)]
struct Sums {
    loss: f64,
    kl: f64,
    clipped: usize,
    entropy: f64,
    importance: f64,
    tokens: usize,
}

impl<'a> Pass<'a> {
    fn new(
        model: &'a Model,
        reference: Option<&'a Model>,
        seqs: &'a [TrainSeq],
        budget: usize,
    ) -> Result<Self> {
        let batches = micro_batches(seqs, budget);
        let packed = batches
            .iter()
            .map(|r| pack(&seqs[r.clone()], model.device(), false))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            model,
            reference,
            seqs,
            old: vec![None; packed.len()],
            reference_logp: vec![None; packed.len()],
            batches,
            packed,
            checkpointing: false,
        })
    }

    /// One update's gradients and statistics (`grad_norm` left to the optimizer).
    fn gradients(
        &mut self,
        objective: Objective,
        dropout: Option<Dropout>,
    ) -> Result<(Accumulator, StepStats)> {
        let model = self.model;
        let mut acc = Accumulator::new(model.vars().len());
        let mut sums = Sums::default();
        for b in 0..self.packed.len() {
            if crate::process::terminating() {
                return Err(TrainError::Terminated);
            }
            let p = &self.packed[b];
            if p.index.is_empty() {
                continue;
            }
            let (rows, targets) = (p.rows.clone(), p.targets.clone());
            let tokens = p.index.len();
            let dropout = dropout.map(|d| Dropout {
                seed: d.seed ^ (b as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9),
                ..d
            });
            let sink = Sink::default();
            let hidden =
                model.hidden_for_training(&p.tokens, dropout, self.checkpointing, &sink)?;
            // The decoder keeps its graph up to the scored rows; the head runs outside it over
            // vocabulary chunks, and its backward seeds the decoder's ([`vocab`]).
            let scored = hidden.index_select(&rows, 0)?;
            let (h, head) = (scored.detach(), model.head()?.detach());
            let out = vocab::forward(&h, &head, &targets)?;
            let logp_var = Var::from_tensor(&out.logp)?;
            let logp = logp_var.as_tensor();
            let loss = self.loss(b, logp, objective, &mut sums)?;
            sums.loss += f64::from(loss.to_dtype(DType::F32)?.to_scalar::<f32>()?);
            sums.entropy += f64::from(
                out.entropy
                    .to_dtype(DType::F32)?
                    .sum_all()?
                    .to_scalar::<f32>()?,
            );
            sums.tokens += tokens;
            let dlogp = loss
                .backward()?
                .remove(logp)
                .ok_or_else(|| TrainError::Data("the loss does not depend on logp".into()))?;
            let head_var = model.head_var();
            let (dh, dhead) =
                vocab::backward(&h, &head, &targets, &out, &dlogp, head_var.is_some())?;
            acc.add(model.vars(), &(scored * dh)?.sum_all()?.backward()?)?;
            for (i, g) in sink.take() {
                acc.add_at(i, &g)?;
            }
            if let (Some(i), Some(dhead)) = (head_var, dhead) {
                acc.add_at(i, &dhead)?;
            }
        }
        if sums.tokens == 0 {
            return Err(TrainError::Data("the batch has no loss tokens".into()));
        }
        let n = sums.tokens as f64;
        let stats = StepStats {
            loss: sums.loss,
            kl: sums.kl / n,
            clip_fraction: sums.clipped as f64 / n,
            entropy: sums.entropy / n,
            grad_norm: 0.0,
            tokens: sums.tokens,
            importance_weight: if matches!(objective, Objective::Nll) {
                1.0
            } else {
                sums.importance / n
            },
        };
        Ok((acc, stats))
    }

    /// Micro-batch `b`'s loss on its log-probabilities `logp` (a leaf of their own graph).
    fn loss(
        &mut self,
        b: usize,
        logp: &Tensor,
        objective: Objective,
        sums: &mut Sums,
    ) -> Result<Tensor> {
        let p = &self.packed[b];
        let batch = &self.seqs[self.batches[b].clone()];
        let (device, dtype) = (logp.device(), logp.dtype());
        let pick = |f: &dyn Fn(&TrainSeq, usize) -> f32| -> Vec<f32> {
            p.index.iter().map(|&(i, j)| f(&batch[i], j)).collect()
        };
        let weights = f32s(pick(&|s, _| s.weight as f32), device, dtype)?;
        let Objective::Grpo {
            clip,
            kl_beta,
            importance_cap,
            ..
        } = objective
        else {
            return Ok((logp.neg()? * &weights)?.sum_all()?);
        };
        let old = self.old[b].get_or_insert_with(|| logp.detach()).clone();
        if kl_beta > 0.0 && self.reference_logp[b].is_none() {
            let r = self
                .reference
                .ok_or_else(|| TrainError::Data("kl_beta > 0 needs a reference model".into()))?;
            let h = r.hidden(&p.tokens, None)?;
            self.reference_logp[b] = Some(r.token_logprobs(&h, &p.rows, &p.targets)?.logp);
        }
        let advantages = f32s(pick(&|s, j| s.advantages[j]), device, dtype)?;
        let behaviour = pick(&|s, j| s.behaviour.as_ref().map_or(f32::NAN, |b| b[j]));
        let old_v = old.to_dtype(DType::F32)?.to_vec1::<f32>()?;
        let is_w: Vec<f32> = old_v
            .iter()
            .zip(&behaviour)
            .map(|(&o, &beh)| {
                if beh.is_nan() {
                    1.0
                } else {
                    (o - beh).exp().min(importance_cap as f32)
                }
            })
            .collect();
        sums.importance += is_w.iter().map(|&w| f64::from(w)).sum::<f64>();
        let is_weights = f32s(is_w, device, dtype)?;
        let new_v = logp.detach().to_dtype(DType::F32)?.to_vec1::<f32>()?;
        let adv_v = advantages.to_dtype(DType::F32)?.to_vec1::<f32>()?;
        for ((&n, &o), &a) in new_v.iter().zip(&old_v).zip(&adv_v) {
            let r = (n - o).exp();
            sums.clipped += usize::from(
                (a > 0.0 && r > 1.0 + clip.high as f32) || (a < 0.0 && r < 1.0 - clip.low as f32),
            );
        }
        let reference = self.reference_logp[b].as_ref();
        if let Some(r) = reference {
            let d = (r - logp.detach())?;
            let k3 = ((d.exp()? - &d)? - 1.0)?;
            sums.kl += f64::from(k3.to_dtype(DType::F32)?.sum_all()?.to_scalar::<f32>()?);
        }
        let inputs = TokenInputs {
            logp,
            old: &old,
            advantages: &advantages,
            weights: &weights,
            is_weights: &is_weights,
            reference: reference.map(|r| (r, kl_beta)),
        };
        Ok(grpo_loss(&inputs, clip)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(len: usize) -> TrainSeq {
        TrainSeq {
            ids: (0..len as u32).collect(),
            start: 1,
            mask: vec![true; len - 1],
            advantages: vec![1.0; len - 1],
            behaviour: None,
            rollout: 0,
            weight: 1.0,
        }
    }

    #[test]
    fn micro_batches_pack_whole_sequences_up_to_the_token_budget() {
        let seqs = [7, 5, 3, 9, 20, 2].map(seq);
        // 7 + 5, 3 + 9, the 20 alone (over budget), 2.
        assert_eq!(micro_batches(&seqs, 12), [0..2, 2..4, 4..5, 5..6]);
        let p = pack(&seqs[0..2], &Device::Cpu, false).unwrap();
        assert_eq!(p.tokens.ids.dims(), [12]);
        assert_eq!(&*p.tokens.lengths, [7, 5]);
        // The second sequence's first target (its token 1) is predicted from packed row 7.
        assert_eq!(p.index[6], (1, 0));
        assert_eq!(p.rows.to_vec1::<u32>().unwrap()[6], 7);
    }
}
