#!/usr/bin/env bash
# What the demo and the test command install on a fresh Debian bookworm, the figures of
# README.md's "Try it / develop" (issue 48): package count, download and installed size.
#
#   scripts/deps/measure.sh            the figures, for the package lists of this tree
#   scripts/deps/measure.sh PACKAGE... the figures for these packages instead
#
# In a fresh copy of a clean bookworm (debootstrap's minbase with apt's sources of a
# bookworm machine: bookworm, -updates, -security; built once, about a minute, cached in
# /var/cache/pltrun/bookworm-fresh), apt-get update, then for each command apt's plan of
# `apt-get install --no-install-recommends` of its packages (scripts/deps/apt-plan.sh):
# nothing is downloaded or installed, and the copy vanishes. Needs root.
# shellcheck disable=SC2034,SC2154 # chroot_tag, unset_vars, chroot_path: read by ../chroot/common.sh; chroot_url, chroot_started: set by it
set -euo pipefail

root=${PLTRUN_CHROOT_DIR:-/var/cache/pltrun}
root=${root%/}/bookworm-fresh
stamp="$root/.pltrun-bookworm-fresh.stamp"
packages_line="installed nothing: debootstrap's minbase; sources bookworm bookworm-updates bookworm-security"
unset_vars=(LD_LIBRARY_PATH LD_PRELOAD)
chroot_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
chroot_tag=bookworm-fresh
here=$(cd "$(dirname "$0")" && pwd -P)
# shellcheck source=../chroot/common.sh
. "$here/../chroot/common.sh"

build() {
  chroot_build_base bookworm ""
  local mirror=${chroot_url%/}
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
    "$mirror" "$mirror" "$mirror" >"$root/etc/apt/sources.list"
  chroot "$root" apt-get clean
  chroot_finish_listed_build
}

# In the fresh copy: apt's lists, then one line per command.
measure_inner() {
  as_root() { "$@"; }
  # shellcheck source=apt-plan.sh
  . "$here/apt-plan.sh"
  env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  if [ $# -gt 0 ]; then
    echo "$*: $(apt_plan "$@")"
    return
  fi
  local -a demo test
  mapfile -t demo < <(bash "$here/../install-deps.sh" --build-only --list)
  mapfile -t test < <(bash "$here/../install-deps.sh" --with-torch --list)
  echo "bash scripts/demo.sh (install-deps.sh --build-only, ${#demo[@]} named): $(apt_plan "${demo[@]}")"
  echo "bash scripts/test.sh (install-deps.sh --with-torch, ${#test[@]} named): $(apt_plan "${test[@]}")"
}

case "${1:-}" in
  __inner) shift; chroot_inner "$@"; exit ;;
  __measure) shift; measure_inner "$@"; exit ;;
esac
need_root
chroot_drop_stale_stamp
chroot_ensure
repo=$(cd "$here/../.." && pwd -P)
chroot_run --fresh --bind "$repo" -- bash "$repo/scripts/deps/measure.sh" __measure "$@"
