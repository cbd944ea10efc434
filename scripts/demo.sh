#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, and runs real 4-worker jobs on
# this machine, showing ranks, prefixed logs, a restart and the failure report, then a
# two-agent elastic job that restarts every node's workers after a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
echo "== 0. Installing what is missing, then building pltrun alone (not the tests). The first run"
echo "     takes about 4 minutes on 2 cores: apt's packages (what building and running pltrun needs),"
echo "     then about 3 minutes of the build's own progress lines below. Later runs take seconds."
bash scripts/install-deps.sh --build-only
bash scripts/build.sh pltrun
echo "== ready in $((SECONDS - started)) s"
pltrun=${PLTRUN_BUILD_DIR:-build}/apps/pltrun
logs=$(mktemp -d /tmp/pltrun-demo-XXXXXX)

echo
echo "== 1. Four workers each take their shard of a 1000-sample dataset (logs kept in $logs)"
"$pltrun" --nproc-per-node 4 --log-dir "$logs" --rdzv-id demo scripts/demo_worker.py --samples 1000

echo
echo "== 2. Rank 2 crashes in the first attempt; pltrun restarts the group once (--max-restarts 1)"
"$pltrun" --nproc-per-node 4 --max-restarts 1 scripts/demo_worker.py --samples 1000 --crash-rank 2 --crash-attempts 1

echo
echo "== 3. Rank 1 fails every time: the failure report, and rank 1's own exit code"
status=0
"$pltrun" --nproc-per-node 4 --log-dir "$logs" --rdzv-id demo-fail scripts/demo_worker.py --samples 1000 \
  --crash-rank 1 --crash-attempts 99 || status=$?
echo "pltrun exited with status $status (the crashing rank exits 3)"
test "$status" -eq 3

echo
echo "== 4. Two elastic agents (two 'nodes' on this machine) meet through the c10d rendezvous;"
echo "     rank 3 crashes in round 0, and both nodes restart their workers in round 1"
elastic=(--nnodes 2 --nproc-per-node 2 --rdzv-id demo-elastic --max-restarts 1)
job=(scripts/demo_worker.py --samples 1000 --crash-rank 3 --crash-attempts 1)
# run_node NAME ARGS...: an agent whose lines show here as they come, prefixed "[node NAME]",
# and go unprefixed to $logs/node-NAME.log; its pid and exit status go to node-NAME.pid, .status.
run_node() {
  local name=$1 status=0
  shift
  {
    "$pltrun" "$@" 2>&1 &
    echo $! >"$logs/node-$name.pid"
    wait $! || status=$?
    echo "$status" >"$logs/node-$name.status"
  } |
    tee "$logs/node-$name.log" | sed -u "s/^/[node $name] /"
}
# The first agent hosts the rendezvous store on a free port and prints it; the second joins there.
run_node a "${elastic[@]}" --rdzv-endpoint 127.0.0.1:0 "${job[@]}" &
node_a=$!
port=""
for _ in $(seq 100); do
  port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$logs/node-a.log" 2>/dev/null | cut -d: -f2 || true)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { kill "$(cat "$logs/node-a.pid")"; wait "$node_a"; echo "demo: node a printed no rendezvous port (its log: $logs/node-a.log)" >&2; exit 1; }
run_node b "${elastic[@]}" --rdzv-endpoint "127.0.0.1:$port" "${job[@]}" &
node_b=$!
wait "$node_a" "$node_b"
for name in a b; do
  status=$(cat "$logs/node-$name.status")
  [ "$status" -eq 0 ] || { echo "demo: node $name's agent exited with status $status" >&2; exit 1; }
done
echo
echo "Per-rank logs and the failure report as JSON, and each node's output: $logs"
