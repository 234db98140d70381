#!/usr/bin/env bash
# Builds the trainer with the `cuda` feature on a machine without a GPU or a CUDA install:
# nvcc, the CUDA runtime and libNVVM from PyPI (infra/requirements-cuda.txt, CUDA 13.0, which
# the driver 580 branch runs), PTX for compute capability 8.0 so that the driver compiles it
# for sm_80/86/89/90 (A100, A10G, L4/L40S, H100/H200) when it loads.
#
# candle links the CUDA driver, NVRTC, cuBLAS, cuBLASLt and cuRAND dynamically. Only the
# runtime comes from PyPI whole; the other libraries are link-time stubs made here, as the
# CUDA toolkit's own `lib/stubs` are: a shared object with the library's soname defining the
# names cudarc binds (read from cudarc's bindings), so that the binary records the real
# library to load. The machine that runs it has the real ones (the driver's libcuda, and
# cuBLAS/NVRTC/cuRAND from its CUDA or PyTorch's packages: infra/gpu/check.sh finds them).
#
#   infra/gpu/build.sh            # -> .gpu/train (stripped)
#   infra/gpu/build.sh --check    # `cargo check --features cuda` only (what CI runs)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
venv="$(infra/scripts/python-env.sh cuda | tail -n1)"
cuda="$("$venv/bin/python" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')"
export PATH="$cuda/bin:$PATH" CUDA_ROOT="$cuda" CUDA_PATH="$cuda"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-80}"
export CARGO_TARGET_DIR="${AGENTRL_CUDA_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentrl/cargo-target-cuda}"
cudarc="$(cargo metadata --locked --format-version 1 --features agentrl-train/cuda \
  | python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "cudarc").rsplit("/", 1)[0])')"
stubs="$CARGO_TARGET_DIR/cuda-stubs"
mkdir -p "$stubs"
# library file, soname, cudarc's bindings
for lib in "libcuda.so libcuda.so.1 driver" "libnvrtc.so libnvrtc.so.13 nvrtc" \
           "libcublas.so libcublas.so.13 cublas" "libcublasLt.so libcublasLt.so.13 cublaslt" \
           "libcurand.so libcurand.so.10 curand"; do
  set -- $lib
  grep -oE 'load::<_F>\("[A-Za-z0-9_]+"\)' "$cudarc/src/$3/sys/mod.rs" \
    | sed -E 's/load::<_F>\("([A-Za-z0-9_]+)"\)/void \1(void) {}/' | sort -u >"$stubs/$3.c"
  gcc -shared -fPIC -Wl,-soname,"$2" -o "$stubs/$1" "$stubs/$3.c"
done
ln -sf "$cuda/lib/libcudart.so.13" "$stubs/libcudart.so"
# The same flags for both commands, so that they share one build cache.
export RUSTFLAGS="-L native=$stubs"
if [[ "${1:-}" == "--check" ]]; then
  exec cargo check --locked --release -p agentrl-train --features cuda --lib --bins
fi
cargo build --locked --release -p agentrl-train --features cuda --bin train
mkdir -p .gpu
cp "$CARGO_TARGET_DIR/release/train" .gpu/train
strip .gpu/train
ls -l .gpu/train >&2
