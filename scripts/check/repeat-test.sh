#!/usr/bin/env bash
# Runs one CTest test many times, optionally under CPU load, and counts the failures: how
# a flaky test is made to fail often enough to find its cause (issue 14).
#
#   scripts/check/repeat-test.sh [--build-dir build] [--times 200] [--load N] TEST_REGEX
#
# --load N starts N busy loops (default: one per CPU) for the whole run; they are killed
# by pid on the way out. The log of every failed run is kept in a temporary directory,
# named at the end. Exit status: 0 when every run passed, 1 otherwise, 2 for bad arguments.
set -euo pipefail
cd "$(dirname "$0")/../.."

build_dir=build
times=200
load=$(nproc)
while [[ $# -gt 1 ]]; do
  case "$1" in
    --build-dir) build_dir=${2:?--build-dir needs a value}; shift 2 ;;
    --times) times=${2:?--times needs a value}; shift 2 ;;
    --load) load=${2:?--load needs a value}; shift 2 ;;
    *) echo "check/repeat-test.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
[[ $# -eq 1 ]] || { echo "check/repeat-test.sh: give one TEST_REGEX (see the comment at the top)" >&2; exit 2; }
regex=$1
[[ $times =~ ^[1-9][0-9]*$ && $load =~ ^[0-9]+$ ]] || { echo "check/repeat-test.sh: --times and --load take whole numbers" >&2; exit 2; }

busy=()
stop_load() { for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; }
trap stop_load EXIT
for _ in $(seq "$load"); do
  ( while :; do :; done ) &
  busy+=($!)
done

logs=$(mktemp -d /tmp/pltrun-repeat-XXXXXX)
failed=0
for run in $(seq "$times"); do
  if ctest --test-dir "$build_dir" -R "$regex" --no-tests=error --output-on-failure >"$logs/run_$run.log" 2>&1; then
    rm -f "$logs/run_$run.log"
    continue
  fi
  if grep -q "No tests were found" "$logs/run_$run.log"; then
    echo "check/repeat-test.sh: no test matches '$regex'" >&2
    exit 2
  fi
  failed=$((failed + 1))
  echo "run $run FAILED (log: $logs/run_$run.log)" >&2
done
echo "$regex: $failed of $times runs failed under a load of $load busy loops (failed runs' logs: $logs)"
[[ $failed == 0 ]]
