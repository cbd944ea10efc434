# shellcheck shell=bash disable=SC2154 # root, stamp, chroot_tag, ...: the sourcing script's
# Debian chroots for the tests, built once by debootstrap and cached: the pieces that
# scripts/chroot/torch.sh (torch 2.x) and scripts/package/chroot.sh (a clean
# bookworm for the Debian package) share. Sourced, never run.
#
# The sourcing script sets, before calling anything here:
#   root        the chroot's directory (no trailing /)
#   stamp       the file that marks it built
#   chroot_tag  the prefix of messages ("trixie-chroot")
#   chroot_path PATH inside the chroot
#   unset_vars  environment variables to drop before entering (host paths)
# and may set:
#   chroot_self        how to re-run the script (default: "$0"; a script with a leading
#                      argument, such as chroot/torch.sh's SUITE, adds it)
#   debootstrap_script debootstrap's script for the suite, when its own has none
#   apt_update_options options of the chroot's `apt-get update` (an array)
#                      (chroot_suite_settings SUITE sets both as each suite needs them)
#   packages_line      what the chroot is built from (its package lists), the stamp's
#                      first line: chroot_drop_stale_stamp and chroot_ready compare it
# defines build (makes the chroot and writes $stamp), keeps its usage in lines 6 to 9 of
# its header, and dispatches the hidden subcommand `__inner ARGS...` to chroot_inner "$@"
# (chroot_run re-runs the script so, inside a private mount namespace): chroot_main does
# that with the other subcommands.
#
# Mounts (/proc, /dev, /dev/shm, /dev/pts, each --bind HOSTDIR) are made in a private mount
# namespace (unshare -m), so concurrent runs do not disturb each other and nothing is left
# mounted even if the script is killed; an EXIT trap unmounts them too. Needs root.

if [ -z "${chroot_self+set}" ]; then chroot_self=("$0"); fi
say() { echo "$chroot_tag: $*" >&2; }
die() { say "error: $*"; exit 2; }

# The script's own usage: lines 6 to 9 of its header.
usage() {
  sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

need_root() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot and mount need it)"
}

