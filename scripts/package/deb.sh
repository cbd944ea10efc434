#!/usr/bin/env bash
# Builds pltrun's Debian packages with CPack (apps/packaging/debian.cmake says what each
# holds): pltrun_VERSION-REV_ARCH.deb, pltrun-dev_VERSION-REV_ARCH.deb and the debug
# symbols, pltrun-dbgsym_VERSION-REV_ARCH.ddeb (0.1.0-1: the Debian revision is set in the
# top-level CMakeLists.txt).
#
#   scripts/package/deb.sh [--no-build] [BUILD_DIR [OUTPUT_DIR]]
#
# BUILD_DIR (default $PLTRUN_BUILD_DIR, else build, as scripts/build.sh) is configured first
# if it is not yet; then what the packages hold is built (the programs, the library, man
# pages, completion; not the tests) unless --no-build (the package test: it packages
# what CTest tests and never rebuilds under running tests). The packages go to OUTPUT_DIR
# (default BUILD_DIR/packages), and their paths are printed, one a line.
set -euo pipefail

say() { echo "package/deb.sh: $*" >&2; }
die() { say "error: $*"; exit 2; }

build=1
if [ "${1:-}" = --no-build ]; then build=0; shift; fi
[ $# -le 2 ] || die "usage: scripts/package/deb.sh [--no-build] [BUILD_DIR [OUTPUT_DIR]]"
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${1:-${PLTRUN_BUILD_DIR:-build}}
case "$build_dir" in /*) ;; *) build_dir=$source_dir/$build_dir ;; esac
output_dir=${2:-$build_dir/packages}
if [ "$build" = 0 ] && [ ! -f "$build_dir/CMakeCache.txt" ]; then
  die "$build_dir is not configured; run without --no-build, or bash scripts/build.sh"
fi

# What CPack needs besides CMake: dpkg-shlibdeps (Depends), file, objcopy and readelf
# (stripping, the debug package), help2man (the man pages, at build time).
for tool in dpkg-shlibdeps dpkg-deb file objcopy readelf strip help2man; do
  command -v "$tool" >/dev/null || die "$tool is missing; run: bash scripts/install-deps.sh"
done

# One packaging run at a time per build directory (a build under a running cpack would
# change what it copies).
mkdir -p "$build_dir" "$output_dir"
output_dir=$(cd "$output_dir" && pwd)
exec 8>"$build_dir/.package.lock"
flock 8

if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  say "configuring $build_dir"
  cmake -S "$source_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null ||
    die "configuring $build_dir failed (above)"
fi
if [ "$build" = 1 ]; then
  say "building the packages' contents in $build_dir"
  cmake --build "$build_dir" --target pltrun_package_contents -j "$(nproc)" >/dev/null ||
    die "building in $build_dir failed (above)"
fi
[ -f "$build_dir/CPackConfig.cmake" ] || die "$build_dir has no CPackConfig.cmake; run: cmake $build_dir"
[ -f "$build_dir/apps/packaging/share/man/man1/pltrun.1.gz" ] ||
  die "$build_dir has no man pages (help2man was missing when it was configured); run: cmake $build_dir, then this again"

say "cpack into $output_dir"
staging=$output_dir/_CPack_Packages
log=$output_dir/cpack.log
if ! cpack --config "$build_dir/CPackConfig.cmake" -B "$output_dir" >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  die "cpack failed (log: $log)"
fi
rm -rf "$staging"  # the unstripped copies: hundreds of MB
# CPack names each package it made: "CPack: - package: PATH generated."
packages=$(sed -n 's/^CPack: - package: \(.*\) generated\.$/\1/p' "$log")
[ -n "$packages" ] || die "cpack made no package (log: $log)"
echo "$packages"
