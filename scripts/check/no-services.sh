#!/usr/bin/env bash
# No service of the packages scripts/install-deps.sh installs runs or is enabled, and none
# of their programs runs or listens on TCP unless a test started it (issue 48). The test
# command takes a snapshot before it installs anything and checks at its end:
#
#   scripts/check/no-services.sh --snapshot FILE   what runs, listens and is enabled now
#   scripts/check/no-services.sh [--since FILE]    the check (without FILE: nothing was before)
#
# Looked at: the systemd units (.service, .socket, .timer, .path) of our packages
# (scripts/deps/packages.sh) and the programs these units start (ExecStart): openssh-server,
# etcd-server, munge, slurmctld, slurmd, ... (systemd's own are the init system's, not a test
# tool's daemon).
# Fails on such a unit enabled, or active where systemd is PID 1, that was not before; on
# such a program running, or listening on TCP (ss -ltnp), that was not running before and
# that no test harness runs (a ctest or a tests/*_tests binary among its ancestors;
# PLTRUN_HARNESS_COMMANDS names other harnesses than ctest, or none). Says
# what it checked and what it could not (no systemd as PID 1: nothing can be active, the
# units' enablement is read from their links on disk).
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { echo "check/no-services: $*"; }
systemd_runs() { [ -d /run/systemd/system ]; }
have_systemctl() { command -v systemctl >/dev/null 2>&1; }

# Every running process as "PID EXE" (processes whose executable cannot be read are left out).
processes() {
  local dir exe
  for dir in /proc/[0-9]*; do
    exe=$(readlink "$dir/exe" 2>/dev/null) || continue
    echo "${dir#/proc/} ${exe% (deleted)}"
  done
}

# TCP listeners as "ADDR:PORT PID" (PID "-" when ss names no process).
listeners() {
  ss -ltnpH 2>/dev/null | awk '{ pid = "-"; if (match($0, /pid=[0-9]+/)) pid = substr($0, RSTART + 4, RLENGTH - 4); print $4, pid }'
}

snapshot() {
  {
    echo "# scripts/check/no-services.sh --snapshot, $(date -u +%FT%TZ)"
    if have_systemctl; then
      systemctl list-unit-files --state=enabled --no-legend --no-pager 2>/dev/null | awk '{print "enabled", $1}'
    fi
    if systemd_runs; then systemctl list-units --state=active --no-legend --no-pager --plain | awk '{print "active", $1}'; fi
    processes | awk '{print "process", $1, $2}'
    if command -v ss >/dev/null 2>&1; then listeners | awk '{print "listen", $1}'; fi
  } >"$1"
  say "snapshot of enabled units, processes and TCP listeners in $1"
}

# Our packages that are installed and ship a systemd unit, except systemd ("grep >/dev/null"
# rather than -q: an early exit of grep would fail dpkg -L's pipe under pipefail).
service_packages() {
  local package
  bash scripts/install-deps.sh --with-torch --list | while read -r package; do
    [ "$package" != systemd ] || continue
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep 'install ok installed' >/dev/null || continue
    if dpkg -L "$package" | grep -E "$unit_file" >/dev/null; then echo "$package"; fi
  done
}
unit_file='/systemd/system/[^/]+\.(service|socket|timer|path)$'

# The programs those units start: the first word of each ExecStart (its prefixes -@:+! off),
# as the kernel names it (symlinks resolved).
unit_programs() {
  sed -n 's/^ExecStart=[-@:+!]*\([^ ]*\).*/\1/p' "$@" | sort -u | while read -r program; do
    readlink -f "$program" || true
  done
}

