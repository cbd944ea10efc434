#!/usr/bin/env bash
# The installed /etc/pltrun.toml (in_chroot.sh, upgrade_in_chroot.sh): a conffile of the
# pltrun package in which every line is a comment, so that it changes nothing; and what it
# documents is true: every example key (a "#key = value" line) uncommented gives a file
# that the installed pltrun reads and runs a job with, and its values reach the workers.
#
# Usage: check_site_config.sh WORK_DIR   (a scratch directory)
# shellcheck disable=SC2016 # the workers' sh expands $TORCHELASTIC_MAX_RESTARTS
set -euo pipefail

work=$1
file=/etc/pltrun.toml
fail() {
  echo "check_site_config: $*" >&2
  exit 1
}
[ -f "$file" ] || fail "no $file"
dpkg-query -W -f '${Conffiles}\n' pltrun | grep -qE "^ $file [0-9a-f]{32}$" || fail "$file is not a conffile of pltrun"
if grep -nvE '^[[:space:]]*(#.*)?$' "$file"; then fail "$file has lines that are not comments (above)"; fi

# The examples, uncommented.
uncommented=$work/pltrun.toml
sed -nE 's/^#([a-z][a-z0-9_-]*[[:space:]]*=.*)$/\1/p' "$file" >"$uncommented"
keys=$(sed -E 's/[[:space:]]*=.*//' "$uncommented" | tr '\n' ' ')
[ "$(wc -l <"$uncommented")" -ge 5 ] || fail "$file documents fewer than 5 keys: $keys"
grep -qx 'max-restarts = 3' "$uncommented" || fail "$file has no '#max-restarts = 3' example"
# As shipped the file changes nothing: a worker sees pltrun's defaults.
out=$work/site.out
(cd "$work" && timeout -k 10 60 pltrun -q --no-prefix --nproc-per-node 1 \
  sh -c 'echo "restarts=$TORCHELASTIC_MAX_RESTARTS"') >"$out" 2>&1 || { cat "$out" >&2; fail "a job with $file as shipped failed"; }
grep -qx 'restarts=0' "$out" || { cat "$out" >&2; fail "$file as shipped changed --max-restarts"; }
# Uncommented, every key is one pltrun takes (an unknown one fails the launch), and its
# max-restarts reaches the worker. The health-check example names a site's own script: here
# (a throwaway copy of the chroot) one that passes and leaves a mark, so the check is seen to run.
if grep -q '^health-check = "/etc/pltrun/node-check.sh"$' "$uncommented"; then
  mkdir -p /etc/pltrun
  printf '#!/bin/sh\ntouch %s/node-checked\n' "$work" >/etc/pltrun/node-check.sh
  chmod 755 /etc/pltrun/node-check.sh
fi
(cd "$work" && PLTRUN_CONFIG=$uncommented timeout -k 10 60 pltrun --no-prefix --nproc-per-node 1 \
  sh -c 'echo "restarts=$TORCHELASTIC_MAX_RESTARTS"') >"$out" 2>&1 ||
  { cat "$out" >&2; fail "pltrun refused $file's examples uncommented ($keys)"; }
grep -qx 'restarts=3' "$out" || { cat "$out" >&2; fail "the uncommented max-restarts = 3 did not reach the worker"; }
if grep -q '^health-check = ' "$uncommented"; then
  [ -f "$work/node-checked" ] || fail "the uncommented health-check did not run before the job"
fi
echo "   a conffile, all comments; its examples uncommented ($keys) run a job with restarts=3"
