//! `agentrl federation create | round | show`: the operator's side of federated learning
//! (`docs/federated.md`). A federation is an operator resource with no HTTP route; a round
//! trains each member locally (a child process per member, on its own dataset, from the
//! round's global adapter), aggregates the clipped updates with noise into the next global
//! adapter, and does the bookkeeping. Members' adapters live only in the round's temporary
//! directory, which is deleted when the round ends.

use std::path::{Path, PathBuf};

use agentrl_core::training::config::TrainConfig;
use agentrl_store::ports::Objects;
use agentrl_store::{Stores, clock::now_ms};
use agentrl_training::federation::{DEFAULT_MIN_PARTICIPANTS, Federation, Plan, Rounds, Weighting};
use anyhow::Context;
use bytes::Bytes;
use clap::{Args, Subcommand, ValueEnum};
use rand::RngCore;

use crate::store_args::StoreArgs;

/// `agentrl federation …`.
#[derive(Subcommand)]
pub enum FederationCommand {
    /// Create a federation and write its first global adapter (A drawn from the config's
    /// seed and frozen, B zero).
    Create(CreateArgs),
    /// Run the next round: members train locally, the clipped updates are averaged with
    /// noise into the next global adapter, and each participant's privacy is charged.
    Round(RoundArgs),
    /// Print a federation and its rounds as JSON.
    Show(ShowArgs),
}

/// `--weighting`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum WeightingArg {
    /// Every participant the same.
    Uniform,
    /// By training examples, capped at `--cap`.
    Examples,
}

/// `agentrl federation create`.
#[derive(Args)]
pub struct CreateArgs {
    /// The federation's id (letters, digits, `._-`).
    #[arg(long)]
    id: String,
    /// The shared base model (under `models/`) every participant trains on.
    #[arg(long)]
    base_model: String,
    /// The agents' task type (`type`).
    #[arg(long)]
    task_type: String,
    /// The local runs' training config (JSON), with `lora.freeze_a: true`.
    #[arg(long)]
    config: PathBuf,
    /// C: the L2 norm each update is clipped to.
    #[arg(long)]
    clip: f64,
    /// z: the noise multiplier (the noise's σ is z·C·max w / Σ w).
    #[arg(long)]
    noise_multiplier: f64,
    /// Fewest participants a round runs with.
    #[arg(long, default_value_t = DEFAULT_MIN_PARTICIPANTS)]
    min_participants: usize,
    /// How updates are weighted.
    #[arg(long, value_enum, default_value = "uniform")]
    weighting: WeightingArg,
    /// With `--weighting examples`: the most examples one participant counts for.
    #[arg(long, required_if_eq("weighting", "examples"))]
    cap: Option<u64>,
    #[command(flatten)]
    stores: StoreArgs,
}

/// `agentrl federation round`.
#[derive(Args)]
pub struct RoundArgs {
    /// The federation.
    #[arg(long)]
    id: String,
    #[command(flatten)]
    stores: StoreArgs,
}

/// `agentrl federation show`.
#[derive(Args)]
pub struct ShowArgs {
    /// The federation.
    #[arg(long)]
    id: String,
    #[command(flatten)]
    stores: StoreArgs,
}

/// Runs a federation command.
///
/// # Errors
/// Bad settings (naming the field), a missing federation, too few participants, a failing
/// store or trainer.
pub async fn run(command: FederationCommand) -> anyhow::Result<()> {
    agentrl_http::telemetry::init();
    match command {
        FederationCommand::Create(a) => create(a).await,
        FederationCommand::Round(a) => {
            let stores = a.stores.open()?;
            let rounds = Rounds::new(
                stores.table.clone(),
                stores.objects.clone(),
                a.stores.pseudonyms()?,
            );
            let record = round(&stores, &rounds, &a.id, &std::env::current_exe()?).await?;
            println!("{}", serde_json::to_string_pretty(&record)?);
            Ok(())
        }
        FederationCommand::Show(a) => {
            let stores = a.stores.open()?;
            let repo = agentrl_training::federation::FederationRepo::new(stores.table.clone());
            let (f, _) = repo
                .federation(&a.id)
                .await?
                .with_context(|| format!("no federation {}", a.id))?;
            let rounds = repo.rounds(&a.id).await?;
            let shown = serde_json::json!({ "federation": f, "rounds": rounds });
            println!("{}", serde_json::to_string_pretty(&shown)?);
            Ok(())
        }
    }
}

async fn create(a: CreateArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&a.config)
        .with_context(|| format!("reading {}", a.config.display()))?;
    let config = TrainConfig::parse(&text).map_err(|e| anyhow::anyhow!("--config: {e}"))?;
    let weighting = match (a.weighting, a.cap) {
        (WeightingArg::Examples, Some(cap)) => Weighting::Examples { cap },
        (WeightingArg::Examples, None) => anyhow::bail!("--weighting examples needs --cap"),
        (WeightingArg::Uniform, _) => Weighting::Uniform,
    };
    let f = Federation {
        federation_id: a.id,
        base_model: a.base_model,
        task_type: a.task_type,
        config,
        clip: a.clip,
        noise_multiplier: a.noise_multiplier,
        min_participants: a.min_participants,
        weighting,
        rounds_done: 0,
        created_ms: now_ms(),
    };
    f.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    let stores = a.stores.open()?;
    let repo = agentrl_training::federation::FederationRepo::new(stores.table.clone());
    anyhow::ensure!(
        repo.federation(&f.federation_id).await?.is_none(),
        "a federation {} exists",
        f.federation_id
    );
    let work = tempfile::tempdir()?;
    let model = work.path().join("model");
    download(
        stores.objects.as_ref(),
        &format!("models/{}/", f.base_model),
        &model,
    )
    .await?;
    let global = work.path().join("global");
    let (config, out, base) = (f.config.clone(), global.clone(), f.base_model.clone());
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let mut m = agentrl_train::run::load_weights(&model, &config)?;
        m.make_trainable(config.lora.as_ref(), config.seed)?;
        m.save_adapter(&out, &base)?;
        Ok(())
    })
    .await??;
    upload(stores.objects.as_ref(), &global, &f.global_prefix(0)).await?;
    anyhow::ensure!(
        repo.create(&f).await?,
        "a federation {} was created meanwhile",
        f.federation_id
    );
    println!("{}", serde_json::to_string_pretty(&f)?);
    Ok(())
}

