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
# nothing is left mounted even if the script is killed; an EXIT trap unmounts them too.
# Needs root (debootstrap, chroot, mount).
set -euo pipefail

root=${PLTRUN_TRIXIE_ROOT:-/var/cache/pltrun/trixie-torch}
root=${root%/}
stamp="$root/.pltrun-trixie-torch.stamp"
packages=(python3-torch python3-numpy)
# Environment variables that would point the chroot's python at host files.
unset_vars=(PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE LD_LIBRARY_PATH LD_PRELOAD VIRTUAL_ENV)
chroot_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

say() { echo "trixie-chroot: $*" >&2; }
die() { say "error: $*"; exit 2; }

usage() {
  sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

need_root() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot and mount need it)"
}

# The Debian mirror: PLTRUN_TRIXIE_MIRROR, else the first .../debian URI in apt's sources
# (deb822 "URIs:" or one-line "deb URI ..."), else deb.debian.org.
mirror() {
  if [ -n "${PLTRUN_TRIXIE_MIRROR:-}" ]; then echo "$PLTRUN_TRIXIE_MIRROR"; return; fi
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -v '^[[:space:]]*#' | grep -oE '(https?)://[^[:space:]]+/debian/?([[:space:]]|$)' |
    head -n1 | tr -d '[:space:]' || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

# Unmount everything mounted at or below the chroot (deepest first). A crashed build may
# have left /proc or /dev mounted there; this must happen before any rm -rf.
unmount_all_under() {
  local dir=$1 target
  local -a targets=()
  while read -r target; do
    case "$target" in "$dir" | "$dir"/*) targets+=("$target") ;; esac
  done < <(awk '{print $2}' /proc/self/mounts | sed 's/\\040/ /g')
  local i
  for ((i = ${#targets[@]} - 1; i >= 0; i--)); do
    umount "${targets[i]}" 2>/dev/null || umount -l "${targets[i]}" 2>/dev/null || true
  done
}

# Writes the chroot's /etc/hosts (the host's, plus this machine's name: without it name
# resolution stalls and multiprocessing fails) and /etc/resolv.conf (a plain copy, never
# through a symlink that could point out of the chroot).
prepare_etc() {
  local name tmp
  name=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)
  tmp=$(mktemp "$root/etc/.hosts.XXXXXX")
  if [ -r /etc/hosts ]; then cat /etc/hosts >"$tmp"; else printf '127.0.0.1\tlocalhost\n' >"$tmp"; fi
  if [ -n "$name" ] && ! awk -v n="$name" '!/^[[:space:]]*#/ { for (i = 2; i <= NF; i++) if ($i == n) f = 1 } END { exit !f }' "$tmp"; then
    printf '127.0.0.1\t%s\n' "$name" >>"$tmp"
  fi
  chmod 644 "$tmp"
  mv -f "$tmp" "$root/etc/hosts"
  tmp=$(mktemp "$root/etc/.resolv.XXXXXX")
  if [ -r /etc/resolv.conf ]; then cat /etc/resolv.conf >"$tmp" 2>/dev/null || true; fi
  chmod 644 "$tmp"
  mv -f "$tmp" "$root/etc/resolv.conf"
}

# Mounts /proc, /dev, /dev/shm, /dev/pts into the chroot; records each for unmount_recorded.
mounted=()
mount_basics() {
  mkdir -p "$root/proc" "$root/dev"
  mount -t proc proc "$root/proc" || die "cannot mount /proc in $root"
  mounted+=("$root/proc")
  mount --bind /dev "$root/dev" || die "cannot bind-mount /dev in $root"
  mounted+=("$root/dev")
  local sub
  for sub in shm pts; do
    if mountpoint -q "/dev/$sub" && ! mountpoint -q "$root/dev/$sub"; then
      mkdir -p "$root/dev/$sub" 2>/dev/null || true
      mount --bind "/dev/$sub" "$root/dev/$sub" || die "cannot bind-mount /dev/$sub in $root"
      mounted+=("$root/dev/$sub")
    fi
  done
}
unmount_recorded() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null ||
      say "warning: could not unmount ${mounted[i]}"
  done
  mounted=()
}

build() {
  local url started
  url=$(mirror)
  started=$(date +%s)
  if [ -e "$root" ]; then
    say "removing half-built chroot $root (no stamp)"
    unmount_all_under "$root"
    rm -rf --one-file-system "$root"
  fi
  mkdir -p "$(dirname "$root")"
  say "debootstrap --variant=minbase trixie $root $url"
  if ! debootstrap --variant=minbase trixie "$root" "$url" >"$root.debootstrap.log" 2>&1; then
    tail -n 30 "$root.debootstrap.log" >&2 || true
    die "debootstrap failed (log: $root.debootstrap.log)"
  fi
  say "debootstrap done after $(($(date +%s) - started)) s"
  # Nothing in the chroot may start services.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  prepare_etc
  trap unmount_recorded EXIT
  mount_basics
  say "apt-get install --no-install-recommends ${packages[*]}"
  local -a env_cmd=(env -i PATH="$chroot_path" HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
  if ! { chroot "$root" "${env_cmd[@]}" apt-get update -q &&
    chroot "$root" "${env_cmd[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}" &&
    chroot "$root" "${env_cmd[@]}" apt-get clean; } >"$root.apt.log" 2>&1; then
    tail -n 30 "$root.apt.log" >&2 || true
    die "apt-get in the chroot failed (log: $root.apt.log)"
  fi
  local version
  version=$(chroot "$root" "${env_cmd[@]}" python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) ||
    die "torch does not import in the chroot"
  unmount_recorded
  trap - EXIT
  rm -rf "$root/var/lib/apt/lists/"* 2>/dev/null || true
  printf 'torch %s\nmirror %s\nbuilt %s\n' "$version" "$url" "$(date -u +%FT%TZ)" >"$stamp"
  say "ready: torch $version in $root after $(($(date +%s) - started)) s"
}

ensure() {
  if [ -f "$stamp" ]; then return 0; fi
  need_root
  if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends debootstrap >&2
  fi
  mkdir -p "$(dirname "$root")"
  # One builder at a time; whoever waited finds the stamp and returns.
  exec 9>"$root.lock"
  if ! flock -n 9; then
    say "another build holds $root.lock; waiting"
    flock 9
  fi
  if [ -f "$stamp" ]; then return 0; fi
  build
}

run() {
  local -a binds=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --bind) [ $# -ge 2 ] || die "--bind needs a directory"; binds+=("$2"); shift 2 ;;
      --bind=*) binds+=("${1#--bind=}"); shift ;;
      --) shift; break ;;
      -*) die "unknown option $1" ;;
      *) break ;;
    esac
  done
  [ $# -ge 1 ] || die "run needs a command"
  need_root
  [ -f "$stamp" ] || die "no chroot at $root; run: bash $0 ensure"
  local b
  local -a bind_args=()
  for b in ${binds[@]+"${binds[@]}"}; do
    [ -d "$b" ] || die "--bind $b: not a directory"
    b=$(cd "$b" && pwd -P)
    case "$b" in /) die "--bind /: refusing" ;; esac
    bind_args+=(--bind "$b")
  done
  # A private mount namespace: the mounts vanish with it, whatever happens to us.
  exec unshare -m --propagation private -- bash "$0" __inner ${bind_args[@]+"${bind_args[@]}"} -- "$@"
}

# Runs inside `unshare -m`: mounts, chroots, unmounts, returns the command's exit status.
inner() {
  local -a binds=()
  while [ "$1" != "--" ]; do binds+=("$2"); shift 2; done
  shift
  trap unmount_recorded EXIT
  prepare_etc
  mount_basics
  local b
  for b in ${binds[@]+"${binds[@]}"}; do
    mkdir -p "$root$b"
    mount --bind "$b" "$root$b"
    mounted+=("$root$b")
  done
  # Start where the caller is when that directory is bound; else at /.
  local cwd=/ here
  here=$(pwd -P)
  for b in ${binds[@]+"${binds[@]}"}; do
    case "$here" in "$b" | "$b"/*) cwd=$here ;; esac
  done
  local var
  for var in "${unset_vars[@]}"; do unset "$var"; done
  # The command runs as a child (stdin kept) so that a TERM, INT or HUP sent to this script
  # reaches it, and the mounts are undone when it ends.
  local status=0 child
  # shellcheck disable=SC2016 # $0 and $@ expand in the chroot's sh
  PATH=$chroot_path HOME=/root LANG=C.UTF-8 \
    chroot "$root" /bin/sh -c 'cd "$0" && exec "$@"' "$cwd" "$@" <&0 &
  child=$!
  trap 'kill -TERM "$child" 2>/dev/null || true' TERM INT HUP
  while :; do
    status=0
    wait "$child" || status=$?
    kill -0 "$child" 2>/dev/null || break
  done
  return "$status"
}

case "${1:-}" in
  ensure) shift; [ $# -eq 0 ] || usage; ensure ;;
  ready) [ -f "$stamp" ] ;;
  path) echo "$root" ;;
  run) shift; run "$@" ;;
  __inner) shift; inner "$@" ;;
  *) usage ;;
esac
