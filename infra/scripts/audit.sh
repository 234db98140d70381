#!/usr/bin/env bash
# Dependency audit: every crate in Cargo.lock against the RustSec advisory database, from the
# snapshot vendored in infra/advisory-db (AGENTRL_ADVISORY_DB names another), with no
# network. A vulnerability or a yanked crate fails; an exception is written down, with its
# reason, in .cargo/audit.toml. Unmaintained and unsound advisories are printed as warnings.
#
# cargo-audit (pinned) is installed once under ~/.cache/agentrl/tools. It wants the database as
# a git repository: a copy of the snapshot is made one, cached by the snapshot's content.
set -euo pipefail
exec </dev/null

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentrl"
version="0.22.2"
snapshot="${AGENTRL_ADVISORY_DB:-$root/infra/advisory-db}"

if [[ ! -d "$snapshot/crates" ]]; then
  echo "audit: no advisory database at $snapshot (set AGENTRL_ADVISORY_DB to a RustSec snapshot)" >&2
  exit 1
fi

audit="$cache/tools/bin/cargo-audit"
if [[ ! -x "$audit" ]] || ! "$audit" audit --version 2>/dev/null | grep -q "$version"; then
  echo "audit: installing cargo-audit $version" >&2
  cargo install --quiet --locked --root "$cache/tools" cargo-audit --version "$version"
fi

digest="$(cd "$snapshot" && find crates rust -type f -name '*.md' -print0 | sort -z \
  | xargs -0 sha256sum | sha256sum | cut -c1-16)"
db="$cache/advisory-db-$digest"
if [[ ! -d "$db/.git" ]]; then
  rm -rf "$db.tmp"
  mkdir -p "$db.tmp"
  cp -R "$snapshot/crates" "$snapshot/rust" "$db.tmp/"
  git -C "$db.tmp" init --quiet
  git -C "$db.tmp" add -A
  git -C "$db.tmp" -c user.name=agentrl -c user.email=ci@agentrl.invalid \
    commit --quiet -m "RustSec advisory database snapshot"
  mv "$db.tmp" "$db"
fi

cd "$root"
# --stale: a snapshot is old by design. Yanked crates are looked up in cargo's local index
# (no index update: .cargo/audit.toml).
"$audit" audit --db "$db" --no-fetch --stale --deny yanked --file Cargo.lock
