#!/usr/bin/env bash
# Builds pltrun's wheel and sdist into build-wheel/dist (or $PLTRUN_WHEEL_OUT/dist):
#
#   bash scripts/package/wheel.sh
#
# The sdist is made from this checkout (lib/python/backend/pltrun_build.py); the wheel is
# then built from that sdist by pip, as a user's `pip wheel pltrun-VERSION.tar.gz` would,
# in the Debian bullseye chroot of scripts/package/wheel-chroot.sh (glibc 2.31, g++ 10, the
# libraries compiled in). Last, scripts/check/wheel_tag.py proves that every ELF file in it
# keeps to its manylinux tag. docs/PACKAGING.md says why it is made so. Needs root (the
# chroot); the first run builds the chroot (about a minute) and compiles everything (about
# 5 minutes on 2 cores); later ones take what ccache kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${PLTRUN_WHEEL_OUT:-build-wheel}
mkdir -p "$out"
out=$(cd "$out" && pwd -P)
cache=${PLTRUN_WHEEL_CCACHE:-/var/cache/pltrun/ccache-wheel}
bash scripts/package/wheel-chroot.sh ensure
rm -rf "$out/dist" "$out/tmp"
mkdir -p "$out/dist" "$out/tmp" "$cache"
sdist=$(/usr/bin/python3 lib/python/backend/pltrun_build.py sdist "$out/dist")
echo "wheel: $sdist" >&2
# pip unpacks the sdist into TMPDIR and builds there, in a directory of a new name each
# time: ccache's base directory makes its paths relative, so the cache still hits. CC and
# CXX by name: CMake then takes them from PATH, where /usr/lib/ccache comes first.
bash scripts/package/wheel-chroot.sh run --bind "$out" --bind "$cache" -- \
  env TMPDIR="$out/tmp" CC=gcc CXX=g++ CCACHE_DIR="$cache" CCACHE_BASEDIR="$out/tmp" CCACHE_NOHASHDIR=1 \
  PLTRUN_WHEEL_DEPS=/opt/pltrun-deps PLTRUN_WHEEL_PLATFORM_TAG=manylinux_2_28_x86_64 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  pip3 wheel --no-deps --no-build-isolation --no-index --wheel-dir "$out/dist" "$sdist" >&2
rm -rf "$out/tmp"
wheel=$(ls "$out"/dist/pltrun-*.whl)
/usr/bin/python3 scripts/check/wheel_tag.py "$wheel" >&2
echo "$wheel"
