# shellcheck shell=bash
# The Release build the benchmark scripts share (bench/elastic.sh, bench/heartbeat.sh,
# bench/restart.sh): their own build directory (build-bench/ unless --build-dir), configured
# once, only the targets a script runs. Sourced from the repository root, never run.

# bench_build BUILD_DIR TARGET...: configures BUILD_DIR as Release and builds TARGETs.
bench_build() {
  local dir=$1
  shift
  echo "== building Release into $dir" >&2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -Wno-dev >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target "$@" >/dev/null
}

# bench_require SCRIPT BINARY...: exits 1 with one line when a BINARY is not built.
bench_require() {
  local script=$1 binary
  shift
  for binary in "$@"; do
    [[ -x $binary ]] || { echo "$script: $binary is missing (run without --no-build)" >&2; exit 1; }
  done
}
