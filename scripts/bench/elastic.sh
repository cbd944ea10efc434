#!/usr/bin/env bash
# Elastic-job benchmarks for docs/PERFORMANCE.md ("Elastic jobs"), all on loopback:
#
#   (a) worker crash -> every worker running again: 2 agents (--nnodes 2) x 2 workers of
#       tests/bench/restart_probe. In round 0 rank 1 waits until all 4 workers run, writes
#       its CLOCK_MONOTONIC time and raises SIGKILL; the other workers die on SIGTERM at once.
#       Measured: the crash -> the latest start of the 4 workers of round 1 (restart count 1).
#   (b) kill -9 of an agent -> the survivors' workers running again: 3 agents
#       (--nnodes 1:3) x 2 workers; once all 6 run, restart_probe --kill writes its time and
#       sends SIGKILL to the third agent (never the one hosting the store). Measured: the
#       kill -> the latest start of the survivors' 4 workers of round 1.
#   (b2) as (b) with --nnodes 2:3 --rdzv-conf last_call_timeout=0.2: pltrun's agents poll a
#       forming round every min(0.5 s, last_call_timeout / 4), so this shows how much of (b)
#       is that poll.
#   (c) rendezvous of P participants (tests/bench/rendezvous_bench): the real
#       ElasticRendezvous in P threads, each with its own store connection, against one
#       store (c10d: a store thread in the bench; etcd: the member below, each participant
#       an EtcdStore client); from a start barrier to the last join()'s return, with every
#       result checked.
#
# Every worker writes "start RANK RESTART_COUNT NS" on CLOCK_MONOTONIC, which all processes
# of a machine share, so (a) and (b) compare times of different processes directly. The
# first agent starts with --rdzv-endpoint 127.0.0.1:0 and hosts the store; the others get
# the port it prints (no fixed ports).
#
# With --backend etcd, every part runs on a real etcd cluster this script starts on loopback
# (--etcd-members of them, 3 by default; free ports, data in the results directory), and (b) kills node rank 0's agent, the one
# a c10d job cannot lose when it hosts the store.
#
#   scripts/bench/elastic.sh [--repeat 10] [--rdzv-repeat 5] [--participants "64 512 4096"]
#                            [--only a,b,b2,c] [--backend c10d|etcd] [--etcd-members 3]
#                            [--build-dir DIR] [--no-build]
#
# RDZV_BENCH_FLAGS="--poll-ms 2000" passes more flags to rendezvous_bench (see its --help).
# Builds Release into build-bench/ (or --build-dir), prints a table of medians (min, max),
# and leaves each run's files in a fresh temporary directory (named at the end). Exit
# status: 0 when every measurement ran and checked out (goals met or not), 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."

repeat=10
rdzv_repeat=5
participants="64 512 4096"
only="a,b,b2,c"
build_dir=$PWD/build-bench
build=1
backend=c10d
etcd_members=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) repeat=${2:?--repeat needs a value}; shift 2 ;;
    --rdzv-repeat) rdzv_repeat=${2:?--rdzv-repeat needs a value}; shift 2 ;;
    --participants) participants=${2:?--participants needs a value}; shift 2 ;;
    --only) only=${2:?--only needs a value}; shift 2 ;;
    --build-dir) build_dir=$(realpath -m "${2:?--build-dir needs a value}"); shift 2 ;;
    --no-build) build=0; shift ;;
    --backend) backend=${2:?--backend needs a value}; shift 2 ;;
    --etcd-members) etcd_members=${2:?--etcd-members needs a value}; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench/elastic.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for value in "$repeat" "$rdzv_repeat" "$etcd_members" $participants; do
  [[ $value =~ ^[1-9][0-9]*$ ]] || { echo "bench/elastic.sh: '$value' is not a positive whole number (see --help)" >&2; exit 2; }
