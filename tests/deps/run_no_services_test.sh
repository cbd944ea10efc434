#!/usr/bin/env bash
# scripts/check/no-services.sh and scripts/deps/services.sh (issue 48), for real:
#   check      a snapshot, then the check passes; an etcd member (a daemon of etcd-server's
#              unit) started on loopback fails it, named by pid, as running and as listening,
#              when no harness is named, and passes it when this script is named the harness
#   policy     services_guard_begin puts a refusing policy-rc.d where none is and
#              services_guard_end removes it; an existing one is left as it was (a warning
#              says when it lets services start); a TERM between the two still removes ours
# Usage: run_no_services_test.sh SOURCE_DIR check|policy
set -euo pipefail
source_dir=$1
case_name=$2
work=$(mktemp -d /tmp/pltrun-no-services-XXXXXX)
etcd_pid=
cleanup() {
  if [ -n "$etcd_pid" ]; then kill -TERM "$etcd_pid" 2>/dev/null || true; wait "$etcd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
check() { bash "$source_dir/scripts/check/no-services.sh" "$@"; }

check_case() {
  command -v ss >/dev/null || fail "ss is missing (scripts/install-deps.sh installs iproute2)"
  check --snapshot "$work/before" >/dev/null
  check --since "$work/before" >"$work/clean.out" || fail "the check fails before anything started: $(cat "$work/clean.out")"
  # shellcheck source=../wheel/start_etcd.sh
  . "$source_dir/tests/wheel/start_etcd.sh"
  start_etcd "$work/etcd" || fail "etcd did not start"
  local status=0
  PLTRUN_HARNESS_COMMANDS="" check --since "$work/before" >"$work/stray.out" || status=$?
  cat "$work/stray.out"
  [ "$status" -eq 1 ] || fail "the check passed (status $status) with an etcd no harness started"
  grep -q "FAIL: .*etcd runs (pid $etcd_pid)" "$work/stray.out" || fail "etcd's process (pid $etcd_pid) is not named"
  # shellcheck disable=SC2154 # etcd_endpoint: set by start_etcd
  grep -q "FAIL: .*etcd (pid $etcd_pid) listens on ${etcd_endpoint}" "$work/stray.out" || fail "etcd's listener $etcd_endpoint is not named"
  # This script (bash) as the harness: its etcd is a test's.
  PLTRUN_HARNESS_COMMANDS="ctest bash" check --since "$work/before" >"$work/harness.out" ||
    fail "the check fails on the harness's own etcd: $(cat "$work/harness.out")"
  echo "check: passes clean, fails on a stray etcd (process and listener), passes on a harness's"
}

# The policy's path, in $work rather than /usr/sbin, is the one thing changed.
guard() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  bash -c 'as_root() { "$@"; }; . "$1"; policy_rc=$2; services_guard_begin; eval "$3"; services_guard_end' \
    sh "$source_dir/scripts/deps/services.sh" "$work/policy-rc.d" "$1"
}

policy_case() {
  local inside
  # shellcheck disable=SC2016 # expanded by the inner bash
  inside=$(guard '"$policy_rc" start; echo "refused: $?"')
  [ "$inside" = "refused: 101" ] || fail "the policy during the install: '$inside', not 'refused: 101'"
  [ ! -e "$work/policy-rc.d" ] || fail "the policy is left after the install"
  printf '#!/bin/sh\nexit 0\n' >"$work/policy-rc.d"
  chmod 755 "$work/policy-rc.d"
  guard true >"$work/existing.out"
  [ "$(cat "$work/policy-rc.d")" = "$(printf '#!/bin/sh\nexit 0')" ] || fail "an existing policy was changed"
  grep -q "warning: .* lets services start" "$work/existing.out" || fail "no warning about an existing policy that lets services start"
  rm "$work/policy-rc.d"
  local status=0
  guard 'kill -TERM $$; sleep 5' || status=$?
  [ "$status" -eq 143 ] || fail "a TERM during the install ended it with status $status, not 143"
  [ ! -e "$work/policy-rc.d" ] || fail "the policy is left after a TERM"
  echo "policy: placed, refusing, removed; an existing one kept; removed after a TERM"
}

case "$case_name" in
  check) check_case ;;
  policy) policy_case ;;
  *) fail "unknown case $case_name (check, policy)" ;;
esac
