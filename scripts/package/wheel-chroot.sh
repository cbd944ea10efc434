#!/usr/bin/env bash
# The Debian bullseye chroot that builds pltrun's wheel (scripts/package/wheel.sh), built
# once and cached. Its glibc 2.31 is the oldest a build here can link against (bullseye is
# the oldest suite the mirror still serves), and what a binary links against is the oldest
# glibc it can run on: the wheel's manylinux tag follows from it (docs/PACKAGING.md).
#
#   scripts/package/wheel-chroot.sh ensure     build the chroot once (minutes), then instant
#   scripts/package/wheel-chroot.sh ready      exit 0 when the chroot is built, 1 otherwise
#   scripts/package/wheel-chroot.sh path       print the chroot's directory
#   scripts/package/wheel-chroot.sh run [--bind HOSTDIR]... [--] CMD...
#
# The chroot has bullseye's compiler (g++ 10), cmake 3.18, python3 3.9 with pip (which
# builds the wheel from the sdist, as any user's pip would) and ccache. The libraries
# pltrun compiles in come from bookworm, the suite pltrun is developed on: the -dev
# packages below are downloaded by the host's apt and unpacked into /opt/pltrun-deps of
# the chroot (only their headers, CMake files and static archives are used; none is
# installed, so bullseye's own system stays as it was). Changing the lists rebuilds it.
#
# It lives in ${PLTRUN_WHEEL_ROOT:-/var/cache/pltrun/bullseye-wheel}; its mirror is
# ${PLTRUN_WHEEL_MIRROR}, or else the Debian mirror this machine's apt sources name.
# Needs root (debootstrap, chroot, mount); scripts/chroot/common.sh holds the machinery.
# shellcheck disable=SC2034,SC2154 # chroot_tag, unset_vars, chroot_path: read by ../chroot/common.sh; chroot_url and chroot_started: set by it
set -euo pipefail

root=${PLTRUN_WHEEL_ROOT:-/var/cache/pltrun/bullseye-wheel}
root=${root%/}
stamp="$root/.pltrun-wheel-chroot.stamp"
installed=(g++ cmake make pkg-config python3 python3-pip ccache git)
bookworm_dev=(libboost1.81-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libssl-dev)
unset_vars=(LD_LIBRARY_PATH LD_PRELOAD PKG_CONFIG_PATH CMAKE_PREFIX_PATH CC CXX CFLAGS CXXFLAGS LDFLAGS PYTHONPATH VIRTUAL_ENV)
chroot_path=/usr/lib/ccache:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
packages_line="installed ${installed[*]}; bookworm ${bookworm_dev[*]}"

chroot_tag=wheel-chroot
# shellcheck source=../chroot/common.sh
. "$(dirname "$0")/../chroot/common.sh"

# The bookworm -dev packages, fetched by the host's apt (a bookworm system: its sources
# name the mirror) and unpacked under $root/opt/pltrun-deps, their /usr made the prefix.
unpack_bookworm_dev() {
  local debs
  debs=$(mktemp -d)
  say "apt-get download ${bookworm_dev[*]}"
  (cd "$debs" && apt-get download -q "${bookworm_dev[@]}") >>"$root.apt.log" 2>&1 ||
    die "apt-get download failed (log: $root.apt.log; run apt-get update?)"
  local deb unpacked=$root/opt/pltrun-deps.unpacked
  mkdir -p "$unpacked"
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$unpacked"; done
  rm -rf "$debs" "$root/opt/pltrun-deps"
  mv "$unpacked/usr" "$root/opt/pltrun-deps"
  rm -rf "$unpacked"
}

build() {
  chroot_build_base bullseye "${PLTRUN_WHEEL_MIRROR:-}"
  chroot_apt_install "${installed[@]}"
  unpack_bookworm_dev
  chroot_finish_listed_build
}

chroot_main "$@"