done
for part in ${only//,/ }; do
  [[ $part =~ ^(a|b|b2|c)$ ]] || { echo "bench/elastic.sh: --only: '$part' is not a, b, b2 or c" >&2; exit 2; }
done
[[ $backend =~ ^(c10d|etcd)$ ]] || { echo "bench/elastic.sh: --backend: '$backend' is not c10d or etcd" >&2; exit 2; }
wants() { [[ ",$only," == *",$1,"* ]]; }

# shellcheck source=scripts/bench/lib/bench-build.sh
source scripts/bench/lib/bench-build.sh
[[ $build == 1 ]] && bench_build "$build_dir" pltrun restart_probe rendezvous_bench
pltrun=$build_dir/apps/pltrun
probe=$build_dir/tests/restart_probe
rdzv_bench=$build_dir/tests/rendezvous_bench
bench_require bench/elastic.sh "$pltrun" "$probe" "$rdzv_bench"

results=$(mktemp -d /tmp/pltrun-elastic-bench-XXXXXX)
summary=$results/restarts.txt  # "KIND REP ok MS" or "KIND REP failed WHY"
: >"$summary"

# Every agent this script starts is killed by its pid on the way out, however it ends.
# Each runs under a small wrapper subshell that records its pid and exit status in files,
# so bash has no job of its own to report as "Killed" when an agent is killed on purpose.
agents=()    # pltrun pids
wrappers=()  # their wrapper subshells
stop_agents() {
  local pid
  for pid in "${agents[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${wrappers[@]}"; do wait "$pid" 2>/dev/null || true; done
  agents=()
  wrappers=()
}
etcd_pids=()
stop_all() {
  stop_agents
  for pid in "${etcd_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --backend etcd: a cluster of --etcd-members members (3 by default) on loopback for the whole
# run; sets `etcd_endpoint` to their client addresses, comma-separated (the first is the one
# clients try first).
if [[ $backend == etcd ]]; then
  names=() client_ports=() peer_ports=() cluster=""
  for (( member = 0; member < etcd_members; member++ )); do
    names+=("bench$member"); client_ports+=("$(free_port)"); peer_ports+=("$(free_port)")
    cluster+="${cluster:+,}bench$member=http://127.0.0.1:${peer_ports[member]}"
  done
  etcd_endpoint=""
  for (( member = 0; member < etcd_members; member++ )); do
    etcd --name "${names[member]}" --data-dir "$results/etcd$member" \
         --listen-client-urls "http://127.0.0.1:${client_ports[member]}" \
         --advertise-client-urls "http://127.0.0.1:${client_ports[member]}" \
         --listen-peer-urls "http://127.0.0.1:${peer_ports[member]}" \
         --initial-advertise-peer-urls "http://127.0.0.1:${peer_ports[member]}" \
         --initial-cluster "$cluster" --initial-cluster-state new >"$results/etcd$member.log" 2>&1 &
    etcd_pids+=($!)
    etcd_endpoint+="${etcd_endpoint:+,}127.0.0.1:${client_ports[member]}"
  done
  deadline=$(( $(now_ms) + 30000 ))
  until ETCDCTL_API=3 etcdctl --endpoints "$etcd_endpoint" endpoint health >/dev/null 2>&1; do
    (( $(now_ms) < deadline )) || { echo "bench/elastic.sh: etcd did not start; see $results/etcd*.log" >&2; exit 1; }
    sleep 0.1
  done
fi

# start_agent FILE_PREFIX PLTRUN_ARGS...: starts pltrun; sets `agent_pid`. Its output goes
# to PREFIX.out/.err, its exit status to PREFIX.status when it ends.
start_agent() {
  local prefix=$1
  shift
  rm -f "$prefix.pid" "$prefix.status"
  ( "$pltrun" "$@" >"$prefix.out" 2>"$prefix.err" &
    echo $! >"$prefix.pid"
    status=0
    wait $! || status=$?
    echo "$status" >"$prefix.status" ) 2>/dev/null &
  wrappers+=($!)
  while [[ ! -s $prefix.pid ]]; do sleep 0.001; done
  agent_pid=$(<"$prefix.pid")
  agents+=("$agent_pid")
}

# Lines of $1 saying "start RANK ROUND NS" with ROUND = $2.
starts_in_round() { awk -v r="$2" '$1 == "start" && $3 == r { n++ } END { print n + 0 }' "$1" 2>/dev/null || echo 0; }

# wait_for_agents LIMIT_S PREFIX...: waits until every agent started with PREFIX has ended
# (at most LIMIT_S, then kills it); sets `statuses` to their exit statuses ('timeout' for
# one killed here).
wait_for_agents() {
  local limit=$1 prefix deadline
  shift
  deadline=$(( $(now_ms) + limit * 1000 ))
  for prefix in "$@"; do
    while [[ ! -s $prefix.status ]] && (( $(now_ms) < deadline )); do sleep 0.02; done
  done
  statuses=()
  for prefix in "$@"; do
    if [[ -s $prefix.status ]]; then
      statuses+=("$(<"$prefix.status")")
    else
      kill -KILL "$(<"$prefix.pid")" 2>/dev/null || true
      statuses+=(timeout)
    fi
  done
  stop_agents
}

# restart_run KIND REP: one job of kind a, b or b2; appends its result to $summary.
restart_run() {
  local kind=$1 rep=$2
  local dir=$results/$kind-$rep
  mkdir -p "$dir"
  local times=$dir/times
  local id="bench-$kind-$rep-$$"
  local nnodes count crash=()
  local flags=(--nproc-per-node 2 --rdzv-id "$id")
  case $kind in
    a) nnodes=2; count=2; crash=(1); flags+=(--max-restarts 1) ;;
    b) nnodes=1:3; count=3 ;;
    b2) nnodes=2:3; count=3; flags+=(--rdzv-conf last_call_timeout=0.2) ;;
  esac
  local pids=() prefixes=() i
  local deadline
  if [[ $backend == etcd ]]; then
    for (( i = 1; i <= count; i++ )); do
      start_agent "$dir/agent$i" --nnodes "$nnodes" "${flags[@]}" --rdzv-backend etcd --rdzv-endpoint "$etcd_endpoint" \
        "$probe" "$times" "${crash[@]}"
      pids+=("$agent_pid")
      prefixes+=("$dir/agent$i")
    done
    restart_measure "$kind" "$rep" "$dir" "$times" "$count"
    return
  fi
  start_agent "$dir/agent1" --nnodes "$nnodes" "${flags[@]}" --rdzv-endpoint 127.0.0.1:0 "$probe" "$times" "${crash[@]}"
  pids+=("$agent_pid")
  prefixes+=("$dir/agent1")
  local port=""
  deadline=$(( $(now_ms) + 10000 ))
  while [[ -z $port ]] && (( $(now_ms) < deadline )) && kill -0 "${pids[0]}" 2>/dev/null; do
    port=$(sed -n 's/.*rendezvous store for run .* listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$dir/agent1.err" | head -n 1)
    [[ -n $port ]] || sleep 0.01
  done
  if [[ -z $port ]]; then
    stop_agents
    echo "$kind $rep failed the first agent printed no store port: $(tr '\n' ' ' <"$dir/agent1.err" | cut -c1-300)" >>"$summary"
    return
  fi
  for (( i = 2; i <= count; i++ )); do
    start_agent "$dir/agent$i" --nnodes "$nnodes" "${flags[@]}" --rdzv-endpoint "127.0.0.1:$port" "$probe" "$times" "${crash[@]}"
    pids+=("$agent_pid")
    prefixes+=("$dir/agent$i")
  done
  restart_measure "$kind" "$rep" "$dir" "$times" "$count"
}

