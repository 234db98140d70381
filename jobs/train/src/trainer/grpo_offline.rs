//! Offline GRPO on a dataset's rollouts, grouped by `group_id`.

use std::collections::BTreeMap;
use std::time::Instant;

use super::{Ended, RolloutStats, Trainer, mean_std};
use crate::advantage::{Rollout, advantages};
use crate::data::{DataRollout, Rollouts};
use crate::error::{Result, TrainError};
use crate::report::Progress;
use crate::step::TrainSeq;

impl Trainer {
    /// Offline GRPO on a dataset's rollouts: `batch_prompts` groups per step.
    ///
    /// # Errors
    /// Nothing with signal to train on, tensor failures, I/O.
    pub fn grpo_offline(&mut self, rollouts: &Rollouts, steps: u64) -> Result<Ended> {
        let g = self.config.grpo.clone();
        let data = &rollouts.items;
        let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, r) in data.iter().enumerate() {
            by_name.entry(r.group.as_str()).or_default().push(i);
        }
        let groups: Vec<Vec<usize>> = by_name.into_values().collect();
        let probe: Vec<Rollout> = groups
            .iter()
            .enumerate()
            .flat_map(|(gi, m)| m.iter().map(move |&i| rollout_of(&data[i], gi)))
            .collect();
        if advantages(&probe, g.credit, g.std_scaling, g.gamma).zero_variance_groups == groups.len()
        {
            return Err(TrainError::Data(format!(
                "every one of the {} groups has zero reward variance: GRPO has no signal (credit = {:?})",
                groups.len(),
                g.credit
            )));
        }
        let mut progress = Progress::start("grpo", steps);
        while self.state.grpo_step < steps {
            let at_start = self.state.clone();
            let t0 = Instant::now();
            let picked: Vec<usize> = (0..g.batch_prompts.min(groups.len()))
                .map(|_| self.next_prompt(groups.len()))
                .collect();
            let members: Vec<usize> = picked
                .iter()
                .flat_map(|&gi| groups[gi].iter().copied())
                .collect();
            let picked_rollouts: Vec<Rollout> = picked
                .iter()
                .enumerate()
                .flat_map(|(k, &gi)| groups[gi].iter().map(move |&i| (k, i)))
                .map(|(k, i)| rollout_of(&data[i], k))
                .collect();
            let adv = advantages(&picked_rollouts, g.credit, g.std_scaling, g.gamma);
            let mut seqs = Vec::new();
            for (r, &i) in members.iter().enumerate() {
                if !adv.informative[r] {
                    continue;
                }
                for (t, turn) in rollouts.turns(i)?.into_iter().enumerate() {
                    let a = adv.per_turn[r].get(t).copied().unwrap_or(0.0) as f32;
                    seqs.push(TrainSeq {
                        advantages: vec![a; turn.mask.len()],
                        ids: turn.ids,
                        start: turn.start,
                        mask: turn.mask,
                        behaviour: turn.behaviour,
                        rollout: r,
                        weight: 0.0,
                    });
                }
            }
            let rewards: Vec<f64> = picked_rollouts.iter().map(|r| r.reward).collect();
            let (reward_mean, reward_std) = mean_std(&rewards);
            let updated = self.grpo_update(&mut seqs, steps);
            let (stats, lr) = self.or_stop(&at_start, updated)?;
            let r = RolloutStats {
                reward_mean,
                reward_std,
                success: None,
                rollouts: None,
                informative_fraction: Some(
                    (adv.groups - adv.zero_variance_groups) as f64 / adv.groups.max(1) as f64,
                ),
                zero_variance_groups: Some(adv.zero_variance_groups),
                sample_tokens_per_s: None,
            };
            self.log(self.state.grpo_step, "grpo", &stats, lr, t0, Some(r))?;
            progress.update(self.state.grpo_step, &format!("loss {:.4}", stats.loss));
            self.checkpoint_if_due(self.state.grpo_step)?;
            if let Some(ended) = self.interruption()? {
                return Ok(ended);
            }
        }
        progress.finish();
        Ok(Ended::Complete)
    }
}

fn rollout_of(r: &DataRollout, group: usize) -> Rollout {
    Rollout {
        group,
        reward: r.reward,
        turn_rewards: r.turn_rewards.clone(),
        precomputed: Some(r.turn_rewards.clone()),
    }
}
