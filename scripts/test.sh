#!/usr/bin/env bash
# The README's test command: installs what is missing (with Debian's python3-torch for the
# PyTorch interoperability tests), builds, and runs every test with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
# What runs, listens and is enabled before anything is installed, for the check at the end.
services_before=$(mktemp /tmp/pltrun-services-before-XXXXXX)
trap 'rm -f "$services_before"' EXIT
bash scripts/check/no-services.sh --snapshot "$services_before"
# The build's packages and the test tools (scripts/deps/packages.sh), none of whose services
# starts or stays enabled.
bash scripts/install-deps.sh --with-torch
# torch 2.x for the tests: Debian trixie's python3-torch (2.6) and forky's (2.14), each in a
# chroot (built once, about 2.5 minutes and 1.2 GB each; cached in /var/cache/pltrun).
bash scripts/chroot/torch.sh trixie ensure
bash scripts/chroot/torch.sh forky ensure
# The package test's clean Debian bookworm (built once, about 2 minutes and 650 MB; cached
# in /var/cache/pltrun; each test run installs into a throwaway copy of it).
bash scripts/package/chroot.sh ensure
# The wheel's tests' clean bookworm, trixie and forky (Python 3.11, 3.13, 3.14; built once,
# about 2 minutes and 550 MB each; cached in /var/cache/pltrun; each test installs the wheel
# into a venv in a throwaway copy).
for suite in bookworm trixie forky; do bash scripts/chroot/venv.sh "$suite" ensure; done
# The previous release's packages, which the package test upgrades from (built once from
# git history, a full build; cached in /var/cache/pltrun).
bash scripts/package/previous.sh ensure
# The wheel (pltrun-0.1.0-py3-none-manylinux_2_28_x86_64.whl in build-wheel/dist), built from
# its sdist in a Debian bullseye chroot and checked against its tag; the "wheel:" tests
# install it. The first run builds the chroot (about a minute) and compiles (about 5 minutes).
bash scripts/package/wheel.sh >/dev/null
# Every C/C++ file as .clang-format says (clang-format-14), before anything is built.
bash scripts/check/format.sh
# No function over 60 lines in the product code (docs/ARCHITECTURE.md); Debian's python3.
/usr/bin/python3 scripts/check/function-lengths.py lib rendezvous apps
# Each folder includes only what its layer may (docs/ARCHITECTURE.md, "Rules").
/usr/bin/python3 scripts/check/includes.py
bash scripts/check/test-names.sh
bash scripts/build.sh
# The store's codec and server sessions under libFuzzer with ASan/UBSan, for a bounded
# time (a separate clang build in build-fuzz/); before CTest, whose summary ends the run.
bash scripts/check/fuzz.sh "${PLTRUN_FUZZ_SECONDS:-30}"
build_dir=${PLTRUN_BUILD_DIR:-build}
# Tests start many real processes; two at a time keeps a 2-core machine responsive.
ctest --test-dir "$build_dir" --output-on-failure -j 2
# No service of the installed packages runs or was enabled by us, and none of their daemons
# runs or listens that no test started (issue 48).
bash scripts/check/no-services.sh --since "$services_before"
