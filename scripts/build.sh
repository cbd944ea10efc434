#!/usr/bin/env bash
# Configures and builds pltrun and its tests into build/ (or $PLTRUN_BUILD_DIR), or only
# the targets named: scripts/build.sh pltrun. The build prints its own progress lines.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PLTRUN_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