# restart_measure KIND REP DIR TIMES COUNT: the agents `pids` (files `prefixes`) run; kills
# one for (b), waits for them all and appends the measurement to $summary.
restart_measure() {
  local kind=$1 rep=$2 dir=$3 times=$4 count=$5 deadline victim=2 i
  local expected_status=(0 0 0)
  if [[ $kind != a ]]; then
    # Every worker of all three nodes runs in round 0, then the third agent dies.
    deadline=$(( $(now_ms) + 30000 ))
    while (( $(starts_in_round "$times" 0) < 6 )) && (( $(now_ms) < deadline )); do sleep 0.01; done
    if (( $(starts_in_round "$times" 0) < 6 )); then
      stop_agents
      echo "$kind $rep failed round 0 never ran 6 workers (it formed without a node?)" >>"$summary"
      return
    fi
    sleep 0.2  # a steady state: every agent's watcher is waiting on the round
    if [[ $backend == etcd ]]; then  # node rank 0's agent: nothing is special about it on etcd
      for (( i = 0; i < count; i++ )); do
        grep -q "round 0: node rank 0 of" "${prefixes[$i]}.err" && victim=$i
      done
    fi
    "$probe" --kill "${pids[$victim]}" "$times"
    expected_status=(0 0 0)
    expected_status[$victim]=137
  fi
  wait_for_agents 120 "${prefixes[@]}"
  local got="${statuses[*]}" want="${expected_status[*]:0:$count}"
  if [[ $got != "$want" ]]; then
    echo "$kind $rep failed agents ended with ($got), expected ($want); see $dir" >>"$summary"
    return
  fi
  # The crash (or kill) -> the latest start among the 4 workers of round 1.
  awk -v kind="$kind" -v rep="$rep" -v dir="$dir" '
    ($1 == "crash" || $1 == "kill") { from = $4 }
    $1 == "start" && $3 == 1 { n++; if ($4 > last) last = $4 }
    END {
      if (from == "" || n != 4) { printf "%s %s failed %d workers started in round 1, crash/kill time \"%s\"; see %s\n", kind, rep, n, from, dir; exit }
      printf "%s %s ok %.1f\n", kind, rep, (last - from) / 1e6
    }' "$times" >>"$summary"
}