/// Runs the next round of federation `id`, training members with `agentrl` (the binary).
async fn round(
    stores: &Stores,
    rounds: &Rounds,
    id: &str,
    agentrl: &Path,
) -> anyhow::Result<agentrl_training::federation::RoundRecord> {
    let started_ms = now_ms();
    let (f, at) = rounds
        .repo()
        .federation(id)
        .await?
        .with_context(|| format!("no federation {id}"))?;
    let mut plan = rounds.plan(&f).await?;
    ensure_enough(&f, &plan)?;
    let objects = stores.objects.as_ref();
    let work = tempfile::tempdir()?;
    let model = work.path().join("model");
    download(objects, &format!("models/{}/", f.base_model), &model).await?;
    let global = work.path().join("global");
    download(objects, &f.global_prefix(f.rounds_done), &global).await?;
    let config = serde_json::to_string(&f.config)?;
    let mut locals = Vec::new();
    let mut trained = Vec::new();
    for (i, member) in plan.members.drain(..).enumerate() {
        let dir = work.path().join(format!("member-{i}"));
        download(objects, &member.dataset_prefix, &dir.join("dataset")).await?;
        let out = dir.join("out");
        let status = tokio::process::Command::new(agentrl)
            .args(["train", "run", "--model"])
            .arg(&model)
            .arg("--dataset")
            .arg(dir.join("dataset"))
            .arg("--init-adapter")
            .arg(&global)
            .args(["--config-json", &config, "--out"])
            .arg(&out)
            // The trainer's output speaks of the tenant's data: it is not the operator's.
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .await
            .context("starting the local run")?;
        // Only the trained adapter leaves the member's directory: its dataset goes now.
        std::fs::remove_dir_all(dir.join("dataset"))?;
        if status.success() {
            locals.push(out);
            trained.push(member);
        } else {
            let reason = format!("its local run failed ({status})");
            plan.excluded.push((member.tenant, member.opt_in, reason));
        }
    }
    plan.members = trained;
    ensure_enough(&f, &plan)?;
    let weights: Vec<f64> = plan
        .members
        .iter()
        .map(|m| f.weighting.weight(m.examples))
        .collect();
    let next = work.path().join("next");
    let aggregation = agentrl_train::federate::Aggregation {
        global: global.clone(),
        locals,
        out: next.clone(),
        clip: f.clip,
        noise_multiplier: f.noise_multiplier,
        // Whoever knows the seed can subtract the noise: drawn here, never written.
        seed: rand::rng().next_u64(),
        weights: Some(weights.clone()),
        // Federations train FFA-LoRA (checked at creation): A stays the shared one.
        frozen_a: true,
    };
    let report =
        tokio::task::spawn_blocking(move || agentrl_train::federate::aggregate(&aggregation))
            .await??;
    // The adapter alone leaves the round: `federate.json` names every participant's weight.
    std::fs::remove_file(next.join("federate.json"))?;
    upload(objects, &next, &f.global_prefix(f.rounds_done + 1)).await?;
    let record = rounds
        .finish(&f, at, started_ms, &plan, &weights, report.noise_std)
        .await
        .context("recording the round (the next global adapter is written)")?;
    Ok(record)
}

fn ensure_enough(f: &Federation, plan: &Plan) -> anyhow::Result<()> {
    if plan.members.len() >= f.min_participants {
        return Ok(());
    }
    let reasons: Vec<String> = plan
        .excluded
        .iter()
        .map(|(t, _, reason)| format!("{t}: {reason}"))
        .collect();
    anyhow::bail!(
        "{} member(s) can take part, the federation needs {}{}",
        plan.members.len(),
        f.min_participants,
        if reasons.is_empty() {
            String::new()
        } else {
            format!(" (left out: {})", reasons.join("; "))
        }
    )
}

/// Every object under `prefix` into `dir` (flat: models, datasets and adapters are).
async fn download(objects: &dyn Objects, prefix: &str, dir: &Path) -> anyhow::Result<()> {
    let files: Vec<String> = objects
        .list(prefix)
        .await?
        .into_iter()
        .map(|o| o.path)
        .filter(|p| !p[prefix.len()..].contains('/'))
        .collect();
    anyhow::ensure!(
        !files.is_empty(),
        "nothing under {prefix} in the object store"
    );
    agentrl_gateway::copy_files(objects, &files, dir).await?;
    Ok(())
}

/// The files of `dir` under `prefix`.
async fn upload(objects: &dyn Objects, dir: &Path, prefix: &str) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let bytes = Bytes::from(std::fs::read(entry.path())?);
            objects.put(&format!("{prefix}{name}"), bytes).await?;
        }
    }
    Ok(())
}
