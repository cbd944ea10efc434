#!/usr/bin/env bash
# Store benchmarks for docs/PERFORMANCE.md: the same client (pltrun's TcpStore, store_bench)
# against two servers, pltrun-store and torch 1.13's own TCPStore server (Debian's
# python3-torch), on loopback. For each number of clients and each operation it measures
# pltrun-store through the torch 1.13 dialect (the comparison with torch's server) and the
# torch 2 dialect, then torch's server through the torch 1.13 dialect. Then it checks that
# pltrun-store holds 4096 simultaneous connections, and reports how many torch's does.
# The goal: pltrun-store >= 2x torch's server at 64 clients; 4096 connections held.
#
#   scripts/bench/store.sh [--seconds 3] [--repeat 1] [--clients "1 16 64 256"]
#                          [--ops "set get add"] [--connections 4096] [--idle-connections 0]
#                          [--no-build]
#   scripts/bench/store.sh --flood [--no-build]
#
# --repeat R measures every point R times, the three configurations of a point one after
# another each time, and tables the medians (on a shared or noisy machine use 3 or 5).
# --idle-connections M holds M more connections open and silent through every load point,
# as the many workers of a big job hold theirs (torch's server scans every connection on
# every event; the default, 0, leaves that out).
#
# --flood instead runs issue 42's floods (scripts/bench/lib/store-flood.sh): empty QUEUE_PUSH
# and parked WAITs of big keys against pltrun-store and a single-node job's agent store,
# and tables each server's peak RSS growth against its --max-store-bytes (goal: within 2x).
#
# Prints a table; the raw JSON lines go to a results file in a fresh temporary directory
# (named at the end). Run on an otherwise idle machine. Exit status: 0 when every
# pltrun-store measurement ran (whether or not the goals were met), 1 when one failed.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=3
repeat=1
clients_list="1 16 64 256"
ops="set get add"
connections=4096
idle_connections=0
build=1
flood=0
torch_python=/usr/bin/python3  # Debian's python3-torch (torch 1.13), not whatever python3 is on PATH
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds=${2:?--seconds needs a value}; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a value}; shift 2 ;;
    --clients) clients_list=${2:?--clients needs a value}; shift 2 ;;
    --ops) ops=${2:?--ops needs a value}; shift 2 ;;
    --connections) connections=${2:?--connections needs a value}; shift 2 ;;
    --idle-connections) idle_connections=${2:?--idle-connections needs a value}; shift 2 ;;
    --no-build) build=0; shift ;;
    --flood) flood=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench/store.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

