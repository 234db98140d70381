#!/usr/bin/env bash
# The trainer's GPU check (issue #37): on a bare GPU machine with CUDA, PyTorch and
# transformers (no Rust, no network), from a `train` binary built on a development machine:
#
#   infra/gpu/build.sh                      # here: .gpu/train, stripped, --features cuda
#   infra/gpu/check.sh [--stage S]...       # there: figures in ${OUT:-.gpu/out}/gpu-figures.json
#
# Stages (infra/gpu/check.py): logprobs, step, grpo; each writes its figures as it ends.
# Budget: about 8 minutes on an H100 for all three.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
train="${AGENTRL_GPU_TRAIN:-$root/.gpu/train}"
out="${OUT:-$root/.gpu/out}"
[[ -x "$train" ]] || { echo "check: no trainer at $train (build it with infra/gpu/build.sh)" >&2; exit 2; }
# candle loads cuBLAS and cuRAND at run time: take PyTorch's copies when the system has none.
libs="$(python3 - <<'PY'
import glob, os
try:
    import nvidia
    roots = [os.path.dirname(p) for p in nvidia.__path__]
except ImportError:
    roots = []
print(":".join(sorted({os.path.dirname(f) for r in roots
                       for f in glob.glob(os.path.join(r, "nvidia", "**", "lib", "*.so*"), recursive=True)})))
PY
)"
export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2 || true
exec python3 "$root/infra/gpu/check.py" --train "$train" --out "$out" "$@"
