#!/usr/bin/env bash
# The cold-start benchmark (BENCHMARKS.md): the budget, diff-score and rewards function
# binaries (rewards wires every store: table, queues, bucket, judges) from spawn to serving against a local Lambda Runtime API, next to a hello-world built with the
# same profile, their table requests served by a moto server on 127.0.0.1.
#   infra/bench/cold-start.sh [RUNS]
set -euo pipefail
exec </dev/null
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
runs="${1:-30}"
venv="$(infra/scripts/python-env.sh | tail -n1)"
cargo build --release --locked -p agentrl-budget -p agentrl-diff-score -p agentrl-rewards \
  -p agentrl-http --bin budget --bin diff-score --bin rewards --example hello_lambda
target="${CARGO_TARGET_DIR:-$root/target}/release"
state="$(mktemp -d)"
trap 'AGENTRL_MOTO_STATE="$state" infra/scripts/moto.sh stop || true; rm -rf "$state"' EXIT
endpoint="$(AGENTRL_MOTO_STATE="$state" infra/scripts/moto.sh start)"
"$venv/bin/python" infra/bench/cold_start.py --endpoint "$endpoint" --runs "$runs" \
  "hello=$target/examples/hello_lambda" \
  "budget=$target/budget,/v1/budgets/00000000-0000-4000-8000-000000000000" \
  "diff-score=$target/diff-score,/v1/config/diffs" \
  "rewards=$target/rewards,/v1/config/rewards"
