//! The AFL++ driver: `agentrl-fuzz <target>` runs one target of the library in AFL++'s
//! persistent mode. Built and run by `infra/scripts/fuzz.sh` (`cargo afl build --features afl`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(target) = agentrl_fuzz::target(&name) else {
        let names: Vec<&str> = agentrl_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: agentrl-fuzz <target>, one of: {}", names.join(", "));
        return ExitCode::from(2);
    };
    // Panics caught inside a parser (the turn-table reader turns the parquet crate's into
    // errors) are not crashes; one that escapes the target is, and aborts the run.
    afl::fuzz(false, |data| {
        (target.run)(data);
    });
    ExitCode::SUCCESS
}