# The machine's 1-minute load average as each part starts (a shared machine's other work shows here).
note_load() { echo "$1 load $(cut -d' ' -f1 /proc/loadavg)" >>"$summary"; }

for kind in a b b2; do
  wants "$kind" || continue
  note_load "$kind"
  case $kind in
    a) echo "== (a) worker crash -> all workers running again: 2 agents x 2 workers, $repeat runs" >&2 ;;
    b) echo "== (b) kill -9 of an agent -> survivors' workers running again: 3 agents (--nnodes 1:3) x 2 workers, $repeat runs" >&2 ;;
    b2) echo "== (b2) as (b), --nnodes 2:3 --rdzv-conf last_call_timeout=0.2 (50 ms poll), $repeat runs" >&2 ;;
  esac
  for rep in $(seq "$repeat"); do
    restart_run "$kind" "$rep"
    echo "   $(tail -n 1 "$summary")" >&2
  done
done

rdzv_raw=$results/rendezvous.jsonl
: >"$rdzv_raw"
raft_entries=$results/raft-entries.txt  # "PARTICIPANTS RUNS ENTRIES FSYNCS FSYNC_S CPU_S" per size, etcd only
: >"$raft_entries"
# Where etcd's time goes, as counters read before and after each size: the raft entries its
# first member applied (etcd_server_proposals_applied_total); over all members, the WAL's
# fsyncs and the seconds they took (etcd_disk_wal_fsync_duration_seconds) and the members'
# CPU seconds (/proc/PID/stat).
etcd_counters() {
  python3 - "$etcd_endpoint" "${etcd_pids[@]}" <<'PY'
import os, sys, urllib.request
endpoints, pids = sys.argv[1].split(","), sys.argv[2:]
def metric(text, name):
    return sum(float(line.split()[1]) for line in text.splitlines() if line.startswith(name + " "))
texts = [urllib.request.urlopen(f"http://{e}/metrics").read().decode() for e in endpoints]
entries = metric(texts[0], "etcd_server_proposals_applied_total")
fsyncs = sum(metric(t, "etcd_disk_wal_fsync_duration_seconds_count") for t in texts)
fsync_s = sum(metric(t, "etcd_disk_wal_fsync_duration_seconds_sum") for t in texts)
def cpu_ticks(pid):  # utime + stime: fields 14 and 15 of /proc/PID/stat, counted after the ")" of its name
    after_name = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(after_name[11]) + int(after_name[12])
ticks = sum(cpu_ticks(pid) for pid in pids)
print(f"{entries:.0f} {fsyncs:.0f} {fsync_s:.3f} {ticks / os.sysconf('SC_CLK_TCK'):.2f}")
PY
}
# counters_delta BEFORE AFTER: AFTER - BEFORE, field by field.
counters_delta() {
  python3 -c 'import sys; b, a = sys.argv[1].split(), sys.argv[2].split(); print(" ".join(f"{float(y) - float(x):g}" for x, y in zip(b, a)))' "$1" "$2"
}
failed=0
if wants c; then
  read -ra sizes <<<"$participants"
  echo "== (c) rendezvous of P participants against one store: P = ${sizes[*]}; $rdzv_repeat runs each" >&2
  note_load c
  store_flags=()
  # etcd's members' CPU, and the machine's, from the start barrier to the last join.
  [[ $backend == etcd ]] && store_flags=(--etcd "$etcd_endpoint" --cpu-of "$(IFS=,; echo "${etcd_pids[*]}")")
  # Every participant is a thread of one process here, and on etcd each holds two
  # connections while it waits (its requests, its watch), each with an io_context of its
  # own: about 8 descriptors a participant, past this machine's 20,000 at 4096. Raised
  # where the limits allow (root with CAP_SYS_RESOURCE); past them rendezvous_bench splits
  # the participants across processes. Those of a real job are on separate hosts.
  ulimit -n 262144 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  # One size at a time, so that etcd's count of raft entries applied (its first member's
  # /metrics, etcd_server_proposals_applied_total) can be read around each.
  for size in "${sizes[@]}"; do
    [[ $backend == etcd ]] && counters_before=$(etcd_counters)
    # shellcheck disable=SC2086  # RDZV_BENCH_FLAGS: more flags for rendezvous_bench, split on blanks
    "$rdzv_bench" --participants "$size" --repeat "$rdzv_repeat" "${store_flags[@]}" ${RDZV_BENCH_FLAGS:-} \
      >>"$rdzv_raw" 2>>"$results/rendezvous.err" || failed=1
    [[ $backend == etcd ]] && echo "$size $rdzv_repeat $(counters_delta "$counters_before" "$(etcd_counters)")" >>"$raft_entries"
  done
  [[ $failed == 0 ]] || echo "   rendezvous_bench FAILED: $(tr '\n' ' ' <"$results/rendezvous.err" | cut -c1-400)" >&2
