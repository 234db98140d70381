#!/usr/bin/env bash
# The diff-score benchmark (BENCHMARKS.md): real file pairs from PyPI, npm and crates.io,
# scored by `agentrl diff-score` and diffed by difftastic on one core.
#   infra/bench/diff-score.sh [PAIRS_DIR]
# Installs difftastic with `cargo install` when missing (for the comparison only: it is never
# a dependency of agentrl).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
pairs="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/agentrl/diff-pairs}"
venv="$(infra/scripts/python-env.sh | tail -n1)"
"$venv/bin/python" infra/bench/fetch-diff-pairs.py "$pairs"
command -v difft >/dev/null || cargo install difftastic --locked
cargo build --release --locked -p agentrl
target="${CARGO_TARGET_DIR:-$root/target}"
"$venv/bin/python" infra/bench/diff_score_bench.py "$target/release/agentrl" "$(command -v difft)" "$pairs"