# The Debian mirror: $1 when not empty, else the first .../debian URI in apt's sources
# (deb822 "URIs:" or one-line "deb URI ..."), else deb.debian.org.
chroot_mirror() {
  if [ -n "${1:-}" ]; then echo "$1"; return; fi
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

# debootstrap --variant=minbase SUITE from MIRROR into $root (removing a half-built one
# first), with a policy-rc.d that keeps any service from starting in the chroot.
chroot_debootstrap() {
  local suite=$1 url=$2 started
  started=$(date +%s)
  if [ -e "$root" ]; then
    say "removing half-built chroot $root (no stamp)"
    unmount_all_under "$root"
    rm -rf --one-file-system "$root"
  fi
  mkdir -p "$(dirname "$root")"
  say "debootstrap --variant=minbase $suite $root $url"
  if ! debootstrap --variant=minbase "$suite" "$root" "$url" ${debootstrap_script:+"$debootstrap_script"} >"$root.debootstrap.log" 2>&1; then
    tail -n 30 "$root.debootstrap.log" >&2 || true
    die "debootstrap failed (log: $root.debootstrap.log)"
  fi
  say "debootstrap done after $(($(date +%s) - started)) s"
  : >"$root.apt.log"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
}

# The start of every build: debootstrap SUITE from the mirror ($2 when not empty, else
# apt's), then /proc and /dev mounted for the build's apt-get and checks, until
# unmount_recorded (an EXIT trap does it too). Sets chroot_url and chroot_started.
chroot_build_base() {
  # shellcheck disable=SC2034 # read by the caller's build
  chroot_url=$(chroot_mirror "${2:-}")
  # shellcheck disable=SC2034 # read by the caller's build
  chroot_started=$(date +%s)
  chroot_debootstrap "$1" "$chroot_url"
  prepare_etc
  trap unmount_recorded EXIT
  mount_basics
}

# apt-get in the chroot (mounted by chroot_build_base), its output added to
# $root.apt.log: `update`, then `install -y -q --no-install-recommends ARGS...`, then
# `clean` unless ARGS hold --download-only (whose downloads must stay in apt's cache).
chroot_apt_install() {
  say "apt-get install --no-install-recommends $*"
  local -a env_cmd=(env -i PATH="$chroot_path" HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
  local -a clean=(apt-get clean)
  case " $* " in *" --download-only "*) clean=(true) ;; esac
  if ! { chroot "$root" "${env_cmd[@]}" apt-get ${apt_update_options[@]+"${apt_update_options[@]}"} update -q &&
    chroot "$root" "${env_cmd[@]}" apt-get install -y -q --no-install-recommends "$@" &&
    chroot "$root" "${env_cmd[@]}" "${clean[@]}"; } >>"$root.apt.log" 2>&1; then
    tail -n 30 "$root.apt.log" >&2 || true
    die "apt-get in the chroot failed (log: $root.apt.log)"
  fi
}

# Builds the chroot (the caller's build) unless $stamp says it is built; installs
# debootstrap when missing. One builder at a time; whoever waited finds the stamp.
chroot_ensure() {
  if [ -f "$stamp" ]; then return 0; fi
  need_root
  if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends debootstrap >&2
  fi
  mkdir -p "$(dirname "$root")"
  exec 9>"$root.lock"
  if ! flock -n 9; then
    say "another build holds $root.lock; waiting"
    flock 9
  fi
  if [ -f "$stamp" ]; then return 0; fi
  build
}

# A chroot built from other package lists than $packages_line (its stamp's first line) is
# rebuilt: the stamp goes, and chroot_ensure builds it again.
chroot_drop_stale_stamp() {
  if [ -f "$stamp" ] && [ "$(head -n1 "$stamp")" != "$packages_line" ]; then
    need_root
    say "the package lists changed since $root was built: rebuilding it"
    rm -f "$stamp"
  fi
}

# The end of the build of a script whose stamp starts with $packages_line: unmounts, drops
# apt's lists unless --keep-apt-lists, and writes the stamp (the lists, then each LINE, the
# mirror and the time), which marks the chroot built.
chroot_finish_listed_build() {
  local keep_lists=0
  if [ "${1:-}" = --keep-apt-lists ]; then keep_lists=1; shift; fi
  unmount_recorded
  trap - EXIT
  [ "$keep_lists" = 1 ] || rm -rf "$root/var/lib/apt/lists/"* 2>/dev/null || true
  {
    printf '%s\n' "$packages_line" "$@"
    printf 'mirror %s\nbuilt %s\n' "$chroot_url" "$(date -u +%FT%TZ)"
  } >"$stamp"
  say "ready: $root after $(($(date +%s) - chroot_started)) s${*:+ ($*)}"
}

# Exit status 0 when the chroot is built, from the current $packages_line.
chroot_ready() {
  [ -f "$stamp" ] && [ "$(head -n1 "$stamp")" = "$packages_line" ]
}

# Debootstrap's script and apt's options for SUITE: a suite after trixie (forky) has no
# debootstrap script of bookworm's own; sid's fits, as it does for every suite after trixie.
# The testing suite's Release file may be served past its Valid-Until date by the mirror
# (seen here: 20 days); a test chroot takes it rather than none at all.
chroot_suite_settings() {
  # shellcheck disable=SC2034 # read by chroot_debootstrap and chroot_apt_install
  case "$1" in
    forky) debootstrap_script=/usr/share/debootstrap/scripts/sid apt_update_options=(-o Acquire::Check-Valid-Until=false) ;;
    *) debootstrap_script='' apt_update_options=() ;;
  esac
}

# The subcommands of a script whose stamp starts with $packages_line: ensure, ready, path,
# run (in a fresh copy with --fresh first) and the hidden __inner.
chroot_main() {
  local -a run_options=()
  if [ "${1:-}" = --fresh ]; then run_options=(--fresh); shift; fi
  case "${1:-}" in
    ensure) shift; [ $# -eq 0 ] || usage; chroot_drop_stale_stamp; chroot_ensure ;;
    ready) chroot_ready ;;
    path) echo "$root" ;;
    run) shift; chroot_run ${run_options[@]+"${run_options[@]}"} "$@" ;;
    __inner) shift; chroot_inner "$@" ;;
    *) usage ;;
  esac
}

