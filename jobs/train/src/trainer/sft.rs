//! The SFT phase: supervised warm-up on demonstrations before GRPO.

use std::time::Instant;

use rand::seq::SliceRandom;

use super::{Ended, Stream, Trainer, rng};
use crate::data::SftExample;
use crate::error::Result;
use crate::optim::AdamW;
use crate::report::Progress;
use crate::step::{Objective, TrainSeq};

impl Trainer {
    /// The SFT phase: `sft.epochs` passes, `sft.batch_size` examples per step, NLL on the
    /// completion tokens (mask 1) only.
    ///
    /// # Errors
    /// Tensor failures, I/O.
    pub fn sft(&mut self, examples: &[SftExample]) -> Result<Ended> {
        if self.state.sft_done || examples.is_empty() || self.config.sft.epochs == 0 {
            self.finish_sft()?;
            return Ok(Ended::Complete);
        }
        let per_epoch = examples.len().div_ceil(self.config.sft.batch_size) as u64;
        let total = per_epoch * u64::from(self.config.sft.epochs);
        let mut progress = Progress::start("sft", total);
        while self.state.sft_step < total {
            let at_start = self.state.clone();
            let step = self.state.sft_step;
            let epoch = step / per_epoch;
            let mut order: Vec<usize> = (0..examples.len()).collect();
            order.shuffle(&mut rng(self.config.seed, Stream::SftOrder, epoch));
            let b = self.config.sft.batch_size;
            let k = (step % per_epoch) as usize;
            let picked = &order[k * b..((k + 1) * b).min(order.len())];
            let mut seqs: Vec<TrainSeq> = picked
                .iter()
                .enumerate()
                .map(|(r, &i)| {
                    let e = &examples[i];
                    TrainSeq {
                        ids: [e.prompt.as_slice(), &e.completion].concat(),
                        start: e.prompt.len(),
                        mask: e.mask.clone(),
                        advantages: vec![1.0; e.completion.len()],
                        behaviour: None,
                        rollout: r,
                        weight: 0.0,
                    }
                })
                .collect();
            let total_tokens: usize = seqs.iter().map(TrainSeq::loss_tokens).sum();
            seqs.iter_mut()
                .for_each(|s| s.weight = 1.0 / total_tokens.max(1) as f64);
            let lr = self.lr_at(self.config.sft.learning_rate, step, total);
            let t0 = Instant::now();
            let updated = self.update(
                &seqs,
                Objective::Nll,
                lr,
                rng(self.config.seed, Stream::Dropout, step),
            );
            let stats = self.or_stop(&at_start, updated)?;
            self.state.sft_step += 1;
            self.log(self.state.sft_step, "sft", &stats, lr, t0, None)?;
            progress.update(self.state.sft_step, &format!("loss {:.3}", stats.loss));
            self.checkpoint_if_due(self.state.sft_step)?;
            if let Some(ended) = self.interruption()? {
                return Ok(ended);
            }
        }
        progress.finish();
        self.finish_sft()?;
        Ok(Ended::Complete)
    }

    fn finish_sft(&mut self) -> Result<()> {
        if !self.state.sft_done {
            self.state.sft_done = true;
            // GRPO starts with fresh moments: SFT's gradients say nothing about its scale.
            self.optimizer = AdamW::new(self.model.vars(), &self.config.optimizer)?;
        }
        Ok(())
    }
}
