#!/usr/bin/env bash
# Run a local moto server (AWS mock) for agentrl's service tests.
#
#   endpoint="$(infra/scripts/moto.sh start)"   # prints http://127.0.0.1:PORT
#   infra/scripts/moto.sh reset                 # wipe all mocked state
#   infra/scripts/moto.sh endpoint              # print the running endpoint
#   infra/scripts/moto.sh stop                  # kill the server
#
# State (pid, endpoint, log) lives in ${AGENTRL_MOTO_STATE:-/tmp/agentrl-moto}.
# `start` is idempotent: if a server from this state dir answers, it is reused.
# Never reads stdin.
set -euo pipefail
exec </dev/null

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
state="${AGENTRL_MOTO_STATE:-/tmp/agentrl-moto}"
pidf="$state/pid"
endf="$state/endpoint"
logf="$state/moto.log"

log() { echo "moto.sh: $*" >&2; }

alive() {  # server from the state dir is running and answering
  [[ -f "$pidf" && -f "$endf" ]] || return 1
  kill -0 "$(cat "$pidf")" 2>/dev/null || return 1
  curl -sf -o /dev/null --max-time 2 "$(cat "$endf")/moto-api/"
}

post() {  # post PATH [JSON]
  curl -sf --max-time 10 -X POST -H 'Content-Type: application/json' \
    --data "${2:-}" "$(cat "$endf")$1" >/dev/null
}

require_running() {
  alive || { log "no moto server running (state: $state); run '$0 start'"; exit 1; }
}

start_once() {  # returns 0 once a fresh server answers, 1 if it died (e.g. port race)
  local venv py port pid _
  venv="$("$here/python-env.sh" | tail -n1)"
  py="$venv/bin/python"
  port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
  # moto_server.py: moto with DynamoDB requests serialised (see the file for why).
  setsid nohup "$venv/bin/python" "$here/moto_server.py" -H 127.0.0.1 -p "$port" >"$logf" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pidf"
  echo "http://127.0.0.1:$port" >"$endf"
  for _ in $(seq 1 150); do  # up to ~30 s
    if curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/moto-api/"; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { log "moto_server exited early:"; tail -n 20 "$logf" >&2; return 1; }
    sleep 0.2
  done
  log "moto_server did not answer within 30 s:"; tail -n 20 "$logf" >&2
  kill "$pid" 2>/dev/null || true
  return 1
}

cmd_start() {
  mkdir -p "$state"
  if alive; then
    log "reusing running server (pid $(cat "$pidf"))"
  else
    rm -f "$pidf" "$endf"
    local ok=0 _
    for _ in 1 2 3; do
      if start_once; then ok=1; break; fi
    done
    if [[ $ok != 1 ]]; then rm -f "$pidf" "$endf"; exit 1; fi
    log "started pid $(cat "$pidf") at $(cat "$endf") (log: $logf)"
  fi
  post /moto-api/config '{"batch":{"use_docker":false}}'
  cat "$endf"
}

cmd_stop() {
  if [[ -f "$pidf" ]]; then
    local pid _
    pid="$(cat "$pidf")"
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      log "stopped pid $pid"
    fi
  fi
  rm -f "$pidf" "$endf"
}

cmd_reset() {
  require_running
  post /moto-api/reset
  # reset does not clear server config, but re-assert it so callers can rely on it.
  post /moto-api/config '{"batch":{"use_docker":false}}'
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  reset) cmd_reset ;;
  endpoint) require_running; cat "$endf" ;;
  *) echo "usage: $0 {start|stop|reset|endpoint}" >&2; exit 2 ;;
esac