fi

python3 - "$summary" "$rdzv_raw" "$(nproc)" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)" "$backend" "$raft_entries" "$etcd_members" <<'PY' || failed=1
import json, statistics, sys

summary, rdzv_raw, cpus, commit, backend, raft_entries, etcd_members = sys.argv[1:8]
runs, failures, loads = {}, [], []
for line in open(summary):
    kind, rep, status, rest = (line.rstrip("\n").split(" ", 3) + [""])[:4]
    if rep == "load":
        loads.append(f"{kind} {status}")
    elif status == "ok":
        runs.setdefault(kind, []).append(float(rest))
    else:
        failures.append(line.strip())

def row(name, values, goal_ms, unit="ms", scale=1.0, digits=1):
    if not values:
        print(f"{name:<58} {'no run':>10}")
        return
    med = statistics.median(values) * scale
    lo, hi = min(values) * scale, max(values) * scale
    verdict = "MET" if med <= goal_ms * scale else "NOT MET"
    goal = f"<= {goal_ms * scale:g} {unit}" if goal_ms else ""
    if not goal_ms:
        verdict = ""
    print(f"{name:<58} {med:>10.{digits}f} {lo:>9.{digits}f} {hi:>9.{digits}f} {len(values):>4}  {goal:<11} {verdict}")

print()
where = f"etcd, {etcd_members} member(s)" if backend == "etcd" else backend
print(f"elastic jobs on {where}, loopback, {cpus} CPUs, commit {commit}; median (min, max) of the runs that completed")
if loads:
    print("1-minute load average as each part started: " + ", ".join(loads))
