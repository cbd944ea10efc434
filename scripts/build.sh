#!/usr/bin/env bash
# Configures and builds pltrun and its tests into build/ (or $PLTRUN_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PLTRUN_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