# Whether PID descends from a test harness: a process named in PLTRUN_HARNESS_COMMANDS
# (ctest; a test of this script names none), or a test binary (.../tests/NAME_tests).
under_harness() {
  local pid=$1 comm exe
  while [ "$pid" -gt 1 ] 2>/dev/null; do
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
    if [[ " $harness_commands " == *" $comm "* || $exe == */tests/*_tests ]]; then return 0; fi
    pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null) || return 1
  done
  return 1
}

before() { grep -qxF "$1" "$since" 2>/dev/null; }
failures=0
failed() { say "FAIL: $*"; failures=$((failures + 1)); }

check_units() {
  local unit state
  if ! have_systemctl; then
    say "no systemctl here: no unit can be enabled or running"
    return
  fi
  if systemd_runs; then
    say "systemd is PID 1: checked each unit with systemctl is-enabled and is-active"
  else
    say "systemd is not PID 1 here (PID 1: $(cat /proc/1/comm)): no unit can be active;" \
      "checked each unit's enablement on disk only (systemctl is-enabled), what a boot with systemd would start"
  fi
  local -a kept=()
  for unit in ${units[@]+"${units[@]}"}; do
    state=$(systemctl is-enabled "$unit" 2>/dev/null || true)
    if [ "$state" = enabled ] && before "enabled $unit"; then
      kept+=("$unit")
    elif [ "$state" = enabled ]; then
      failed "$unit is enabled${since:+ (it was not before our install)}"
    fi
    if systemd_runs && systemctl is-active --quiet "$unit" && ! before "active $unit"; then failed "$unit is active"; fi
  done
  if [ ${#kept[@]} -gt 0 ]; then say "enabled before our install, so left alone: ${kept[*]}"; fi
}

check_processes() {
  local pid exe address
  while read -r pid exe; do
    [ -n "${programs[$exe]:-}" ] || continue
    if before "process $pid $exe" || under_harness "$pid"; then continue; fi
    failed "$exe runs (pid $pid) and no test started it"
  done < <(processes)
}

check_listeners() {
  local pid exe address
  while read -r address pid; do
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
    [ -n "$exe" ] && [ -n "${programs[$exe]:-}" ] || continue
    if before "listen $address" || under_harness "$pid"; then continue; fi
    failed "$exe (pid $pid) listens on $address and no test started it"
  done < <(listeners)
}

check() {
  mapfile -t packages < <(service_packages)
  local -a files
  mapfile -t files < <(for p in "${packages[@]}"; do dpkg -L "$p"; done | grep -E "$unit_file" || true)
  mapfile -t units < <(for f in "${files[@]}"; do basename "$f"; done | sort -u)
  declare -gA programs=()
  local program
  if [ ${#files[@]} -gt 0 ]; then
    while read -r program; do [ -z "$program" ] || programs[$program]=1; done < <(unit_programs "${files[@]}")
  fi
  local started="${!programs[*]}"
  say "our packages with a service: ${packages[*]:-none}; their units: ${units[*]:-none}; the programs these start: ${started:-none}"
  if [ -z "$since" ]; then say "no snapshot from before the install (--since): every enabled unit and running program counts"; fi
  check_units
  check_processes
  if command -v ss >/dev/null 2>&1; then
    check_listeners
    say "checked the running processes and the TCP listeners (ss -ltnp) of those programs"
  else
    say "checked the running processes of those programs; no ss (iproute2) here: TCP listeners not checked"
  fi
  if [ "$failures" -gt 0 ]; then exit 1; fi
  say "no service of our packages is running or newly enabled, and none of their programs runs or listens outside a test"
}

since=""
harness_commands=${PLTRUN_HARNESS_COMMANDS-ctest}
case "${1:-}" in
  --snapshot) [ $# -eq 2 ] || { echo "usage: $0 --snapshot FILE | [--since FILE]" >&2; exit 2; }; snapshot "$2" ;;
  --since) [ $# -eq 2 ] && [ -r "$2" ] || { echo "check/no-services: --since needs a snapshot file ($0 --snapshot FILE makes one)" >&2; exit 2; }; since=$2; check ;;
  "") check ;;
  *) echo "usage: $0 --snapshot FILE | [--since FILE]" >&2; exit 2 ;;
esac
