#!/usr/bin/env bash
# Set up what the web console's checks and browser tests need; idempotent, cheap when done.
#
#   venv="$(infra/scripts/console-env.sh | tail -n1)"
#
# - Chromium from Debian's packages (/usr/bin/chromium) when absent: Playwright drives it by
#   `executable_path`; no browser is ever downloaded.
# - `npm ci` in console/ when node_modules is missing or older than package-lock.json
#   (TypeScript for `npm run typecheck`, uPlot for `npm run check-vendor`, axe-core for the tests).
# - The Python virtualenv of the tests (infra/requirements-console.txt: Playwright, pytest),
#   through infra/scripts/python-env.sh console.
# The venv path is printed as the last line of stdout; everything else goes to stderr.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

{
  if [[ ! -x /usr/bin/chromium ]]; then
    echo "console-env: installing chromium (Debian package)"
    export DEBIAN_FRONTEND=noninteractive
    apt_get=(apt-get)
    [[ "$(id -u)" == 0 ]] || apt_get=(sudo apt-get)
    "${apt_get[@]}" update -q
    "${apt_get[@]}" install -y -q chromium
  fi

  cd "$root/console"
  if [[ ! -d node_modules || package-lock.json -nt node_modules ]]; then
    echo "console-env: npm ci in console/"
    npm ci --no-audit --no-fund
    touch node_modules  # newer than the lock file from now on
  fi
} 1>&2

"$root/infra/scripts/python-env.sh" console
