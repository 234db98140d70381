//! One optimizer step over a batch of sequences: micro-batches bounded by a token budget,
//! gradients accumulated, clipped, then AdamW. The objective is the SFT negative
//! log-likelihood or the GRPO loss of [`crate::loss`].

use candle_core::{DType, Device, Tensor};
use rand_chacha::ChaCha8Rng;

use crate::error::{Result, TrainError};
use crate::loss::{Clip, TokenInputs, grpo_loss};
use crate::model::{Dropout, Model};
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

/// Sequences split into micro-batches of at most `budget` padded tokens (one sequence longer
/// than the budget goes alone).
#[must_use]
pub fn micro_batches(seqs: &[TrainSeq], budget: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut width = 0;
    for (i, s) in seqs.iter().enumerate() {
        let w = width.max(s.ids.len());
        if i > start && w * (i - start + 1) > budget {
            out.push(start..i);
            start = i;
            width = s.ids.len();
        } else {
            width = w;
        }
    }
    if start < seqs.len() {
        out.push(start..seqs.len());
    }
    out
}

/// Tensors of one micro-batch: padded ids, and for every loss token its hidden row and target.
pub(crate) struct Packed {
    pub ids: Tensor,
    pub rows: Tensor,
    pub targets: Tensor,
    /// (sequence, response index) of each loss token.
    pub index: Vec<(usize, usize)>,
}

