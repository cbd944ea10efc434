#!/usr/bin/env bash
# The floods of issue 42 (finding 3) against a real pltrun-store and a real single-node
# pltrun job's agent store, for docs/PERFORMANCE.md: for each, the server's peak RSS growth
# (VmHWM, from /proc) against its --max-store-bytes. The store may hold its table and, as
# much again, its connections' buffers: the goal is a growth within 2x the limit. Run by
# scripts/bench/store.sh --flood, which passes the binaries:
#
#   scripts/bench/lib/store-flood.sh PLTRUN_STORE PLTRUN
#
# The attacker is tests/store/store_flood.py (torch 2.x frames, no torch needed) on
# loopback; every flood is bounded in count, and each server is stopped by its pid.
set -euo pipefail
cd "$(dirname "$0")/../../.."

store=${1:?usage: store-flood.sh PLTRUN_STORE PLTRUN}
pltrun=${2:?usage: store-flood.sh PLTRUN_STORE PLTRUN}
flood=tests/store/store_flood.py
python=/usr/bin/python3
work=$(mktemp -d /tmp/pltrun-store-flood-XXXXXX)

server_pid=
stop_server() {
  [[ -n $server_pid ]] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
trap 'stop_server; rm -rf "$work"' EXIT

kb() { awk -v field="$2:" '$1 == field { print $2 }' "/proc/$1/status"; }

# Starts pltrun-store with the given flags; sets server_pid and port.
start_store() {
  "$store" --host 127.0.0.1 --port 0 "$@" >"$work/store.out" 2>"$work/store.err" &
  server_pid=$!
  for _ in $(seq 100); do [[ -s $work/store.out ]] && break; sleep 0.1; done
  port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/store.out")
  [[ -n $port ]] || { echo "store-flood.sh: pltrun-store did not start: $(cat "$work/store.err")" >&2; exit 1; }
}

# Starts a single-node job whose worker waits; sets server_pid (pltrun) and port (MASTER_PORT).
start_job() {
  rm -f "$work/port"
  "$pltrun" --nproc-per-node 1 --no-python /bin/sh -c "echo \$MASTER_PORT > $work/port.tmp && mv $work/port.tmp $work/port && sleep 300" \
    >"$work/job.out" 2>"$work/job.err" &
  server_pid=$!
  for _ in $(seq 300); do [[ -s $work/port ]] && break; sleep 0.1; done
  port=$(cat "$work/port")
}

# flood NAME LIMIT_BYTES ATTACK...: runs the attack against $port and prints a table row.
flood() {
  local name=$1 limit=$2
  shift 2
  local before after outcome
  before=$(kb "$server_pid" VmHWM)
  outcome=$("$python" "$flood" "$1" "$port" "${@:2}" | tr '\n' ' ')
  after=$(kb "$server_pid" VmHWM)
  local grown=$((after - before))
  printf '| %s | %d MiB | %d MB | %.2f | %s|\n' "$name" $((limit >> 20)) $((grown / 1000)) \
    "$(awk -v g="$grown" -v l="$limit" 'BEGIN { print g * 1024 / l }')" "$outcome"
  stop_server
}

mib=$((1 << 20))
echo "| flood | limit | peak RSS growth | growth / limit | attacker saw |"
echo "|---|---|---|---|---|"
start_store --max-store-bytes $((64 * mib)) --max-keys 100
flood "6 M empty QUEUE_PUSH, --max-keys 100" $((64 * mib)) queue 6000000
start_store --max-store-bytes $((64 * mib))
flood "6 M empty QUEUE_PUSH, bytes limit" $((64 * mib)) queue 6000000
start_store --max-store-bytes $((64 * mib))
flood "5 connections x one 20 MB WAIT" $((64 * mib)) wait 5 335
start_store --max-store-bytes $((64 * mib))
flood "20 connections x one 4 MB WAIT (parked)" $((64 * mib)) wait 20 66
start_job
flood "agent store: 1.1 M empty QUEUE_PUSH" $((256 * mib)) queue 1100000
start_job
flood "agent store: 20 connections x one 20 MB WAIT" $((256 * mib)) wait 20 335
