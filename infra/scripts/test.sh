#!/usr/bin/env bash
# The whole test suite, as the README and CI run it:
#   formatting, the dependency audit (cargo-audit against the vendored RustSec snapshot),
#   clippy (warnings are errors), the SAM template checks (cfn-lint, sam validate,
#   fixtures vs routes), every Rust test (the AWS adapters against moto on 127.0.0.1), the
#   Python SDK's tests (pytest against `agentrl serve`, with the real OpenAI, Agents SDK,
#   LangGraph and OpenTelemetry packages), the web console (tsc, the vendored uPlot, and its
#   pages in headless Chromium driven by Playwright, with axe-core) on the demo's data, the trainer's `cuda` build checked with nvcc from
#   PyPI, the API contract (schemathesis against `agentrl serve`, bounded by test cases,
#   seed 1), and the README's main job
#   (`agentrl demo`) as a smoke test.
# Installs what it needs (Python tools into a cached virtualenv) and needs no standard input.
set -euo pipefail
exec </dev/null

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

step() { printf '\n== %s\n' "$*" >&2; }

step "python tools (moto, cfn-lint, sam, oracles)"
# The oracle tests (apted for tree edit distances, pyarrow/DuckDB readers) run this venv.
AGENTRL_VENV="$(infra/scripts/python-env.sh | tail -n1)"
export AGENTRL_VENV
# The trainer's loader is tested on configs written by transformers' own config classes.
AGENTRL_HF_VENV="$(infra/scripts/python-env.sh hf | tail -n1)"
export AGENTRL_HF_VENV
# The Python SDK is tested with the agent frameworks it integrates (their pins are its own).
AGENTRL_SDK_VENV="$(infra/scripts/python-env.sh sdk | tail -n1)"
# The web console's checks: Debian's chromium, console/node_modules (tsc, uPlot, axe-core),
# Playwright.
AGENTRL_CONSOLE_VENV="$(infra/scripts/console-env.sh | tail -n1)"

step "moto on 127.0.0.1"
AGENTRL_MOTO_STATE="$(mktemp -d)"
export AGENTRL_MOTO_STATE
trap 'infra/scripts/moto.sh stop >/dev/null 2>&1 || true; rm -rf "$AGENTRL_MOTO_STATE"' EXIT
AGENTRL_MOTO_ENDPOINT="$(infra/scripts/moto.sh start)"
export AGENTRL_MOTO_ENDPOINT
infra/scripts/moto.sh reset
echo "moto at $AGENTRL_MOTO_ENDPOINT" >&2

step "cargo fmt --check"
cargo fmt --all -- --check

step "dependency audit: Cargo.lock against the RustSec advisory database (infra/advisory-db)"
infra/scripts/audit.sh

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "template: cfn-lint, sam validate --lint, fixtures"
infra/scripts/lint-template.sh

step "cargo test"
cargo test --workspace --locked

step "Python SDK: mypy --strict, pytest against agentrl serve"
"$AGENTRL_SDK_VENV/bin/python" -m mypy --strict sdk/python/src/agentrl
cargo build --quiet --locked -p agentrl
# Installed as users install it (the wheel, py.typed and its version metadata), not from src/.
"$AGENTRL_SDK_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  --no-deps --no-build-isolation --force-reinstall ./sdk/python
AGENTRL_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/agentrl" \
  "$AGENTRL_SDK_VENV/bin/python" -m pytest -q -p no:cacheprovider sdk/python/tests

step "web console: tsc --noEmit (checkJs, strict), vendored uPlot, pages in headless Chromium"
(cd console && npm run --silent typecheck && npm run --silent check-vendor)
# The browser tests run `agentrl demo --data-dir` and browse its data with `agentrl serve`.
AGENTRL_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/agentrl" \
  "$AGENTRL_CONSOLE_VENV/bin/python" -m pytest -q -p no:cacheprovider tests/console

step "cuda build: cargo check --features cuda, nvcc 13.0 from PyPI (no GPU needed)"
# A CUDA-only compile error cannot land; candle's kernels are compiled by nvcc here too.
infra/gpu/build.sh --check

step "API contract: schemathesis, 20 cases per operation and phase, seed 1"
infra/scripts/contract.sh --examples 20 --seed 1

step "main job: agentrl demo"
cargo run --quiet --locked -p agentrl -- demo >/dev/null
echo "demo ok" >&2
