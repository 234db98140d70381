#!/usr/bin/env bash
# Coverage-guided fuzzing with AFL++ on the stable toolchain (cargo-afl), of the targets in
# fuzz/ (every parser of untrusted input; docs/reliability.md):
#
#   infra/scripts/fuzz.sh [--seconds S] [--out DIR] [TARGET...]
#
# Defaults: 60 s per target, every target, results under $CARGO_TARGET_DIR/afl-runs.
# Installs cargo-afl into ~/.cache/agentrl/tools when missing (its build script compiles AFL++
# from the sources bundled in the crate: nothing is downloaded but the crate), builds the
# targets instrumented (SanitizerCoverage trace-pc-guard and trace-compares) in their own
# target directory, runs the targets one after the other from their seed corpus
# (fuzz/corpus/<target>/), prints a table of executions, coverage and crashes, and exits
# non-zero if any target crashed or hung; the inputs are kept under DIR/<target>/default/.
set -euo pipefail
exec </dev/null

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

seconds=60
target_dir="${CARGO_TARGET_DIR:-$root/target}"
out="$target_dir/afl-runs"
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(ls fuzz/corpus)
fi
for t in "${targets[@]}"; do
  [[ -d "fuzz/corpus/$t" ]] || { echo "no target $t (see fuzz/corpus/)" >&2; exit 2; }
done

tools="$HOME/.cache/agentrl/tools"
export PATH="$tools/bin:$PATH"
if ! cargo afl --version >/dev/null 2>&1; then
  echo "installing cargo-afl into $tools" >&2
  cargo install cargo-afl --version 0.18.2 --locked --root "$tools"
fi
# The install builds AFL++; a build that failed then is retried here.
cargo afl config --build >/dev/null 2>&1 || true

echo "building the instrumented targets" >&2
CARGO_TARGET_DIR="$target_dir/afl" cargo afl build --release --locked -p agentrl-fuzz --features afl
bin="$target_dir/afl/release/agentrl-fuzz"

# No UI, no CPU binding (containers), and no core-dump handler check: crashes are still
# caught from the abort signal.
export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_QUIET=1
mkdir -p "$out"
status=0
rows=()
for t in "${targets[@]}"; do
  echo "fuzzing $t for $seconds s" >&2
  rm -rf "${out:?}/$t"
  cargo afl fuzz -V "$seconds" -i "fuzz/corpus/$t" -o "$out/$t" -- "$bin" "$t" >"$out/$t.log" 2>&1 || {
    echo "afl-fuzz failed on $t; its log:" >&2
    tail -n 30 "$out/$t.log" >&2
    exit 1
  }
  stats="$out/$t/default/fuzzer_stats"
  stat() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
  crashes="$(stat saved_crashes)"
  hangs="$(stat saved_hangs)"
  rows+=("| $t | $(stat execs_done) | $(stat execs_per_sec) | $(stat corpus_count) | $(stat edges_found) | $(stat bitmap_cvg) | $crashes | $hangs |")
  if ((crashes > 0 || hangs > 0)); then
    status=1
    ls "$out/$t/default/crashes" "$out/$t/default/hangs" >&2
  fi
done

echo
echo "AFL++ $(cargo afl fuzz -h 2>/dev/null | grep -o 'afl-fuzz++[0-9.a-z]*' | head -n1), $seconds s per target, $(nproc) cores"
echo
echo "| target | executions | per second | corpus | edges | map coverage | crashes | hangs |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$status"
