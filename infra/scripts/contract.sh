#!/usr/bin/env bash
# The API contract checked by schemathesis: builds agentrl, serves the local stack on a fresh
# data directory on 127.0.0.1, and runs schemathesis against /openapi.json with every check
# (status codes, content types, headers, response schemas, negative and positive data,
# ignored auth, use after free, resource availability) and stateful testing. The hooks in
# contract_hooks.py stand for the two rules the document can only say in prose.
#
#   infra/scripts/contract.sh [--time SECONDS | --examples N] [--seed SEED]
#
# --time (default 150 s) repeats fuzzing and stateful testing until the time is spent;
# --examples bounds the test cases per operation instead, so a run does the same work on a
# fast or a slow host (what the test command uses). The seed defaults to 1.
#
# schemathesis lives in its own cached virtualenv (its pins clash with aws-sam-cli's):
# ${AGENTRL_CONTRACT_VENV:-${XDG_CACHE_HOME:-~/.cache}/agentrl/venv-contract}.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bound=(--max-time 150)
seed=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --time) bound=(--max-time "$2"); shift 2 ;;
    --examples) bound=(--max-examples "$2"); shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    *) echo "usage: $0 [--time SECONDS | --examples N] [--seed SEED]" >&2; exit 2 ;;
  esac
done
version="4.32.5"
venv="${AGENTRL_CONTRACT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/agentrl/venv-contract}"

if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$version"; then
  echo "contract: installing schemathesis $version into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "schemathesis==$version"
fi

cd "$root"
cargo build --quiet -p agentrl
bin="${CARGO_TARGET_DIR:-$root/target}/debug/agentrl"

data="$(mktemp -d)"
key="contract-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
# The gateway's chat operations call a model server: a stub one on loopback.
python3 "$root/infra/scripts/contract_upstream.py" >"$data/upstream.url" &
upstream=$!
for _ in $(seq 100); do [[ -s "$data/upstream.url" ]] && break; sleep 0.1; done
# Created here, not by the background job's redirection, which may come after the first read.
: >"$data/serve.log"
AGENTRL_GATEWAY_BASE_URL="$(head -n1 "$data/upstream.url")" \
  "$bin" serve --addr 127.0.0.1:0 --data-dir "$data" --api-key "contract=$key" 2>"$data/serve.log" &
pid=$!
trap 'kill "$pid" "$upstream" 2>/dev/null || true; wait "$pid" "$upstream" 2>/dev/null || true; rm -rf "$data"' EXIT

url=""
for _ in $(seq 100); do
  url="$(sed -n 's/.*agentrl listening on \(http[^ ]*\).*/\1/p' "$data/serve.log" | head -n1)"
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "contract: the server did not start" >&2; cat "$data/serve.log" >&2; exit 1; }

echo "contract: schemathesis $version against $url, ${bound[*]}, seed $seed" >&2
# From the scratch directory: schemathesis leaves its state (.schemathesis/) where it runs.
cd "$data"
AGENTRL_CONTRACT_KEY="$key" PYTHONPATH="$root/infra/scripts" SCHEMATHESIS_HOOKS=contract_hooks \
  "$venv/bin/schemathesis" --config-file "$root/infra/scripts/contract.toml" \
  run "$url/openapi.json" --checks all "${bound[@]}" --seed "$seed" --no-color
