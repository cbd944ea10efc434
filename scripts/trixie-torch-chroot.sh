#!/usr/bin/env bash
# Builds, caches and runs commands in a Debian trixie chroot that holds Debian's
# python3-torch (torch 2.6, CPU), so the tests can drive a real torch 2.x TCPStore on a
# bookworm machine, whose own python3-torch is 1.13.
#
#   scripts/trixie-torch-chroot.sh ensure     build the chroot once (minutes), then instant
#   scripts/trixie-torch-chroot.sh ready      exit 0 when the chroot is built, 1 otherwise
#   scripts/trixie-torch-chroot.sh path       print the chroot's directory
#   scripts/trixie-torch-chroot.sh run [--bind HOSTDIR]... [--] CMD...
#
# The chroot lives in ${PLTRUN_TRIXIE_ROOT:-/var/cache/pltrun/trixie-torch}; its mirror is
# ${PLTRUN_TRIXIE_MIRROR}, or else the Debian mirror this machine's apt sources name.
# A chroot is not a network namespace: a server on the host's 127.0.0.1 is reachable from
# inside, and the other way round. Torch 2.6 in trixie was built without libuv, so
# TCPStore needs use_libuv=False (server and client).
#
# `run` makes its mounts (/proc, /dev, /dev/shm, /dev/pts, each --bind HOSTDIR) in a
# private mount namespace (unshare -m), so concurrent runs do not disturb each other and
# nothing is left mounted even if the script is killed; an EXIT trap unmounts them too
# (scripts/lib/chroot.sh, shared with scripts/package-chroot.sh). Needs root (debootstrap,
# chroot, mount).
# shellcheck disable=SC2034,SC2154 # chroot_tag, unset_vars, chroot_path: read by lib/chroot.sh; chroot_url and chroot_started: set by it
set -euo pipefail

root=${PLTRUN_TRIXIE_ROOT:-/var/cache/pltrun/trixie-torch}
root=${root%/}
stamp="$root/.pltrun-trixie-torch.stamp"
packages=(python3-torch python3-numpy)
# Environment variables that would point the chroot's python at host files.
unset_vars=(PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE LD_LIBRARY_PATH LD_PRELOAD VIRTUAL_ENV)
chroot_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

chroot_tag=trixie-chroot
# shellcheck source=lib/chroot.sh
. "$(dirname "$0")/lib/chroot.sh"

build() {
  chroot_build_base trixie "${PLTRUN_TRIXIE_MIRROR:-}"
  chroot_apt_install "${packages[@]}"
  local -a env_cmd=(env -i PATH="$chroot_path" HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
  local version
  version=$(chroot "$root" "${env_cmd[@]}" python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) ||
    die "torch does not import in the chroot"
  unmount_recorded
  trap - EXIT
  rm -rf "$root/var/lib/apt/lists/"* 2>/dev/null || true
  printf 'torch %s\nmirror %s\nbuilt %s\n' "$version" "$chroot_url" "$(date -u +%FT%TZ)" >"$stamp"
  say "ready: torch $version in $root after $(($(date +%s) - chroot_started)) s"
}

case "${1:-}" in
  ensure) shift; [ $# -eq 0 ] || usage; chroot_ensure ;;
  ready) [ -f "$stamp" ] ;;
  path) echo "$root" ;;
  run) shift; chroot_run "$@" ;;
  __inner) shift; chroot_inner "$@" ;;
  *) usage ;;
esac
