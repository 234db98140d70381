//! `agentrl dataset build`: the dataset job on the embedded store `agentrl serve` uses.

use std::path::PathBuf;

use agentrl_core::dataset::Rules;
use agentrl_store::{Stores, clock::now_ms_i64};
use anyhow::Context;

/// Arguments of `agentrl dataset build`.
#[derive(clap::Args)]
pub struct BuildArgs {
    /// The data directory of `agentrl serve --data-dir`.
    #[arg(long, default_value = "./agentrl-data")]
    data_dir: PathBuf,
    /// A JSON file overriding the default rules, e.g.
    /// {"min_positive_feedback": 0, "min_high_quality_interactions": 0}.
    #[arg(long)]
    rules: Option<PathBuf>,
}

/// Builds the datasets and prints their manifests as JSON.
///
/// # Errors
/// A data directory without a store, unreadable or invalid rules, a failing store.
pub async fn run(args: &BuildArgs) -> anyhow::Result<()> {
    agentrl_http::telemetry::init();
    let rules: Rules = match &args.rules {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid rules", path.display()))?
        }
        None => Rules::default(),
    };
    // Opening would create an empty store: a mistyped directory must not look like "no data".
    let db = args.data_dir.join("agentrl.db");
    anyhow::ensure!(
        db.is_file(),
        "{} is not an agentrl data directory (no agentrl.db): pass the --data-dir of \
         `agentrl serve`",
        args.data_dir.display()
    );
    let stores = Stores::embedded(&args.data_dir)?;
    let now = now_ms_i64();
    let manifests = agentrl_dataset::build(
        stores.objects.as_ref(),
        stores.events.as_ref(),
        stores.training.as_ref(),
        &rules,
        now,
    )
    .await?;
    if manifests.is_empty() {
        eprintln!("no tenant has agents that meet the rules: no dataset written");
    }
    println!("{}", serde_json::to_string_pretty(&manifests)?);
    Ok(())
}
