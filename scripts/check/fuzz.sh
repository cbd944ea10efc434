#!/usr/bin/env bash
# Builds the libFuzzer targets, the store's and the metrics endpoint's (AddressSanitizer +
# UndefinedBehaviorSanitizer), into build-fuzz/ and runs each for a bounded time, starting
# from the seeds in tests/fuzz/corpus/<target>/ (copied to a temporary corpus: the
# repository is not modified).
#
#   bash scripts/check/fuzz.sh [SECONDS]      seconds per target: SECONDS, else $PLTRUN_FUZZ_SECONDS, else 60
#
# fuzz_store_connection (a connection's pure state machine) and fuzz_store_session (the Asio
# shell around it, over loopback sockets) fuzz one connection between them: each runs for half
# of SECONDS (rounded up), so a run takes what it took before the machine had its own target.
#
# Environment: PLTRUN_FUZZ_BUILD_DIR (default build-fuzz), PLTRUN_FUZZ_TARGETS (default all five
# targets), CC/CXX (default clang/clang++), PLTRUN_FUZZ_CORPUS_DIR (keep the grown corpus in
# <dir>/<target>/ across runs, e.g. a CI cache; default: a temporary directory, deleted). Needs clang and libclang-rt-dev (libFuzzer); no
# network, no input. Exits non-zero if a build fails or a target finds a crash, a leak, UB,
# a violated invariant, a timeout or an out-of-memory; the failing input is kept in
# $PLTRUN_FUZZ_BUILD_DIR/fuzz-artifacts/<target>/ and the command to replay it is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-${PLTRUN_FUZZ_SECONDS:-60}}
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "check/fuzz.sh: SECONDS must be a positive integer, not '$seconds'" >&2
  exit 2
fi
build_dir=${PLTRUN_FUZZ_BUILD_DIR:-build-fuzz}
read -r -a targets <<<"${PLTRUN_FUZZ_TARGETS:-fuzz_store_codec fuzz_store_connection fuzz_store_session fuzz_store_values fuzz_metrics_request}"
export CC=${CC:-clang} CXX=${CXX:-clang++}
for tool in "$CC" "$CXX"; do
  command -v "$tool" >/dev/null || { echo "check/fuzz.sh: $tool not found (apt-get install clang libclang-rt-dev)" >&2; exit 2; }
done

echo "== configuring $build_dir ($CXX)"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLTRUN_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
echo "== building ${targets[*]}"
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"

work=$(mktemp -d "${TMPDIR:-/tmp}/pltrun-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Leaks are reported (LeakSanitizer), UB aborts; libFuzzer turns either into a failing exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

seconds_for() {
  case $1 in
    fuzz_store_connection | fuzz_store_session) echo $(((seconds + 1) / 2)) ;;
    *) echo "$seconds" ;;
  esac
}

failed=()
summary=()
for target in "${targets[@]}"; do
  target_seconds=$(seconds_for "$target")
  binary="$build_dir/tests/fuzz/$target"
  corpus="${PLTRUN_FUZZ_CORPUS_DIR:-$work/corpus}/$target"
  artifacts="$build_dir/fuzz-artifacts/$target"
  log="$work/$target.log"
  rm -rf "$artifacts"  # findings of this run only
  mkdir -p "$corpus" "$artifacts"
  if [[ -d tests/fuzz/corpus/$target ]]; then
    cp tests/fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  fi
  echo "== fuzzing $target for ${target_seconds}s"
  status=0
  # -timeout: one input running this long is a hang; -rss_limit_mb: a runaway allocation.
  "$binary" -max_total_time="$target_seconds" -rss_limit_mb=2048 -timeout=30 -detect_leaks=1 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" </dev/null >"$log" 2>&1 || status=$?
  # The progress lines are many; show the start, the end and any report.
  grep -E '^INFO: (Loaded|seed corpus|Running with)|^#[0-9]+[[:space:]]+INITED' "$log" || true
  if ((status != 0)); then
    sed -n '/==ERROR\|ERROR: libFuzzer\|runtime error\|invariant violated\|property violated\|^SUMMARY/,$p' "$log" | head -120
  fi
  tail -n 1 < <(grep -E '^#[0-9]+[[:space:]]' "$log") || true
  done_line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 || true)
  execs=$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{print $2}' | tail -n 1 || true)
  rate=$(grep -E '^stat::average_exec_per_sec:' "$log" | awk '{print $2}' | tail -n 1 || true)
  if ((status == 0)) && [[ -n $done_line ]]; then
    echo "$done_line"
    summary+=("$target: ok, ${execs:-?} runs, ${rate:-?} exec/s (${done_line})")
  else
    failed+=("$target")
    crash=$(find "$artifacts" -maxdepth 1 -type f -printf '%T@ %f\n' 2>/dev/null | sort -rn | head -n 1 | cut -d' ' -f2- || true)
    summary+=("$target: FAILED (exit $status)${crash:+, input $artifacts/$crash}")
    if [[ -n $crash ]]; then
      echo "check/fuzz.sh: replay with: $binary $artifacts/$crash"
    fi
  fi
done

echo "== summary"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "check/fuzz.sh: failing targets: ${failed[*]}" >&2
  exit 1
fi