print(f"{'measurement':<58} {'median':>10} {'min':>9} {'max':>9} {'runs':>4}  goal")
print("-" * 104)
row("(a) worker crash -> all 4 workers running again (ms)", runs.get("a", []), 100)
row("(b) kill -9 of an agent -> survivors' 4 workers (ms)" if backend == "c10d" else
    "(b) kill -9 of node rank 0's agent -> survivors' 4 workers (ms)", runs.get("b", []), 1000)
row("(b2) as (b), last_call_timeout=0.2 (50 ms poll) (ms)", runs.get("b2", []), 0)

rdzv = {}
for line in open(rdzv_raw):
    if not line.strip():
        continue
    r = json.loads(line)
    if not r.get("ok"):
        failures.append(f"rendezvous {r.get('participants')} participants, run {r.get('rep')}: {r.get('error')}")
        continue
    rdzv.setdefault(r["participants"], []).append(r)
for p in sorted(rdzv):
    rs = rdzv[p]
    goal = (5 if p == 4096 else 1 if p == 512 else 0) if backend == "etcd" else (3 if p == 4096 else 0)
    processes = max(r.get("processes", 1) for r in rs)  # past the open-file limit: split across processes
    name = f"(c) rendezvous of {p} participants (s)" + (f", {processes} processes" if processes > 1 else "")
    row(name, [r["rendezvous_s"] for r in rs], goal, "s", digits=3)
if rdzv:
    print()
    print("(c) medians per size: phases from the start barrier (ms): last slot taken and described / round marked")
    print("    complete by the closer (its MULTI_GET of all slots) / last join() returned; requests on the wire per")
    print("    participant (etcd: store calls, each one or more HTTP requests); CPU: whole process (store thread +")
    print("    participants; on etcd without etcd's own) and the store's thread alone")
    for p in sorted(rdzv):
        rs = rdzv[p]
        m = lambda f: statistics.median(f(r) for r in rs)
        print(f"    {p:>5}: {m(lambda r: r['phases_ms']['last_slot_described']):8.1f} / "
              f"{m(lambda r: r['phases_ms']['complete']):8.1f} ({m(lambda r: r['phases_ms']['closer_multi_get']):6.1f}) / "
              f"{m(lambda r: r['phases_ms']['last_join_returned']):8.1f} ms; "
              f"{m(lambda r: (r['wire_requests'] or r['store_calls']) / p):5.1f} requests each "
              f"({m(lambda r: r['ops'].get('wait_timed_out', {}).get('calls', 0) / p):4.2f} poll timeouts each); "
              f"CPU {m(lambda r: r['process_cpu_s']):6.2f} s" +
              (f", store {m(lambda r: r['store_thread_cpu_s']):6.2f} s" if backend == "c10d" else
               f", etcd {m(lambda r: r.get('watched_cpu_s', 0)):6.2f} s") +
              f"; machine busy {m(lambda r: r.get('machine_busy_cpu_s', 0)):6.2f} of "
              f"{m(lambda r: r['rendezvous_s']) * int(cpus):6.2f} CPU-s")
for line in open(raft_entries):
    p, repeats, entries, fsyncs, fsync_s, cpu_s = line.split()
    p, per = int(p), 1 / int(repeats)
    print(f"    {p:>5}: {float(entries) * per:9.0f} raft entries applied per rendezvous "
          f"({float(entries) * per / p:.1f} per participant; etcd_server_proposals_applied_total)")
    print(f"           over all {etcd_members} members, per rendezvous: {float(fsyncs) * per:.0f} WAL fsyncs taking "
          f"{float(fsync_s) * per:.2f} s in all; {float(cpu_s) * per:.2f} s of etcd CPU (2 cores shared with the "
          f"participants)")
for f in failures:
    print(f"FAILED: {f}")
sys.exit(1 if failures else 0)
PY
echo
echo "raw results: $results (restarts.txt, rendezvous.jsonl, each run's worker times and agent logs)"
exit "$failed"
