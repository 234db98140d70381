//! Test support shared by the crates' tests and benches (a dev-dependency only, so none of
//! it ships in a Lambda binary): where the test venv's Python is, and how to send the API
//! Gateway fixtures of `events/` through a function's router as the Lambda runtime would,
//! a scripted OpenAI-compatible server standing in for a model provider, and checks that a
//! schema's bounds are its validator's.
#![deny(missing_docs)]

mod apigw;
pub mod chat;
pub mod schema;

use std::path::PathBuf;

pub use apigw::{fixture, invoke, invoke_json, with_body};

/// The test venv's interpreter, where `infra/scripts/python-env.sh` builds it:
/// `$AGENTRL_VENV/bin/python`, else `${XDG_CACHE_HOME:-~/.cache}/agentrl/venv/bin/python`.
/// It may not exist yet; [`venv_python`] insists.
pub fn venv_python_path() -> PathBuf {
    interpreter("AGENTRL_VENV", "venv")
}

/// `$<variable>/bin/python`, else `${XDG_CACHE_HOME:-~/.cache}/agentrl/<name>/bin/python`.
fn interpreter(variable: &str, name: &str) -> PathBuf {
    let venv = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
                })
                .join("agentrl")
                .join(name)
        });
    venv.join("bin/python")
}

/// An interpreter that must exist, or a panic saying how to build its venv.
fn existing(python: PathBuf, build: &str, variable: &str) -> PathBuf {
    assert!(
        python.is_file(),
        "{} is missing: run {build} (or set {variable}) to build it",
        python.display()
    );
    python
}

/// The test venv's interpreter (numpy, pyarrow, DuckDB, apted, pytest: the oracles).
///
/// # Panics
/// When the venv is not built, saying how to build it.
pub fn venv_python() -> PathBuf {
    existing(
        venv_python_path(),
        "infra/scripts/python-env.sh",
        "AGENTRL_VENV",
    )
}

/// The Hugging Face venv's interpreter (transformers' config classes, no torch):
/// `$AGENTRL_HF_VENV/bin/python`, else `…/agentrl/venv-hf/bin/python`.
///
/// # Panics
/// When the venv is not built, saying how to build it.
pub fn hf_python() -> PathBuf {
    existing(
        interpreter("AGENTRL_HF_VENV", "venv-hf"),
        "infra/scripts/python-env.sh hf",
        "AGENTRL_HF_VENV",
    )
}

/// Cases of a property test: `default` (what CI runs), or `PROPTEST_CASES` for a long run.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default)
}
