#!/usr/bin/env bash
# The benchmarks' own virtualenv with PyTorch (kept out of the test venv: the PyPI wheel brings
# ~3 GB of CUDA libraries). Idempotent: rebuilt only when missing or when this file changes.
#
#   venv="$(infra/bench/torch-env.sh | tail -n1)"
set -euo pipefail
venv="${AGENTRL_BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/agentrl/bench-venv}"
stamp="$venv/.agentrl-bench.sha256"
want="$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  printf '%s\n' "$venv"
  exit 0
fi
{
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet torch==2.15.0 numpy==2.4.6 transformers==5.23.0 peft==0.21.2
} >&2
echo "$want" > "$stamp"
printf '%s\n' "$venv"
