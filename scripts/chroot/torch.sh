#!/usr/bin/env bash
# Builds, caches and runs commands in a Debian chroot that holds that suite's python3-torch
# (CPU), so the tests can run real torch 2.x workers and store clients on a bookworm machine,
# whose own python3-torch is 1.13.
#
#   scripts/chroot/torch.sh SUITE ensure     build the chroot once (minutes), then instant
#   scripts/chroot/torch.sh SUITE ready      exit 0 when the chroot is built with its extras
#   scripts/chroot/torch.sh SUITE path       print the chroot's directory
#   scripts/chroot/torch.sh SUITE run [--bind HOSTDIR]... [--] CMD...
#
# SUITE is one of the Debian suites the tests use:
#   trixie   torch 2.6,  Python 3.13
#   forky    torch 2.14, Python 3.14 (bookworm's debootstrap has no forky script of its own;
#            sid's fits, as it does for every suite after trixie)
# The chroot lives in ${PLTRUN_CHROOT_DIR:-/var/cache/pltrun}/SUITE-torch; its mirror is
# ${PLTRUN_CHROOT_MIRROR}, or else the Debian mirror this machine's apt sources name.
# A chroot is not a network namespace: a server on the host's 127.0.0.1 is reachable from
# inside, and the other way round. Debian's torch 2.x is built without libuv, so TCPStore
# needs use_libuv=False (server and client; tests/torch2/site does it for the tests).
#
# Extras: packages some tests need beyond torch (python3-venv: the wheel tests make venvs,
# tests/wheel/torch_restart_test.py). A chroot built before an extra was added gets it from
# `ensure` (apt-get install --no-install-recommends into the built chroot, lists cleaned as
# the build does), not by a rebuild, which would take a newer torch from the mirror; the
# stamp's "extras" line names what is installed, and `ensure` fails if torch changed.
#
# `run` makes its mounts (/proc, /dev, /dev/shm, /dev/pts, each --bind HOSTDIR) in a
# private mount namespace (unshare -m), so concurrent runs do not disturb each other and
# nothing is left mounted even if the script is killed; an EXIT trap unmounts them too
# (scripts/chroot/common.sh, shared with scripts/package/chroot.sh). Needs root (debootstrap,
# chroot, mount).
# shellcheck disable=SC2034,SC2154 # chroot_tag, unset_vars, chroot_path, chroot_self: read by common.sh; chroot_url and chroot_started: set by it
set -euo pipefail

suite=${1:-}
case "$suite" in
  trixie | forky) ;;
  *)
    sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    echo "chroot/torch.sh: SUITE must be trixie or forky, not '${suite}'" >&2
    exit 2
    ;;
esac
shift

root=${PLTRUN_CHROOT_DIR:-/var/cache/pltrun}
root=${root%/}/$suite-torch
stamp="$root/.pltrun-$suite-torch.stamp"
packages=(python3-torch python3-numpy)
extras=(python3-venv)
extras_line="extras ${extras[*]}"
# Environment variables that would point the chroot's python at host files.
unset_vars=(PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE LD_LIBRARY_PATH LD_PRELOAD VIRTUAL_ENV)
chroot_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# How common.sh re-runs this script (inside its mount namespace).
chroot_self=("$0" "$suite")

chroot_tag=$suite-chroot
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
chroot_suite_settings "$suite"

# After apt-get (the chroot mounted): sets torch_version to the torch that imports there,
# undoes the mounts and removes apt's lists, as every install into the chroot ends.
finish_install() {
  torch_version=$(chroot "$root" env -i PATH="$chroot_path" HOME=/root LANG=C.UTF-8 python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) ||
    die "torch does not import in the chroot"
  unmount_recorded
  trap - EXIT
  rm -rf "$root/var/lib/apt/lists/"* 2>/dev/null || true
}

build() {
  chroot_build_base "$suite" "${PLTRUN_CHROOT_MIRROR:-}"
  chroot_apt_install "${packages[@]}" "${extras[@]}"
  finish_install
  printf 'torch %s\nmirror %s\nbuilt %s\n%s\n' "$torch_version" "$chroot_url" "$(date -u +%FT%TZ)" "$extras_line" >"$stamp"
  say "ready: torch $torch_version in $root after $(($(date +%s) - chroot_started)) s"
}

# Installs the extras into a chroot built without them (see the header), under the build's
# lock: whoever waited finds the stamp's line.
ensure_extras() {
  if grep -qxF "$extras_line" "$stamp"; then return 0; fi
  need_root
  exec 9>"$root.lock"
  flock 9
  if grep -qxF "$extras_line" "$stamp"; then return 0; fi
  local built
  built=$(sed -n 's/^torch //p' "$stamp")
  say "installing ${extras[*]} into the built chroot (torch $built stays)"
  prepare_etc
  trap unmount_recorded EXIT
  mount_basics
  chroot_apt_install "${extras[@]}"
  finish_install
  [ "$torch_version" = "$built" ] || die "installing ${extras[*]} changed torch from $built to $torch_version"
  sed -i '/^extras /d' "$stamp"
  echo "$extras_line" >>"$stamp"
  say "ready: ${extras[*]} installed in $root"
}

case "${1:-}" in
  ensure) shift; [ $# -eq 0 ] || usage; chroot_ensure; ensure_extras ;;
  ready) [ -f "$stamp" ] && grep -qxF "$extras_line" "$stamp" ;;
  path) echo "$root" ;;
  run) shift; chroot_run "$@" ;;
  __inner) shift; chroot_inner "$@" ;;
  *) usage ;;
esac
