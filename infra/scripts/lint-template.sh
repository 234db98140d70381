#!/usr/bin/env bash
# Lint template.yaml with cfn-lint and `sam validate --lint`, and check that the
# event fixtures in events/ match the template's HttpApi routes.
# Exits non-zero on any error, warning or fixture mismatch. Offline; no AWS credentials needed.
set -euo pipefail
exec </dev/null

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
venv="$("$root/infra/scripts/python-env.sh" | tail -n1)"

export SAM_CLI_TELEMETRY=0
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"

fail=0

echo "lint-template: cfn-lint template.yaml" >&2
# Exit code: 0 clean, 2 errors, 4 warnings, 8 informational (bit flags): any non-zero fails.
"$venv/bin/cfn-lint" --format parseable -- template.yaml || fail=1

echo "lint-template: sam validate --lint --template template.yaml" >&2
"$venv/bin/sam" validate --lint --template template.yaml || fail=1

echo "lint-template: check-events.py" >&2
"$venv/bin/python" infra/scripts/check-events.py || fail=1

if [[ $fail != 0 ]]; then
  echo "lint-template: FAILED" >&2
  exit 1
fi
echo "lint-template: OK" >&2