# chroot_run [--fresh] [--bind HOSTDIR]... [--] CMD...: CMD in the chroot, as root, from
# the caller's directory when it is bound, else from /. --fresh: in a throwaway copy (an
# overlay over the chroot, its writes in a tmpfs that vanishes with the run), and any
# process still in that copy when CMD ends is killed and fails the run (status 3).
chroot_run() {
  local fresh=0
  local -a binds=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --fresh) fresh=1; shift ;;
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
  exec unshare -m --propagation private -- bash "${chroot_self[@]}" __inner "$fresh" ${bind_args[@]+"${bind_args[@]}"} -- "$@"
}

# The throwaway copy for --fresh: an overlay of $root whose upper layer is a tmpfs on a
# fresh directory; $root then names the copy. Only in chroot_inner's namespace.
mount_fresh_copy() {
  local layers
  layers=$(mktemp -d "${TMPDIR:-/tmp}/pltrun-chroot.XXXXXX")
  fresh_layers=$layers
  mount -t tmpfs -o mode=0755 tmpfs "$layers" || die "cannot mount a tmpfs on $layers"
  mounted+=("$layers")
  mkdir "$layers/upper" "$layers/work" "$layers/root"
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$layers/upper,workdir=$layers/work" "$layers/root" ||
    die "cannot mount an overlay of $root"
  mounted+=("$layers/root")
  root=$layers/root
}

# Processes whose root directory is the chroot, as "PID (NAME)" words.
processes_in_chroot() {
  local dir pid
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [ "$(readlink "$dir/root" 2>/dev/null)" = "$root" ] || continue
    echo "$pid ($(cat "$dir/comm" 2>/dev/null))"
  done
}

# Kills (by pid) what CMD left in a fresh copy; returns 1 when there was any.
reap_fresh_copy() {
  local left
  left=$(processes_in_chroot)
  [ -z "$left" ] && return 0
  say "error: processes left in the chroot after the command: $(echo "$left" | tr '\n' ' ')"
  local pid
  while read -r pid _; do kill -KILL "$pid" 2>/dev/null || true; done <<<"$left"
  local _
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ -z "$(processes_in_chroot)" ] && break
    sleep 0.2
  done
  return 1
}

# Runs inside `unshare -m`: mounts, chroots, unmounts, returns the command's exit status.
chroot_inner() {
  local fresh=$1
  shift
  local -a binds=()
  while [ "$1" != "--" ]; do binds+=("$2"); shift 2; done
  shift
  fresh_layers=
  trap 'unmount_recorded; [ -z "$fresh_layers" ] || rmdir "$fresh_layers" 2>/dev/null || true' EXIT
  [ "$fresh" = 1 ] && mount_fresh_copy
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
  local status=0 child input
  # The caller's standard input as a copy, not reopened by name: /dev/stdin cannot be
  # reopened when it is a socket (pltrun's --preload zygote reads its code from one). A
  # closed standard input (a CI runner's) cannot be handed on: the command reads nothing.
  if [ -e /proc/self/fd/0 ]; then exec {input}<&0; else exec {input}</dev/null; fi
  # shellcheck disable=SC2016 # $0 and $@ expand in the chroot's sh
  PATH=$chroot_path HOME=/root LANG=C.UTF-8 \
    chroot "$root" /bin/sh -c 'cd "$0" && exec "$@"' "$cwd" "$@" <&"$input" &
  child=$!
  exec {input}<&-
  trap 'kill -TERM "$child" 2>/dev/null || true' TERM INT HUP
  while :; do
    status=0
    wait "$child" || status=$?
    kill -0 "$child" 2>/dev/null || break
  done
  if [ "$fresh" = 1 ] && ! reap_fresh_copy && [ "$status" = 0 ]; then status=3; fi
  return "$status"
}
