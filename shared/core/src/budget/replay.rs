//! Replays a synthetic workload through the ledger to measure token waste, static vs adaptive.
//!
//! Waste is what a budget held back but the task never used: `allocated − consumed`
//! at the end of each task. The workload is seeded and documented (docs/budgets.md),
//! so the figure is reproducible and anyone can rerun it with their own parameters.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{
    Action, Budget, BudgetConfig, Complexity, Outcome, Report, TaskDescription, UsageHistory,
    assess,
};

/// The result of [`replay_synthetic_workload`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    /// Tasks replayed.
    pub tasks: usize,
    /// Total waste with static allocation.
    pub static_waste: u64,
    /// Total waste with adaptive allocation.
    pub adaptive_waste: u64,
    /// Tasks that got the tokens they needed, static.
    pub static_solved: usize,
    /// Tasks that got the tokens they needed, adaptive.
    pub adaptive_solved: usize,
}

impl ReplayReport {
    /// Relative change of waste, adaptive vs static (−0.4 means 40% less waste).
    pub fn waste_change(&self) -> f64 {
        if self.static_waste == 0 {
            return 0.0;
        }
        self.adaptive_waste as f64 / self.static_waste as f64 - 1.0
    }
}

/// Replays `tasks` tasks whose true need is log-normal around `median_fraction` of their
/// tier's base (spread `sigma`), once with static and once with adaptive allocation.
pub fn replay_synthetic_workload(
    config: &BudgetConfig,
    tasks: usize,
    median_fraction: f64,
    sigma: f64,
    seed: u64,
) -> ReplayReport {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let workload: Vec<(Complexity, u64)> = (0..tasks)
        .map(|_| {
            let tier = Complexity::ALL[rng.random_range(0..3)];
            let base = config.tier(tier).base_tokens as f64;
            let z = standard_normal(&mut rng);
            let need = (base * median_fraction * (sigma * z).exp())
                .round()
                .max(1.0);
            (tier, need as u64)
        })
        .collect();

    let mut static_cfg = config.clone();
    static_cfg.adaptive.enabled = false;
    let mut adaptive_cfg = config.clone();
    adaptive_cfg.adaptive.enabled = true;
    let (static_waste, static_solved) = run(&static_cfg, &workload);
    let (adaptive_waste, adaptive_solved) = run(&adaptive_cfg, &workload);
    ReplayReport {
        tasks,
        static_waste,
        adaptive_waste,
        static_solved,
        adaptive_solved,
    }
}

fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    // Box–Muller; u1 is kept away from 0 so ln stays finite.
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Simulates an agent that spends what it needs, escalating when the allocation runs out.
fn run(config: &BudgetConfig, workload: &[(Complexity, u64)]) -> (u64, usize) {
    let mut history = [
        UsageHistory::default(),
        UsageHistory::default(),
        UsageHistory::default(),
    ];
    let (mut waste, mut solved) = (0, 0);
    for (i, &(tier, need)) in workload.iter().enumerate() {
        let slot = tier as usize;
        let base = history[slot].allocation(
            config.tier(tier).base_tokens,
            config.ceiling(tier),
            &config.adaptive,
        );
        let assessment = assess(&TaskDescription::default(), Some(tier));
        let mut budget = Budget::open(i.to_string(), i.to_string(), assessment, base, config, 0);
        let mut now_ms = 0;
        loop {
            let room = budget.allocated_tokens - budget.consumed_tokens;
            let remaining = need - budget.consumed_tokens;
            let spend = remaining.min(room);
            let trigger = (spend < remaining)
                .then(|| config.tier(tier).allowed_triggers.first().copied())
                .flatten();
            let report = Report {
                tokens: spend,
                confidence: None,
                trigger,
                loop_completed: false,
            };
            let Ok(decision) = budget.apply(report, config, now_ms) else {
                break;
            };
            now_ms += 3_600_000;
            if budget.consumed_tokens >= need || decision.action != Action::Escalated {
                break;
            }
        }
        let done = budget.consumed_tokens >= need;
        let outcome = if done {
            Outcome::Success
        } else {
            Outcome::Failure
        };
        // A budget opened above and completed once: never a conflict.
        budget.complete(outcome, now_ms).ok();
        if done {
            solved += 1;
            history[slot].record(budget.consumed_tokens, config.adaptive.window);
        }
        waste += budget.allocated_tokens - budget.consumed_tokens;
    }
    (waste, solved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_allocation_removes_at_least_forty_percent_of_the_waste() {
        let report = replay_synthetic_workload(&BudgetConfig::default(), 3_000, 0.35, 0.45, 7);
        assert!(
            report.waste_change() <= -0.40,
            "waste change {:.3} ({report:?})",
            report.waste_change()
        );
        // Less waste must not come from starving tasks.
        assert!(
            report.adaptive_solved as f64 >= 0.99 * report.static_solved as f64,
            "{report:?}"
        );
    }

    #[test]
    fn the_replay_is_deterministic_for_a_seed() {
        let cfg = BudgetConfig::default();
        assert_eq!(
            replay_synthetic_workload(&cfg, 300, 0.35, 0.45, 1),
            replay_synthetic_workload(&cfg, 300, 0.35, 0.45, 1)
        );
    }
}
