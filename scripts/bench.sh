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
python3 - "$results/launch.json" <<'PY'
import json, sys
for result in json.load(open(sys.argv[1]))["results"]:
    print(f"{result['command']}: median {result['median'] * 1000:.1f} ms")
PY

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
echo "== output throughput: 4 workers each cat 62.5 MB of 80-byte lines through pltrun (prefixed)"
# cat from the page cache costs the workers almost nothing, so this measures the launcher.
lines=$results/lines.txt
python3 -c "
import sys
line = 'x' * 79 + '\\n'
sys.stdout.write(line * (62500000 // 80))" > "$lines"
bytes=$((4 * $(stat -c %s "$lines")))
trap 'rm -f "$lines"' EXIT
hyperfine -N --warmup 1 --runs 10 --output=pipe --export-json "$results/throughput.json" \
  --command-name "pltrun, 4 workers, prefixed" "$pltrun -q --nproc-per-node 4 /bin/cat $lines" \
  --command-name "pltrun, 4 workers, --no-prefix" "$pltrun -q --no-prefix --nproc-per-node 4 /bin/cat $lines" \
  --command-name "no launcher: one cat of the 4 files" "/bin/cat $lines $lines $lines $lines"
python3 - "$results/throughput.json" "$bytes" <<'PY'
import json, sys
for result in json.load(open(sys.argv[1]))["results"]:
    print(f"{result['command']}: median {result['median']:.3f} s = {int(sys.argv[2]) / result['median'] / 1e6:.0f} MB/s")
PY
echo "raw hyperfine results: $results"
