//! The `agentrl` binary: argument parsing only; each command lives in its own module.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Parser, Subcommand};

use agentrl::{dataset, demo, diff_score, federation, keys, models, replay, serve};

/// agentrl: make AI agents better from their own work.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve every route of every function in one process (the local stack).
    Serve(serve::ServeArgs),
    /// Start the local stack on a temporary port and walk through its APIs: budgets, diff
    /// scoring, trajectories and datasets, reward verification, learning events, and a
    /// training run that closes the loop (every request and answer is printed).
    Demo {
        /// Where the embedded store lives (a temporary directory when omitted).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: SocketAddr,
    },
    /// Score a code change for minimality and reward hacking; prints JSON.
    DiffScore(diff_score::DiffScoreArgs),
    /// Training datasets from the turn table.
    Dataset {
        #[command(subcommand)]
        command: DatasetCommand,
    },
    /// GRPO training (candle): run, logprobs, bench, demo.
    Train {
        #[command(subcommand)]
        command: agentrl_train::cli::TrainCommand,
    },
    /// Budget operator commands.
    Budget {
        #[command(subcommand)]
        command: BudgetCommand,
    },
    /// Model versions: copy their adapters to where the upstream loads them.
    Models {
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// Tenant API keys (the gateway on AWS; `agentrl serve` beside its --api-key): create,
    /// list, revoke.
    Keys {
        #[command(subcommand)]
        command: keys::KeysCommand,
    },
    /// Federated learning across tenants (operator only): create a federation, run its next
    /// round, show it and its rounds.
    Federation {
        #[command(subcommand)]
        command: federation::FederationCommand,
    },
}

#[derive(Subcommand)]
enum ModelsCommand {
    /// Copy every adapter version of the tenants to the directory the upstream's hosts mount
    /// as `lora_dir` (`DEST/{tenant}/{agent_id}-{version}/`).
    Sync(models::SyncArgs),
}

#[derive(Subcommand)]
enum DatasetCommand {
    /// Select, deduplicate and split the turn table into per-tenant datasets.
    Build(dataset::BuildArgs),
}

#[derive(Subcommand)]
enum BudgetCommand {
    /// Replay a synthetic workload: token waste with static vs adaptive allocation.
    Replay(replay::ReplayArgs),
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if matches!(args.command, Command::Train { .. }) {
        // SAFETY: before the async runtime starts, this is the process's only thread.
        #[allow(unsafe_code, reason = "process-wide settings before any thread starts")]
        unsafe {
            agentrl_train::process::prepare()
        };
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match args.command {
            Command::Serve(a) => serve::run(a).await,
            Command::Demo { data_dir, addr } => demo::run(data_dir, addr).await,
            Command::DiffScore(a) => diff_score::run(&a),
            Command::Dataset {
                command: DatasetCommand::Build(a),
            } => dataset::run(&a).await,
            Command::Train { command } => {
                agentrl_http::telemetry::init();
                // Training is CPU-bound and synchronous: off the async workers.
                tokio::task::spawn_blocking(move || agentrl_train::cli::run(command)).await?
            }
            Command::Budget {
                command: BudgetCommand::Replay(a),
            } => replay::run(&a),
            Command::Models {
                command: ModelsCommand::Sync(a),
            } => models::sync(&a).await,
            Command::Keys { command } => {
                agentrl_http::telemetry::init();
                keys::run(command).await
            }
            Command::Federation { command } => federation::run(command).await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            agentrl_train::cli::exit_code(&e)
        }
    }
}
