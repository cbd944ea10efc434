#!/usr/bin/env bash
# Launcher benchmarks for docs/PERFORMANCE.md: median wall time to launch 1, 4 and 8 workers
# that exit at once against the posix_spawn floor, pltrun's own start (--version) against
# /bin/true, the launcher's peak memory, and output throughput through the
# launcher with rank prefixes. Run on an otherwise idle machine; quote the medians.
#   scripts/bench/launch.sh          everything (builds everything first)
#   scripts/bench/launch.sh launch   the launch figures only (builds pltrun and spawn_floor)
# The build directory is $PLTRUN_BUILD_DIR, else build/ (as scripts/build.sh); the launch's
# runs per command PLTRUN_BENCH_RUNS (100).
set -euo pipefail
cd "$(dirname "$0")/../.."
only=${1:-all}
bash scripts/install-deps.sh >/dev/null
if [ "$only" = launch ]; then
  bash scripts/build.sh pltrun spawn_floor >/dev/null
else
  bash scripts/build.sh >/dev/null
fi
build=${PLTRUN_BUILD_DIR:-build}
case "$build" in /*) ;; *) build=$PWD/$build ;; esac
pltrun=$build/apps/pltrun
worker=$build/tests/pltrun_test_worker
floor=$build/tests/spawn_floor
results=$(mktemp -d /tmp/pltrun-bench-XXXXXX)

# One hyperfine run holds every pair, so the machine's state is the same for a figure and
# its floor: N workers under pltrun against tests/bench/spawn_floor (N posix_spawns and
# waits of /bin/true, nothing else), and pltrun's own start (--version) against /bin/true.
echo "== launch: N workers running /bin/true, against the posix_spawn floor (hyperfine, no shell)"
launch=()
for workers in 1 4 8; do
  launch+=(-n "floor $workers" "$floor $workers /bin/true" -n "pltrun $workers" "$pltrun -q --nproc-per-node $workers /bin/true")
done
hyperfine -N --warmup 10 --runs "${PLTRUN_BENCH_RUNS:-100}" --export-json "$results/launch.json" "${launch[@]}" \
  -n "/bin/true" /bin/true -n "pltrun --version" "$pltrun --version" >/dev/null
python3 - "$results/launch.json" <<'PY'
import json, sys
median = {r["command"]: r["median"] * 1000 for r in json.load(open(sys.argv[1]))["results"]}
for workers in (1, 4, 8):
    ours, floor = median[f"pltrun {workers}"], median[f"floor {workers}"]
    print(f"{workers} worker(s): pltrun {ours:.2f} ms, floor {floor:.2f} ms: {ours / floor:.2f}x the floor")
ours, floor = median["pltrun --version"], median["/bin/true"]
print(f"pltrun --version {ours:.2f} ms, /bin/true {floor:.2f} ms: {ours / floor:.2f}x")
PY
[ "$only" = launch ] && exit 0
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
