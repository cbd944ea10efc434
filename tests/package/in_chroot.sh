#!/usr/bin/env bash
# The package test's part inside a fresh clean bookworm chroot (run_package_test.sh runs it
# through scripts/package/chroot.sh): installs pltrun's .deb files with apt, as on a node,
# uses what they installed, then purges them and checks that nothing of them is left.
#
# Usage: in_chroot.sh DEB_DIR SOURCE_COPY VERSION_LINE
#   DEB_DIR       holds pltrun_*.deb and pltrun-dev_*.deb
#   SOURCE_COPY   a copy of tests/consumer and tests/package (the consumer project)
#   VERSION_LINE  what `pltrun --version` must print: the host build's own line
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 DEB_DIR SOURCE_COPY VERSION_LINE" >&2; exit 2; }
deb_dir=$1
source_copy=$2
version_line=$3
work=$(mktemp -d /tmp/package-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "package test FAILED (in the chroot): $*" >&2
  exit 1
}
# shellcheck source=still_there.sh
. "$source_copy/tests/package/still_there.sh"
step() { echo "== $*"; }
# grep over ldconfig's cache read whole first: `ldconfig -p | grep -q` under pipefail fails
# whenever grep finds its line and exits before ldconfig has written the rest (SIGPIPE).
ldconfig_knows() {
  local cache
  cache=$(ldconfig -p)
  grep -q "$@" <<<"$cache"
}
export DEBIAN_FRONTEND=noninteractive

# --- install -----------------------------------------------------------------------------
dpkg-query -W -f '${Package} ${Version}\n' | sort >"$work/packages.before"
runtime_deb=$(ls "$deb_dir"/pltrun_*.deb)
dev_deb=$(ls "$deb_dir"/pltrun-dev_*.deb)
step "apt-get install $(basename "$runtime_deb") $(basename "$dev_deb"), with no network"
# In a network namespace of its own: the dependencies come from apt's cache in the cached
# chroot (scripts/package/chroot.sh downloads them once), never from the network.
if ! unshare --net -- apt-get install -y -q --no-install-recommends "$runtime_deb" "$dev_deb" >"$work/apt.log" 2>&1; then
  cat "$work/apt.log" >&2
  fail "apt-get install failed; a new dependency must be added to scripts/package/chroot.sh's lists"
fi
grep -E '^(Setting up|Unpacking) ' "$work/apt.log" | sed 's/^/   /'
dpkg --verify pltrun pltrun-dev || fail "dpkg --verify: installed files differ from the packages' md5sums (above)"
dpkg -L pltrun pltrun-dev | LC_ALL=C sort -u >"$work/files"
echo "   $(wc -l <"$work/files") paths"

step "pltrun --version and pltrun-store --version"
[ "$(command -v pltrun)" = /usr/bin/pltrun ] || fail "pltrun is not /usr/bin/pltrun"
actual=$(pltrun --version)
[ "$actual" = "$version_line" ] || fail "pltrun --version printed '$actual', the build prints '$version_line'"
store_version=$(pltrun-store --version)
[ "$store_version" = "pltrun-store ${version_line#pltrun }" ] || fail "pltrun-store --version printed '$store_version'"
echo "   $actual"

step "the system's shared libraries, multiarch library"
# The programs link the system's shared libraries: ldd finds every one the packages' Depends
# (dpkg-shlibdeps) brought into this clean chroot, and OpenSSL's libssl3 and libcrypto3 among
# them, so that its security updates reach pltrun.
multiarch_lib='/(usr/)?lib/[a-z0-9_]+-linux-gnu[a-z0-9_]*'
for program in /usr/bin/pltrun /usr/bin/pltrun-store; do
  libraries=$(ldd "$program")
  if grep -q 'not found' <<<"$libraries"; then
    fail "$program misses a shared library the packages do not depend on: $(grep 'not found' <<<"$libraries")"
  fi
  sonames=libcrypto.so.3
  [ "$program" = /usr/bin/pltrun ] && sonames+=" libssl.so.3"
  for soname in $sonames; do
    grep -qE "^\s*${soname//./\\.} => $multiarch_lib/${soname//./\\.} " <<<"$libraries" ||
      fail "$program does not load the system's $soname: $libraries"
  done
done
echo "   pltrun loads: $(ldd /usr/bin/pltrun | awk '$2 == "=>" {print $1}' | tr '\n' ' ')"
ldconfig_knows -E 'libpltrun\.so\.0\.1 .*=> /(usr/)?lib/[a-z0-9_]+-linux-gnu[a-z0-9_]*/libpltrun\.so\.0\.1$' || fail "ldconfig does not find libpltrun.so.0.1 in the multiarch directory: $(ldconfig -p | grep pltrun)"
echo "   $(ldconfig -p | grep 'libpltrun\.so\.0\.1' | sed 's/^[[:space:]]*//')"

