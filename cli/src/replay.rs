//! `agentrl budget replay`: token waste of static vs adaptive allocation on a synthetic workload.

use agentrl_core::budget::{BudgetConfig, replay_synthetic_workload};
use clap::Args;

/// Arguments of `budget replay`.
#[derive(Args)]
pub struct ReplayArgs {
    /// Tasks to replay.
    #[arg(long, default_value_t = 3_000)]
    tasks: usize,
    /// Median true need of a task, as a fraction of its tier's base allocation.
    #[arg(long, default_value_t = 0.35)]
    median_fraction: f64,
    /// Log-normal spread of the true need.
    #[arg(long, default_value_t = 0.45)]
    sigma: f64,
    /// Seed of the workload.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

/// Prints the replay's figures as JSON.
pub fn run(a: &ReplayArgs) -> anyhow::Result<()> {
    anyhow::ensure!(a.tasks > 0, "--tasks must be positive");
    anyhow::ensure!(
        a.median_fraction > 0.0 && a.median_fraction.is_finite(),
        "--median-fraction must be positive"
    );
    anyhow::ensure!(
        a.sigma >= 0.0 && a.sigma.is_finite(),
        "--sigma must be non-negative"
    );
    let r = replay_synthetic_workload(
        &BudgetConfig::default(),
        a.tasks,
        a.median_fraction,
        a.sigma,
        a.seed,
    );
    let out = serde_json::json!({
        "tasks": r.tasks,
        "static_waste_tokens": r.static_waste,
        "adaptive_waste_tokens": r.adaptive_waste,
        "waste_change": r.waste_change(),
        "static_solved": r.static_solved,
        "adaptive_solved": r.adaptive_solved,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
