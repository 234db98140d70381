//! Greedy evaluation on a task's held-out prompts, logged as metrics lines.

use super::{Stream, Trainer, rng};
use crate::error::Result;
use crate::report::Metrics;
use crate::rollout::run_episodes;
use crate::task::Task;

impl Trainer {
    /// Greedy success rate and mean reward on the task's held-out prompts.
    ///
    /// # Errors
    /// Tensor failures.
    pub fn evaluate(&self, task: &dyn Task) -> Result<(f64, f64)> {
        let n = task.eval_len();
        if n == 0 {
            return Ok((0.0, 0.0));
        }
        let sampling = self.sampling(task, true);
        let (mut successes, mut reward) = (0usize, 0.0);
        let chunk = (self.budget / 64).clamp(8, 256);
        for start in (0..n).step_by(chunk) {
            let envs = (start..(start + chunk).min(n))
                .map(|i| task.eval_env(i))
                .collect();
            for e in run_episodes(
                &self.model,
                &self.tok,
                envs,
                &sampling,
                &mut rng(0, Stream::Sample, 0),
            )? {
                successes += usize::from(e.success);
                reward += e.reward;
            }
        }
        Ok((successes as f64 / n as f64, reward / n as f64))
    }

    pub(super) fn log_eval(&mut self, task: &dyn Task) -> Result<f64> {
        let (success, reward) = self.evaluate(task)?;
        self.push_metrics(Metrics {
            step: self.state.grpo_step,
            phase: "grpo".into(),
            elapsed_s: self.elapsed(),
            eval_success: Some(success),
            eval_reward: Some(reward),
            ..Metrics::default()
        })?;
        tracing::info!(
            step = self.state.grpo_step,
            eval_success = success,
            eval_reward = reward,
            "evaluation"
        );
        Ok(success)
    }
}
