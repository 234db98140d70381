//! Online GRPO: groups sampled from the current policy, scored by a task, with DAPO's
//! dynamic sampling.

use std::time::Instant;

use super::{Ended, RolloutStats, Stream, Trainer, mean_std, rng};
use crate::advantage::{Rollout, StdScaling, advantages};
use crate::error::{Result, TrainError};
use crate::report::Progress;
use crate::rollout::{Episode, run_episodes};
use crate::step::TrainSeq;
use crate::task::Task;

impl Trainer {
    /// Online GRPO: `steps` optimizer steps of sampled groups scored by the task. Stops early
    /// once held-out success reaches `target` (when given).
    ///
    /// # Errors
    /// Tensor failures, I/O.
    pub fn grpo_online(
        &mut self,
        task: &dyn Task,
        steps: u64,
        target: Option<f64>,
    ) -> Result<Ended> {
        if task.train_len() == 0 {
            return Err(TrainError::Data("no training prompts".into()));
        }
        let g = self.config.grpo.clone();
        let sampling = self.sampling(task, false);
        let mut progress = Progress::start("grpo", steps);
        if self.state.grpo_step == 0 && self.config.eval_every > 0 {
            self.log_eval(task)?;
        }
        while self.state.grpo_step < steps {
            let at_start = self.state.clone();
            let step = self.state.grpo_step;
            let t0 = Instant::now();
            let mut sample_rng = rng(self.config.seed, Stream::Sample, step);
            let (mut kept, mut all): (Vec<Vec<Episode>>, Vec<Episode>) = (Vec::new(), Vec::new());
            let (mut drawn, mut zero) = (0usize, 0usize);
            let mut sampling_s = 0.0;
            while kept.len() < g.batch_prompts && drawn < g.max_draws * g.batch_prompts {
                let want = g.batch_prompts - kept.len();
                let prompts: Vec<usize> = (0..want)
                    .map(|_| self.next_prompt(task.train_len()))
                    .collect();
                drawn += want;
                let envs = prompts
                    .iter()
                    .flat_map(|&p| (0..g.group_size).map(move |_| p))
                    .map(|p| task.train_env(p))
                    .collect();
                let started = Instant::now();
                let sampled =
                    run_episodes(&self.model, &self.tok, envs, &sampling, &mut sample_rng);
                sampling_s += started.elapsed().as_secs_f64();
                let episodes = self.or_stop(&at_start, sampled)?;
                for group in episodes.chunks(g.group_size) {
                    all.extend(group.iter().cloned());
                    // Signal under the configured credit: with `turn`, a group whose episodes
                    // all fail can still differ in the turns they got right.
                    let differ =
                        advantages(&rollouts(&[group]), g.credit, StdScaling::None, g.gamma)
                            .zero_variance_groups
                            == 0;
                    if differ || !g.dynamic_sampling {
                        kept.push(group.to_vec());
                    } else {
                        zero += 1;
                    }
                }
                if !g.dynamic_sampling {
                    break;
                }
            }
            let rewards: Vec<f64> = all.iter().map(|e| e.reward).collect();
            let (reward_mean, reward_std) = mean_std(&rewards);
            let success = all.iter().filter(|e| e.success).count() as f64 / all.len().max(1) as f64;
            let adv = advantages(&rollouts(&kept), g.credit, g.std_scaling, g.gamma);
            let episodes: Vec<&Episode> = kept.iter().flatten().collect();
            let mut seqs: Vec<TrainSeq> = Vec::new();
            for (i, e) in episodes.iter().enumerate() {
                if !adv.informative[i] {
                    continue;
                }
                seqs.push(TrainSeq {
                    ids: [e.prompt.as_slice(), &e.response].concat(),
                    start: e.prompt.len(),
                    mask: e.mask.clone(),
                    advantages: e
                        .turn
                        .iter()
                        .map(|&t| adv.per_turn[i].get(t).copied().unwrap_or(0.0) as f32)
                        .collect(),
                    behaviour: None,
                    rollout: i,
                    weight: 0.0,
                });
            }
            let updated = self.grpo_update(&mut seqs, steps);
            let (stats, lr) = self.or_stop(&at_start, updated)?;
            let r = RolloutStats {
                reward_mean,
                reward_std,
                success: Some(success),
                rollouts: Some(all.len()),
                informative_fraction: Some(
                    kept.len().saturating_sub(adv.zero_variance_groups) as f64
                        / drawn.max(1) as f64,
                ),
                zero_variance_groups: Some(zero + adv.zero_variance_groups),
                sample_tokens_per_s: Some(
                    all.iter()
                        .map(|e| e.mask.iter().filter(|&&m| m).count())
                        .sum::<usize>() as f64
                        / sampling_s.max(1e-9),
                ),
            };
            self.log(self.state.grpo_step, "grpo", &stats, lr, t0, Some(r))?;
            progress.update(
                self.state.grpo_step,
                &format!("reward {reward_mean:.3} success {success:.2}"),
            );
            let mut reached = false;
            if self.config.eval_every > 0
                && self.state.grpo_step.is_multiple_of(self.config.eval_every)
            {
                reached = target.is_some_and(|t| self.log_eval(task).is_ok_and(|s| s >= t));
            }
            self.checkpoint_if_due(self.state.grpo_step)?;
            if reached || self.deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            if let Some(ended) = self.interruption()? {
                return Ok(ended);
            }
        }
        progress.finish();
        Ok(Ended::Complete)
    }
}

/// Sampled groups as rollouts, group `i` of `groups` numbered `i`.
fn rollouts<G: AsRef<[Episode]>>(groups: &[G]) -> Vec<Rollout> {
    groups
        .iter()
        .enumerate()
        .flat_map(|(gi, group)| {
            group.as_ref().iter().map(move |e| Rollout {
                group: gi,
                reward: e.reward,
                turn_rewards: e.turn_rewards.clone(),
                precomputed: None,
            })
        })
        .collect()
}
