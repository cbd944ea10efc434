#!/usr/bin/env bash
# The README's test command: installs what is missing (with Debian's python3-torch for the
# PyTorch interoperability tests), builds, and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --with-torch
bash scripts/build.sh
build_dir=${PLTRUN_BUILD_DIR:-build}
# Tests start many real processes; two at a time keeps a 2-core machine responsive.
ctest --test-dir "$build_dir" --output-on-failure -j 2
