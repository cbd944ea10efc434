#!/usr/bin/env bash
# Launcher benchmarks for docs/PERFORMANCE.md: median wall time to launch 4 and 8 workers
# that exit at once, the launcher's peak memory, and output throughput through the
# launcher with rank prefixes. Run on an otherwise idle machine; quote the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh >/dev/null
pltrun=$PWD/build/apps/pltrun
worker=$PWD/build/tests/pltrun_test_worker
results=$(mktemp -d /tmp/pltrun-bench-XXXXXX)

echo "== launch: N workers running /bin/true (hyperfine, no shell)"
hyperfine -N --warmup 10 --runs 100 --export-json "$results/launch.json" \
  "$pltrun -q --nproc-per-node 4 /bin/true" \
  "$pltrun -q --nproc-per-node 8 /bin/true"

echo
echo "== peak memory (max RSS of pltrun and its workers, GNU time), median of 5"
for workers in 4 8; do
  for run in 1 2 3 4 5; do
    /usr/bin/time -f %M "$pltrun" -q --nproc-per-node "$workers" /bin/true 2>&1 >/dev/null | tail -n 1
  done | sort -n | sed -n 3p | awk -v n="$workers" '{printf "%d workers: %.1f MB\n", n, $1 / 1024}'
done
/usr/bin/time -f %M "$pltrun" -q --nproc-per-node 4 "$worker" flood 62500000 2>"$results/flood.mem" >/dev/null
awk '{printf "4 workers printing 250 MB: %.1f MB\n", $1 / 1024}' <(tail -n 1 "$results/flood.mem")

echo
echo "== output throughput: 4 workers print 250 MB of 80-byte lines through pltrun (prefixed)"
bytes=$((4 * 62500000))
hyperfine -N --warmup 1 --runs 10 --export-json "$results/throughput.json" \
  --command-name "prefixed, to a pipe" --output=pipe "$pltrun -q --nproc-per-node 4 $worker flood 62500000" \
  --command-name "workers alone (no launcher), to a pipe" --output=pipe "$worker flood 250000000"
python3 - "$results/throughput.json" "$bytes" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
for result in results:
    print(f"{result['command']}: median {result['median']:.3f} s = {int(sys.argv[2]) / result['median'] / 1e6:.0f} MB/s")
PY
echo "raw hyperfine results: $results"