[[ $seconds =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "bench/store.sh: --seconds wants a number, not '$seconds'" >&2; exit 2; }
for value in "$repeat" "$connections" "$idle_connections" $clients_list; do
  [[ $value =~ ^[0-9]+$ ]] || { echo "bench/store.sh: '$value' is not a whole number (see --help)" >&2; exit 2; }
done
for op in $ops; do
  [[ $op =~ ^(set|get|add|mixed)$ ]] || { echo "bench/store.sh: --ops: '$op' is not set, get, add or mixed" >&2; exit 2; }
done

build_dir=$PWD/build-bench
if [[ $build == 1 ]]; then
  echo "== building Release into $build_dir" >&2
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -Wno-dev >/dev/null
  targets=(store_bench pltrun-store)
  [[ $flood == 0 ]] || targets+=(pltrun)  # the floods attack a job's agent store too
  make -C "$build_dir" -j"$(nproc)" "${targets[@]}" >/dev/null
fi
if [[ $flood == 1 ]]; then
  exec bash scripts/bench/lib/store-flood.sh "$build_dir/apps/pltrun-store" "$build_dir/apps/pltrun"
fi
bench=$build_dir/tests/store_bench
store=$build_dir/apps/pltrun-store
for binary in "$bench" "$store"; do
  [[ -x $binary ]] || { echo "bench/store.sh: $binary is missing (run without --no-build)" >&2; exit 1; }
done
"$torch_python" -c 'import torch.distributed' 2>/dev/null || {
  echo "bench/store.sh: $torch_python cannot import torch (needs Debian's python3-torch: scripts/install-deps.sh --with-torch)" >&2
  exit 1
}

results=$(mktemp -d /tmp/pltrun-store-bench-XXXXXX)
raw=$results/store-bench.jsonl
: >"$raw"

# Every server this script starts is killed by its pid on the way out, however it ends.
server_pids=()
stop_servers() {
  local pid
  for pid in "${server_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${server_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null || true
  done
  server_pids=()
}
trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits for the first line of $1 (a server's stdout) for up to $2 seconds while $3 lives.
first_line() {
  local file=$1 limit=$2 pid=$3 waited=0
  while [[ $(wc -l <"$file") -lt 1 ]]; do  # a whole first line, newline included
    kill -0 "$pid" 2>/dev/null || return 1
    (( waited++ < limit * 10 )) || return 1
    sleep 0.1
  done
  head -n 1 "$file"
}

start_pltrun_store() {
  "$store" --host 127.0.0.1 --port 0 >"$results/pltrun-store.out" 2>"$results/pltrun-store.err" &
  pltrun_pid=$!
  server_pids+=("$pltrun_pid")
  local line
  line=$(first_line "$results/pltrun-store.out" 10 "$pltrun_pid") || {
    echo "bench/store.sh: pltrun-store did not start: $(cat "$results/pltrun-store.err")" >&2; exit 1; }
  [[ $line =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]] || {
    echo "bench/store.sh: pltrun-store said '$line', not 'listening on 127.0.0.1:PORT'" >&2; exit 1; }
  pltrun_port=${BASH_REMATCH[1]}
}

start_torch_store() {
  "$torch_python" -u -c '
import datetime, signal, sys, time
from torch.distributed import TCPStore
store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=datetime.timedelta(seconds=60))
print(store.port, flush=True)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    time.sleep(3600)
' >"$results/torch-store.out" 2>"$results/torch-store.err" &
  torch_pid=$!
  server_pids+=("$torch_pid")
  local line
  line=$(first_line "$results/torch-store.out" 120 "$torch_pid") || {
    echo "bench/store.sh: torch's TCPStore server did not start: $(cat "$results/torch-store.err")" >&2; exit 1; }
  [[ $line =~ ^[0-9]+$ ]] || { echo "bench/store.sh: torch's server printed '$line', not a port" >&2; exit 1; }
  torch_port=$line
}

failed=0
rep=1
clock_ticks=$(getconf CLK_TCK)
# utime + stime of a process (all its threads), in clock ticks.
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# run SERVER_NAME PORT PID DIALECT store_bench-arguments...: appends one JSON line to $raw.
run() {
  local server=$1 port=$2 pid=$3 dialect=$4
  shift 4
  local out err status=0 cpu_before cpu_after started finished
  err=$results/last.err
  # The server's CPU time over the run (warm-up included): is the server the bottleneck?
  cpu_before=$(cpu_ticks "$pid")
  started=$(date +%s%N)
  out=$(timeout 600 "$bench" --host 127.0.0.1 --port "$port" --dialect "$dialect" "$@" 2>"$err") || status=$?
  finished=$(date +%s%N)
  cpu_after=$(cpu_ticks "$pid")
  local alive=true
  kill -0 "$pid" 2>/dev/null || alive=false
  if [[ $status == 0 && $out == \{* ]]; then
    local cpu_s wall_s
    cpu_s=$(awk -v a="$cpu_before" -v b="$cpu_after" -v hz="$clock_ticks" 'BEGIN { printf "%.2f", (b - a) / hz }')
    wall_s=$(awk -v a="$started" -v b="$finished" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    echo "{\"server\":\"$server\",\"rep\":$rep,\"server_cpu_s\":$cpu_s,\"bench_wall_s\":$wall_s,${out#\{}" >>"$raw"
  else
    local why
    why=$(tr '\n"\\' "  /" <"$err" | cut -c1-400)
    [[ -n $why ]] || why="exit status $status"
    if [[ $out == \{* ]]; then
      echo "{\"server\":\"$server\",\"server_alive_after\":$alive,${out#\{}" >>"$raw"
    else
      echo "{\"server\":\"$server\",\"dialect\":\"$dialect\",\"args\":\"$*\",\"ok\":false,\"exit_status\":$status,\"server_alive_after\":$alive,\"error\":\"$why\"}" >>"$raw"
    fi
    echo "   FAILED ($server, $dialect, $*): $why" >&2
    [[ $server != pltrun-store ]] || failed=1
  fi
}

echo "== starting the servers (loopback only)" >&2
start_pltrun_store
start_torch_store
echo "   pltrun-store pid $pltrun_pid on 127.0.0.1:$pltrun_port; torch $("$torch_python" -c 'import torch; print(torch.__version__)') TCPStore pid $torch_pid on 127.0.0.1:$torch_port" >&2
echo "{\"meta\":true,\"date\":\"$(date -Is)\",\"host_cpus\":$(nproc),\"kernel\":\"$(uname -r)\",\"commit\":\"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)\",\"seconds_per_point\":$seconds,\"repeat\":$repeat,\"idle_connections\":$idle_connections,\"torch_python\":\"$torch_python\"}" >>"$raw"

echo "== load: ${seconds}s per point (after a 0.5 s warm-up), $repeat time(s); clients: $clients_list; ops: $ops; idle connections: $idle_connections" >&2
for clients in $clients_list; do
  for op in $ops; do
    for rep in $(seq "$repeat"); do
      echo "   $clients clients, $op, run $rep of $repeat" >&2
      run pltrun-store "$pltrun_port" "$pltrun_pid" torch113 --clients "$clients" --seconds "$seconds" --op "$op" \
        --idle-connections "$idle_connections"
      run pltrun-store "$pltrun_port" "$pltrun_pid" torch2 --clients "$clients" --seconds "$seconds" --op "$op" \
        --idle-connections "$idle_connections"
      run torch-1.13 "$torch_port" "$torch_pid" torch113 --clients "$clients" --seconds "$seconds" --op "$op" \
        --idle-connections "$idle_connections"
    done
  done
done
rep=1

echo "== connections: $connections held at once" >&2
run pltrun-store "$pltrun_port" "$pltrun_pid" torch113 --connections-only "$connections"
run pltrun-store "$pltrun_port" "$pltrun_pid" torch2 --connections-only "$connections"
run torch-1.13 "$torch_port" "$torch_pid" torch113 --connections-only "$connections"

# One request at a time per connection, a 2-core machine runs out of client CPU and
# loopback-stack time before either server is busy (both stay near half a core), so the
# ratio says little about the servers. With 16 requests in flight per connection, the
# servers' own cost per request decides.
echo "== pipelined: 64 clients, 16 requests in flight per connection" >&2
for op in get add; do
  for rep in $(seq "$repeat"); do
    echo "   64 clients, $op, pipelined, run $rep of $repeat" >&2
    run pltrun-store "$pltrun_port" "$pltrun_pid" torch113 --clients 64 --seconds "$seconds" --op "$op" --pipeline 16
    run pltrun-store "$pltrun_port" "$pltrun_pid" torch2 --clients 64 --seconds "$seconds" --op "$op" --pipeline 16
    run torch-1.13 "$torch_port" "$torch_pid" torch113 --clients 64 --seconds "$seconds" --op "$op" --pipeline 16
  done
done
rep=1
kill -0 "$pltrun_pid" 2>/dev/null || { echo "bench/store.sh: pltrun-store died" >&2; failed=1; }

stop_servers

"$torch_python" - "$raw" <<'PY'
import json, statistics, sys

lines = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
meta = next((l for l in lines if l.get("meta")), {})
load = {}
conns = []
for l in lines:
    if l.get("meta"):
        continue
    if "connections_held" in l or "--connections-only" in l.get("args", ""):
        conns.append(l)
    elif "ops_per_s" in l:
        load.setdefault((l["server"], l["dialect"], l["clients"], l["op"], l.get("pipeline", 1)), []).append(l)
    else:
        print(f"failed point: {l}")

# Several runs of a point: the median of each figure.
def median_of(runs):
    if not runs:
        return None
    return {k: statistics.median(r[k] for r in runs) for k in
            ("ops_per_s", "p50_us", "p99_us", "server_cpu_s", "bench_wall_s", "client_cpu_s")}
load = {k: median_of(v) for k, v in load.items()}

def fmt_rate(r):
    return f"{r['ops_per_s']:>10,.0f}" if r else f"{'failed':>10}"

def fmt_cpu(r):
    return f"{100 * r['server_cpu_s'] / r['bench_wall_s']:>4.0f}" if r and r.get("bench_wall_s") else f"{'-':>4}"

def fmt_lat(r):
    return f"{r['p50_us']:>8.0f}/{r['p99_us']:<8.0f}" if r else f"{'-':>8}/{'-':<8}"

print()
print(f"pltrun-store vs torch 1.13's TCPStore ({meta.get('torch_python', '')}): same client (pltrun's TcpStore), "
      f"{meta.get('seconds_per_point')} s per point, median of {meta.get('repeat')}, {meta.get('host_cpus')} CPUs, loopback")
if meta.get("idle_connections"):
    print(f"every point also holds {meta['idle_connections']} idle connections open on the server")
print("ops/s: measured operations over the window that ends when every client's last request is served;")
print("latency p50/p99 in microseconds (set is one-way in the protocol: its latency is the send);")
print("server CPU %: the server process's CPU time over the whole store_bench run, warm-up and connecting included")
print("ours t113 / ours t2: pltrun-store through the torch 1.13 / torch 2 dialect; ratio: ours t113 / torch")
print()
header = (f"{'clients':>7} {'op':<7} | {'ours t113':>10} {'ours t2':>10} {'torch':>10} | {'ratio':>6} {'t2 ratio':>8} | "
          f"{'ours t113 p50/p99':>17} {'ours t2 p50/p99':>17} {'torch p50/p99':>17} | server CPU % (t113/t2/torch)")
print(header)
print("-" * len(header))
keys = sorted({(k[4], k[2], k[3]) for k in load}, key=lambda k: (k[0], k[1], ["set", "get", "add", "mixed"].index(k[2])))
verdict = []
for pipeline, clients, op in keys:
    ours = load.get(("pltrun-store", "torch113", clients, op, pipeline))
    ours2 = load.get(("pltrun-store", "torch2", clients, op, pipeline))
    torch = load.get(("torch-1.13", "torch113", clients, op, pipeline))
    if pipeline > 1:
        op = f"{op}/p{pipeline}"  # shown as e.g. get/p16: 16 requests in flight per connection
    ratio = ours["ops_per_s"] / torch["ops_per_s"] if ours and torch and torch["ops_per_s"] else None
    ratio2 = ours2["ops_per_s"] / torch["ops_per_s"] if ours2 and torch and torch["ops_per_s"] else None
    r = f"{ratio:>5.2f}x" if ratio else f"{'-':>6}"
    r2 = f"{ratio2:>7.2f}x" if ratio2 else f"{'-':>8}"
    print(f"{clients:>7} {op:<7} | {fmt_rate(ours)} {fmt_rate(ours2)} {fmt_rate(torch)} | {r} {r2} | "
          f"{fmt_lat(ours):>17} {fmt_lat(ours2):>17} {fmt_lat(torch):>17} | {fmt_cpu(ours)} {fmt_cpu(ours2)} {fmt_cpu(torch)}")
    if clients == 64:
        verdict.append((op, ratio))

print()
for op, ratio in verdict:
    status = "MET" if ratio and ratio >= 2 else "NOT MET"
    shown = f"{ratio:.2f}x" if ratio else "n/a"
    print(f"goal >= 2x torch at 64 clients, {op}{' (pipelined: latency is per batch of 16)' if '/p' in op else ''}: {shown} -> {status}")
for c in conns:
    name = f"{c['server']} ({c.get('dialect', '?')} client)"
    if c.get("ok"):
        print(f"connections: {name} held {c['connections_held']} at once, each served "
              f"(connect+set {c['connect_and_set_s']:.1f} s, a get on each {c['get_round_s']:.1f} s)")
    else:
        held = c.get("connections_held", "?")
        print(f"connections: {name} FAILED after {held} of {c.get('connections_wanted', '?')} "
              f"(server alive after: {c.get('server_alive_after')}): {c.get('error')}")
PY
echo
echo "raw JSON lines: $raw"
exit "$failed"