step "man pages and completion"
for page in pltrun pltrun-store pltrun-status; do
  file=/usr/share/man/man1/$page.1.gz
  [ -f "$file" ] || fail "no man page $file"
  gzip -dc "$file" | grep -c '^\.SH OPTIONS' >/dev/null || fail "$file has no OPTIONS section"
done
gzip -dc /usr/share/man/man1/pltrun.1.gz | grep -cF 'nproc\-per\-node' >/dev/null || fail "pltrun(1) does not list --nproc-per-node"
gzip -dc /usr/share/man/man1/pltrun.1.gz | sed -n '/^\.SH FILES/,/^\.SH /p' | grep -qF /etc/pltrun.toml ||
  fail "pltrun(1) has no FILES section naming /etc/pltrun.toml"
gzip -dc /usr/share/man/man1/pltrun-status.1.gz | grep -cF 'rdzv\-endpoint' >/dev/null || fail "pltrun-status(1) does not list --rdzv-endpoint"
gzip -dc /usr/share/man/man5/pltrun.toml.5.gz | grep -q '^\.SH FORMAT' || fail "no pltrun.toml(5)"
# (zsh and fish are not in the chroot: check_debs.sh completes in them on the host.)
bash "$source_copy/tests/package/check_completion.sh" / || fail "completion"

step "/etc/pltrun.toml: a conffile that changes nothing, documenting keys pltrun takes"
bash "$source_copy/tests/package/check_site_config.sh" "$work" || fail "/etc/pltrun.toml"

# --- a 2-worker job ----------------------------------------------------------------------
step "pltrun --nproc-per-node 2 check_rank.sh"
output=$work/job.out
if ! timeout -k 10 60 pltrun --nproc-per-node 2 "$source_copy/tests/package/check_rank.sh" >"$output" 2>&1; then
  cat "$output" >&2
  fail "the 2-worker job failed"
fi
for rank in 0 1; do
  grep -qE "^\[.*\] ?worker rank=$rank world=2 pid=[0-9]+$|^worker rank=$rank world=2 pid=[0-9]+$" "$output" || {
    cat "$output" >&2
    fail "no line from rank $rank"
  }
done
pids=$(sed -nE 's/.*worker rank=[01] world=2 pid=([0-9]+)$/\1/p' "$output" | sort -u)
[ "$(echo "$pids" | wc -l)" = 2 ] || fail "the two ranks did not run as two processes: pids $pids"
for pid in $pids; do
  ! kill -0 "$pid" 2>/dev/null || fail "worker $pid still runs after pltrun returned"
done
sed -nE 's/^.*(worker rank=.*)$/   \1/p' "$output"

# --- the consumer project ----------------------------------------------------------------
step "tests/consumer against the installed package"
bash "$source_copy/tests/consumer/run_consumer_test.sh" --installed /usr /usr/bin/pltrun "$source_copy" ||
  fail "the consumer project"

# --- the store's unit --------------------------------------------------------------------
step "the store's systemd unit, as systemd would start it"
bash "$source_copy/tests/package/check_store_unit.sh" || fail "the store's systemd unit"

# --- purge -------------------------------------------------------------------------------
# As a store host that ran `systemctl enable pltrun-store` (the link it makes): the purge
# must take that along.
enabled=/etc/systemd/system/multi-user.target.wants/pltrun-store.service
mkdir -p "$(dirname "$enabled")"
ln -s /usr/lib/systemd/system/pltrun-store.service "$enabled"
step "apt-get purge --autoremove pltrun pltrun-dev"
if ! apt-get purge -y -q --autoremove pltrun pltrun-dev >"$work/apt.log" 2>&1; then
  cat "$work/apt.log" >&2
  fail "apt-get purge failed"
fi
grep -E '^(Removing|Purging) ' "$work/apt.log" | sed 's/^/   /'
dpkg-query -W -f '${Package} ${Version}\n' | sort >"$work/packages.after"
diff "$work/packages.before" "$work/packages.after" >&2 ||
  fail "the installed packages differ from before the install (above)"
left=$(still_there "$work/files")
[ -z "$left" ] || fail "the purge left files of the packages: $(tr '\n' ' ' <<<"$left")"
[ ! -L "$enabled" ] || fail "the purge left the unit's enabling link $enabled"
echo "   every file of the packages is gone, and the package set is as before"
echo "package test in the chroot passed"