pub(crate) fn pack(seqs: &[TrainSeq], device: &Device, every_token: bool) -> Result<Packed> {
    let width = seqs.iter().map(|s| s.ids.len()).max().unwrap_or(1);
    let mut flat = Vec::with_capacity(seqs.len() * width);
    let (mut rows, mut targets, mut index) = (Vec::new(), Vec::new(), Vec::new());
    for (i, s) in seqs.iter().enumerate() {
        if s.start == 0 {
            return Err(TrainError::Data(
                "a sequence has an empty prompt: nothing predicts its first token".into(),
            ));
        }
        flat.extend_from_slice(&s.ids);
        flat.extend(std::iter::repeat_n(0, width - s.ids.len()));
        for j in 0..s.ids.len() - s.start {
            if every_token || s.mask[j] {
                rows.push((i * width + s.start + j - 1) as u32);
                targets.push(s.ids[s.start + j]);
                index.push((i, j));
            }
        }
    }
    let n = rows.len();
    Ok(Packed {
        ids: Tensor::from_vec(flat, (seqs.len(), width), device)?,
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
        let hidden = frozen.hidden(&p.ids, &mut None)?;
        let (logp, _) = frozen.token_logprobs(&hidden, &p.rows, &p.targets)?;
        let logp = logp.to_dtype(DType::F32)?.to_vec1::<f32>()?;
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
    /// Micro-batch budget in padded tokens.
    pub budget: usize,
    /// LoRA dropout probability and its generator.
    pub dropout: Option<(f64, &'a mut ChaCha8Rng)>,
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
    let device = model.device().clone();
    let batches = micro_batches(seqs, ctx.budget);
    let packed: Vec<Packed> = batches
        .iter()
        .map(|r| pack(&seqs[r.clone()], &device, false))
        .collect::<Result<_>>()?;
    let updates = match objective {
        Objective::Nll => 1,
        Objective::Grpo { updates, .. } => updates.max(1),
    };
    let mut old: Vec<Option<Tensor>> = vec![None; packed.len()];
    let mut reference: Vec<Option<Tensor>> = vec![None; packed.len()];
    let mut stats = StepStats::default();
    for _ in 0..updates {
        let mut acc = Accumulator::new(model.vars().len());
        let (mut loss_sum, mut kl_sum, mut clipped, mut entropy_sum, mut is_sum, mut tokens) =
            (0.0, 0.0, 0usize, 0.0, 0.0, 0usize);
        for (b, (range, p)) in batches.iter().zip(&packed).enumerate() {
            if p.index.is_empty() {
                continue;
            }
            let batch = &seqs[range.clone()];
            let mut dropout = ctx.dropout.as_mut().map(|(p, rng)| Dropout { p: *p, rng });
            let hidden = model.hidden(&p.ids, &mut dropout)?;
            let (logp, entropy) = model.token_logprobs(&hidden, &p.rows, &p.targets)?;
            let dtype = logp.dtype();
            let pick = |f: &dyn Fn(&TrainSeq, usize) -> f32| -> Vec<f32> {
                p.index.iter().map(|&(i, j)| f(&batch[i], j)).collect()
            };
            let weights = f32s(pick(&|s, _| s.weight as f32), &device, dtype)?;
            let loss = match objective {
                Objective::Nll => (logp.neg()? * &weights)?.sum_all()?,
                Objective::Grpo {
                    clip,
                    kl_beta,
                    importance_cap,
                    ..
                } => {
                    let old_b = old[b].get_or_insert_with(|| logp.detach()).clone();
                    if kl_beta > 0.0 && reference[b].is_none() {
                        let r = ctx.reference.ok_or_else(|| {
                            TrainError::Data("kl_beta > 0 needs a reference model".into())
                        })?;
                        let h = r.hidden(&p.ids, &mut None)?;
                        reference[b] = Some(r.token_logprobs(&h, &p.rows, &p.targets)?.0.detach());
                    }
                    let advantages = f32s(pick(&|s, j| s.advantages[j]), &device, dtype)?;
                    let behaviour = pick(&|s, j| s.behaviour.as_ref().map_or(f32::NAN, |b| b[j]));
                    let old_v = old_b.to_dtype(DType::F32)?.to_vec1::<f32>()?;
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
                    is_sum += is_w.iter().map(|&w| f64::from(w)).sum::<f64>();
                    let is_weights = f32s(is_w, &device, dtype)?;
                    let inputs = TokenInputs {
                        logp: &logp,
                        old: &old_b,
                        advantages: &advantages,
                        weights: &weights,
                        is_weights: &is_weights,
                        reference: reference[b].as_ref().map(|r| (r, kl_beta)),
                    };
                    let new_v = logp.detach().to_dtype(DType::F32)?.to_vec1::<f32>()?;
                    let adv_v = advantages.to_dtype(DType::F32)?.to_vec1::<f32>()?;
                    for ((&n, &o), &a) in new_v.iter().zip(&old_v).zip(&adv_v) {
                        let r = (n - o).exp();
                        clipped += usize::from(
                            (a > 0.0 && r > 1.0 + clip.high as f32)
                                || (a < 0.0 && r < 1.0 - clip.low as f32),
                        );
                    }
                    if let Some(r) = &reference[b] {
                        let d = (r - logp.detach())?;
                        let k3 = ((d.exp()? - &d)? - 1.0)?;
                        kl_sum +=
                            f64::from(k3.to_dtype(DType::F32)?.sum_all()?.to_scalar::<f32>()?);
                    }
                    grpo_loss(&inputs, clip)?
                }
            };
            loss_sum += f64::from(loss.to_dtype(DType::F32)?.to_scalar::<f32>()?);
            entropy_sum += f64::from(
                entropy
                    .to_dtype(DType::F32)?
                    .sum_all()?
                    .to_scalar::<f32>()?,
            );
            tokens += p.index.len();
            let grads = loss.backward()?;
            acc.add(model.vars(), &grads)?;
        }
        if tokens == 0 {
            return Err(TrainError::Data("the batch has no loss tokens".into()));
        }
        let n = tokens as f64;
        stats = StepStats {
            loss: loss_sum,
            kl: kl_sum / n,
            clip_fraction: clipped as f64 / n,
            entropy: entropy_sum / n,
            grad_norm: 0.0,
            tokens,
            importance_weight: if matches!(objective, Objective::Nll) {
                1.0
            } else {
                is_sum / n
            },
        };
        stats.grad_norm = ctx.optimizer.step(model.vars(), &acc, ctx.lr)?;
    }
    Ok(stats)
}
