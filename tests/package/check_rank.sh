#!/bin/sh
# A worker of the package test's 2-worker job (in_chroot.sh): checks the environment pltrun
# gave it, then says who it is.
set -eu
bad() {
  echo "check_rank: $*" >&2
  exit 1
}
[ "${WORLD_SIZE:-}" = 2 ] || bad "WORLD_SIZE is '${WORLD_SIZE:-}', not 2"
case "${RANK:-}" in 0 | 1) ;; *) bad "RANK is '${RANK:-}', not 0 or 1" ;; esac
[ "${LOCAL_RANK:-}" = "$RANK" ] || bad "LOCAL_RANK is '${LOCAL_RANK:-}', not RANK $RANK"
[ "${LOCAL_WORLD_SIZE:-}" = 2 ] || bad "LOCAL_WORLD_SIZE is '${LOCAL_WORLD_SIZE:-}', not 2"
[ "${MASTER_ADDR:-}" = 127.0.0.1 ] || bad "MASTER_ADDR is '${MASTER_ADDR:-}', not 127.0.0.1"
case "${MASTER_PORT:-}" in '' | *[!0-9]*) bad "MASTER_PORT is '${MASTER_PORT:-}', not a port" ;; esac
echo "worker rank=$RANK world=$WORLD_SIZE pid=$$"
