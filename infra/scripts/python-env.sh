#!/usr/bin/env bash
# Create (or reuse) a Python virtualenv of agentrl's test tooling.
#
#   venv="$(infra/scripts/python-env.sh | tail -n1)"        # moto, cfn-lint, SAM CLI, oracles
#   hf_venv="$(infra/scripts/python-env.sh hf | tail -n1)"  # transformers' config classes
#   cuda_venv="$(infra/scripts/python-env.sh cuda | tail -n1)"  # nvcc for the `cuda` feature
#   sdk_venv="$(infra/scripts/python-env.sh sdk | tail -n1)"   # the Python SDK's tests
#   console_venv="$(infra/scripts/python-env.sh console | tail -n1)"  # the console's browser tests
#
# The default venv (infra/requirements-test.txt) lives at
# ${AGENTRL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/agentrl/venv}, the `hf` one
# (infra/requirements-hf.txt) at ${AGENTRL_HF_VENV:-…/agentrl/venv-hf}: their pins conflict.
# A venv is (re)built only when missing or when its requirements changed (tracked by a stamp
# file holding the requirements' sha256); otherwise this is a no-op.
# The venv path is printed as the last line of stdout; everything else goes to stderr.
# Env: AGENTRL_PYTHON (interpreter to build the venv with, default python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentrl"
case "${1:-test}" in
  test) req="$root/infra/requirements-test.txt"; venv="${AGENTRL_VENV:-$cache/venv}" ;;
  hf) req="$root/infra/requirements-hf.txt"; venv="${AGENTRL_HF_VENV:-$cache/venv-hf}" ;;
  cuda) req="$root/infra/requirements-cuda.txt"; venv="${AGENTRL_CUDA_VENV:-$cache/venv-cuda}" ;;
  sdk) req="$root/infra/requirements-sdk.txt"; venv="${AGENTRL_SDK_VENV:-$cache/venv-sdk}" ;;
  console) req="$root/infra/requirements-console.txt"; venv="${AGENTRL_CONSOLE_VENV:-$cache/venv-console}" ;;
  *) echo "python-env: unknown venv ${1} (test, hf, cuda, sdk or console)" >&2; exit 2 ;;
esac
stamp="$venv/.agentrl-requirements.sha256"

want="$(sha256sum "$req" | cut -d' ' -f1)"

up_to_date() {
  [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]
}

if up_to_date; then
  printf '%s\n' "$venv"
  exit 0
fi

mkdir -p "$(dirname "$venv")"
# Serialize concurrent builders (e.g. two test scripts starting at once).
exec 9>"$venv.lock"
flock 9
if up_to_date; then  # another process finished the build while we waited
  printf '%s\n' "$venv"
  exit 0
fi

{
  echo "python-env: building $venv (requirements changed or venv missing)"
  rm -f "$stamp"  # first, so an interrupted rebuild is never taken as done
  rm -rf "$venv"
  "${AGENTRL_PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  "$venv/bin/python" -m pip check
} 1>&2

# Written last: an interrupted build leaves no stamp and is redone next time.
printf '%s\n' "$want" >"$stamp"
echo "python-env: ready" >&2
printf '%s\n' "$venv"
