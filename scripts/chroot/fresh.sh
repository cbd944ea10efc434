#!/usr/bin/env bash
# A fresh Debian bookworm, as a new machine has it, built once and cached: where
# scripts/deps/measure.sh measures what the demo and the test command install, and where
# they can be tried as a new user would, each time in a throwaway copy.
#
#   scripts/chroot/fresh.sh ensure     build the chroot once (about 2.5 minutes), then instant
#   scripts/chroot/fresh.sh ready      exit 0 when the chroot is built, 1 otherwise
#   scripts/chroot/fresh.sh path       print the chroot's directory
#   scripts/chroot/fresh.sh run [--bind HOSTDIR]... [--] CMD...
#
# The chroot: debootstrap's minbase, with apt's sources of a bookworm machine (bookworm,
# bookworm-updates, bookworm-security) and no package lists: a command run there starts
# with `apt-get update`. Unlike a new machine it has common.sh's refusing policy-rc.d, so that
# nothing installed there starts a service on the host's network (a copy may remove it). `run` runs CMD, as root, in a fresh copy (an overlay whose writes go
# to a tmpfs and vanish with the run), and a process CMD leaves there is killed and fails the
# run (status 3). It lives in ${PLTRUN_CHROOT_DIR:-/var/cache/pltrun}/bookworm-fresh; its
# mirror is ${PLTRUN_CHROOT_MIRROR}, or else the Debian mirror this machine's apt sources
# name. A chroot shares the host's network. Needs root; scripts/chroot/common.sh holds the
# machinery.
# shellcheck disable=SC2034,SC2154 # chroot_tag, unset_vars, chroot_path: read by common.sh; chroot_url, chroot_started: set by it
set -euo pipefail

root=${PLTRUN_CHROOT_DIR:-/var/cache/pltrun}
root=${root%/}/bookworm-fresh
stamp="$root/.pltrun-bookworm-fresh.stamp"
packages_line="installed nothing: debootstrap's minbase; sources bookworm bookworm-updates bookworm-security"
unset_vars=(LD_LIBRARY_PATH LD_PRELOAD PKG_CONFIG_PATH CMAKE_PREFIX_PATH CC CXX CFLAGS CXXFLAGS LDFLAGS)
chroot_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
chroot_tag=fresh-chroot
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

build() {
  chroot_build_base bookworm "${PLTRUN_CHROOT_MIRROR:-}"
  local mirror=${chroot_url%/}
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
    "$mirror" "$mirror" "$mirror" >"$root/etc/apt/sources.list"
  chroot "$root" apt-get clean
  chroot_finish_listed_build
}

chroot_main --fresh "$@"
