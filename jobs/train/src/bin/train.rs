//! `train`: the trainer's own binary, the entry point of the Batch container image (the same
//! commands as `agentrl train`).

use clap::Parser;

/// The trainer.
#[derive(Debug, Parser)]
#[command(name = "train", version)]
struct Cli {
    #[command(subcommand)]
    command: agentrl_train::cli::TrainCommand,
}

fn main() -> std::process::ExitCode {
    // SAFETY: the first statement of `main`: no other thread exists yet.
    #[allow(unsafe_code, reason = "process-wide settings before any thread starts")]
    unsafe {
        agentrl_train::process::prepare()
    };
    agentrl_http::telemetry::init();
    match agentrl_train::cli::run(Cli::parse().command) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            agentrl_train::cli::exit_code(&e)
        }
    }
}
