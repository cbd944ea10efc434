#!/usr/bin/env bash
# The installed pltrun-store unit (in_chroot.sh), where no systemd runs: the unit and its
# defaults are where systemd reads them, nothing enabled them, and its ExecStart, expanded
# as systemd would (%d the credentials directory, $PLTRUN_STORE_OPTIONS split into words,
# from /etc/default/pltrun-store), runs as an unprivileged user whose copy of the secret
# is its own, mode 0400, as systemd's LoadCredential= makes it. The store then serves a
# client that holds the secret and refuses one that does not. It listens on 127.0.0.1 and
# a free port: the defaults' --host and --port are replaced.
set -euo pipefail

unit=/usr/lib/systemd/system/pltrun-store.service
defaults=/etc/default/pltrun-store
fail() {
  echo "check_store_unit: $*" >&2
  exit 1
}
[ -f "$unit" ] || fail "no $unit"
[ -f "$defaults" ] || fail "no $defaults"
dpkg-query -W -f '${Conffiles}' pltrun | grep -q " $defaults " || fail "$defaults is not a conffile of pltrun"
! ls /etc/systemd/system/*.wants/pltrun-store.service >/dev/null 2>&1 || fail "the package enabled the unit"
grep -qx 'DynamicUser=yes' "$unit" || fail "the unit does not run as a dynamic user"

work=$(mktemp -d /tmp/store-unit.XXXXXX)
store=
cleanup() {
  if [ -n "$store" ]; then kill -KILL "$store" 2>/dev/null || true; wait "$store" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# The secret: root's file, and the credential copy that belongs to the service's user.
(umask 077; head -c 32 /dev/urandom | base64 >"$work/store.secret")
id pltrun-store-test >/dev/null 2>&1 || useradd --system --no-create-home pltrun-store-test
mkdir -p "$work/credentials"
install -o pltrun-store-test -m 0400 "$work/store.secret" "$work/credentials/secret"
chown pltrun-store-test "$work/credentials"
chmod 0500 "$work/credentials"
chmod 0711 "$work"

exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[ -n "$exec_start" ] || fail "no ExecStart= in $unit"
# shellcheck source=/dev/null
PLTRUN_STORE_OPTIONS=$(. "$defaults" && echo "$PLTRUN_STORE_OPTIONS")
options=${PLTRUN_STORE_OPTIONS/--host 0.0.0.0/--host 127.0.0.1}
options=${options/--port 29400/--port 0}
command=${exec_start//%d/$work/credentials}
command=${command//\$PLTRUN_STORE_OPTIONS/$options}
echo "   $command  (as pltrun-store-test)"
read -ra words <<<"$command"
# setpriv execs the store itself (runuser would sit between and end it on SIGTERM).
setpriv --reuid=pltrun-store-test --regid=pltrun-store-test --clear-groups -- "${words[@]}" >"$work/store.out" 2>&1 &
store=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/store.out" && break
  kill -0 "$store" 2>/dev/null || { cat "$work/store.out" >&2; fail "the store exited at start"; }
  sleep 0.1
done
endpoint=$(sed -n 's/^listening on //p' "$work/store.out")
case "$endpoint" in 127.0.0.1:[0-9]*) ;; *) cat "$work/store.out" >&2; fail "the store did not listen on 127.0.0.1" ;; esac
echo "   listening on $endpoint"

# With the secret: the client authenticates and reads the (absent) job's state.
status=0
pltrun status --rdzv-endpoint "$endpoint" --rdzv-id package-test --rdzv-conf "secret_file=$work/store.secret" \
  >"$work/with.out" 2>&1 || status=$?
# The job does not exist: status answers "no such job" (2) from the store, not an error.
if [ "$status" != 2 ] || ! grep -q "^run package-test at $endpoint: no such job" "$work/with.out"; then
  cat "$work/with.out" >&2
  fail "a client with the secret was not served (status $status)"
fi
echo "   with the secret: $(head -n1 "$work/with.out") (status $status)"
# Without it: refused, and the store says why.
if pltrun status --rdzv-endpoint "$endpoint" --rdzv-id package-test >"$work/without.out" 2>&1; then
  cat "$work/without.out" >&2
  fail "a client without the secret was served"
fi
grep -q "requires pltrun's shared-secret authentication" "$work/store.out" || {
  cat "$work/store.out" >&2
  fail "the store did not refuse the client without the secret"
}
echo "   without the secret: refused"

kill -TERM "$store"
status=0
wait "$store" || status=$?
store=
[ "$status" = 0 ] || { cat "$work/store.out" >&2; fail "the store exited $status on SIGTERM"; }
userdel pltrun-store-test
