#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, and runs real 4-worker jobs on
# this machine, showing ranks, prefixed logs, a restart and the failure report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
pltrun=build/apps/pltrun
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
echo "Per-rank logs and the failure report as JSON: $logs"
