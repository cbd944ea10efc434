#!/usr/bin/env bash
# The package test's upgrade, inside a fresh clean bookworm chroot (run_package_test.sh runs
# it through scripts/package/chroot.sh): the previous release's packages (OpenSSL static,
# libraries in /usr/lib, no /etc/pltrun.toml; scripts/package/previous.sh) installed with
# apt, then upgraded to this build's, as an admin would:
#   1. untouched: the new version is installed, nothing is left at the old paths (every
#      path the old packages held and the new ones do not is gone), libpltrun is found in
#      the multiarch directory, the commented /etc/pltrun.toml is there as a conffile, and
#      a 2-worker job runs, and so does a program built against the previous libpltrun;
#   2. an admin's own /etc/pltrun.toml (written for the old release, which read it but
#      shipped none) and an edited /etc/default/pltrun-store: with --force-confold (what
#      unattended upgrades use) both are kept as the admin wrote them, the shipped
#      example lands beside as /etc/pltrun.toml.dpkg-dist, and the admin's settings reach
#      the workers;
# then a purge leaves no file of either release and the package set as before.
#
# Usage: upgrade_in_chroot.sh OLD_DEB_DIR NEW_DEB_DIR SOURCE_COPY
# shellcheck disable=SC2016 # the workers' sh expands $TORCHELASTIC_MAX_RESTARTS
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 OLD_DEB_DIR NEW_DEB_DIR SOURCE_COPY" >&2; exit 2; }
old_dir=$1
new_dir=$2
source_copy=$3
work=$(mktemp -d /tmp/upgrade-test.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
fail() {
  echo "upgrade test FAILED (in the chroot): $*" >&2
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

old_debs=("$old_dir"/pltrun_*.deb "$old_dir"/pltrun-dev_*.deb)
new_debs=("$new_dir"/pltrun_*.deb "$new_dir"/pltrun-dev_*.deb)
old_version=$(dpkg-deb -f "${old_debs[0]}" Version)
new_version=$(dpkg-deb -f "${new_debs[0]}" Version)
dpkg --compare-versions "$new_version" gt "$old_version" || fail "$new_version is not newer than $old_version"

# apt_install LOG DEB... [apt option...]: with no network (the dependencies come from the
# cached chroot's apt cache).
apt_install() {
  local log=$1
  shift
  if ! unshare --net -- apt-get install -y -q --no-install-recommends "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "apt-get install $* failed"
  fi
  grep -E '^(Setting up|Unpacking|Preparing to unpack) ' "$log" | sed 's/^/   /'
}
install_old() {
  step "apt-get install the previous release, $old_version: $(basename -a "${old_debs[@]}" | tr '\n' ' ')"
  apt_install "$work/apt-old.log" "${old_debs[@]}"
  [ "$(dpkg-query -W -f '${Version}' pltrun)" = "$old_version" ] || fail "pltrun $old_version is not installed"
  dpkg -L pltrun pltrun-dev | LC_ALL=C sort -u >"$work/old.files"
}
# A 2-worker job of tests/package/check_rank.sh.
run_job() {
  local out=$work/job.out
  (cd "$work" && timeout -k 10 60 pltrun --nproc-per-node 2 "$source_copy/tests/package/check_rank.sh") >"$out" 2>&1 ||
    { cat "$out" >&2; fail "the 2-worker job failed after the upgrade"; }
  [ "$(grep -cE 'worker rank=[01] world=2 pid=' "$out")" = 2 ] || { cat "$out" >&2; fail "not 2 ranks"; }
  echo "   2-worker job: $(grep -oE 'worker rank=[01] world=2' "$out" | tr '\n' ' ')"
}

dpkg-query -W -f '${Package} ${Version}\n' | sort >"$work/packages.before"

# --- 1. an untouched upgrade --------------------------------------------------------------
install_old
# A program built against the previous release's libpltrun (its pkg-config file in
# /usr/lib/pkgconfig), which must run on the upgraded library, now in the multiarch directory.
cat >"$work/joined.c" <<'C'
#include <pltrun/pltrun.h>
#include <stdio.h>
int main(void) {
  pltrun_group* group;
  pltrun_context context;
  if (pltrun_group_join(&group) != PLTRUN_OK || pltrun_group_context(group, &context) != PLTRUN_OK ||
      pltrun_barrier(group, 30000) != PLTRUN_OK) {
    fprintf(stderr, "joined: %s\n", pltrun_last_error());
    return 1;
  }
  printf("joined rank=%d world=%d\n", context.rank, context.world_size);
  pltrun_group_free(group);
  return 0;
}
C
# shellcheck disable=SC2046 # pkg-config's words
cc -o "$work/joined" "$work/joined.c" $(pkg-config --cflags --libs pltrun) || fail "building against $old_version's libpltrun"
echo "   built $work/joined against $(pkg-config --variable=libdir pltrun)/libpltrun.so ($old_version)"
step "upgrade to $new_version: apt-get install $(basename -a "${new_debs[@]}" | tr '\n' ' ')"
apt_install "$work/apt-new.log" "${new_debs[@]}"
for package in pltrun pltrun-dev; do
  [ "$(dpkg-query -W -f '${Version}' "$package")" = "$new_version" ] || fail "$package is not at $new_version"
done
dpkg --verify pltrun pltrun-dev || fail "dpkg --verify after the upgrade (above)"
dpkg -L pltrun pltrun-dev | LC_ALL=C sort -u >"$work/new.files"
LC_ALL=C comm -23 "$work/old.files" "$work/new.files" >"$work/gone.files"  # the paths only the old release had
left=$(still_there "$work/gone.files")
[ -z "$left" ] || fail "the upgrade left files of the previous release: $(tr '\n' ' ' <<<"$left")"
moved=$(wc -l <"$work/gone.files")
for old_path in /usr/lib/libpltrun.so.0.1 /usr/lib/libpltrun.so /usr/lib/cmake/pltrun /usr/lib/pkgconfig/pltrun.pc; do
  [ ! -e "$old_path" ] || fail "$old_path is still there"
done
echo "   $moved paths of $old_version are not in $new_version, and none of them is left"
ldconfig_knows -E 'libpltrun\.so\.0\.1 .*=> /(usr/)?lib/[a-z0-9_]+-linux-gnu[a-z0-9_]*/libpltrun\.so\.0\.1$' ||
  fail "ldconfig does not find libpltrun.so.0.1 in the multiarch directory: $(ldconfig -p | grep pltrun)"
ldconfig_knows '=> /usr/lib/libpltrun' && fail "ldconfig still knows /usr/lib/libpltrun: $(ldconfig -p | grep pltrun)"
# The shared libssl.so.3, linked (NEEDED), and every other library the upgraded pltrun
# needs: the new packages' Depends brought what the old ones did not.
libraries=$(ldd /usr/bin/pltrun)
grep -q 'not found' <<<"$libraries" && fail "the upgraded pltrun misses a shared library: $(grep 'not found' <<<"$libraries")"
ssl=$(awk '$1 == "libssl.so.3" && $2 == "=>" {print $3}' <<<"$libraries")
[ -n "$ssl" ] || fail "the upgraded pltrun does not load the shared libssl.so.3: $libraries"
echo "   $(ldconfig -p | grep 'libpltrun\.so\.0\.1' | sed 's/^[[:space:]]*//'); pltrun loads $ssl"
bash "$source_copy/tests/package/check_site_config.sh" "$work" || fail "/etc/pltrun.toml after the upgrade"
run_job
out=$work/joined.out
(cd "$work" && timeout -k 10 60 pltrun --no-prefix --nproc-per-node 2 "$work/joined") >"$out" 2>&1 ||
  { cat "$out" >&2; fail "the program built against $old_version's libpltrun failed on $new_version's"; }
[ "$(grep -cE '^joined rank=[01] world=2$' "$out")" = 2 ] || { cat "$out" >&2; fail "the program's 2 ranks did not join"; }
echo "   the program built against $old_version joined its 2 ranks with $new_version's library: $(ldd "$work/joined" | awk '/libpltrun/ {print $3}')"

step "apt-get purge pltrun pltrun-dev"
unshare --net -- apt-get purge -y -q pltrun pltrun-dev >"$work/apt-purge.log" 2>&1 ||
  { cat "$work/apt-purge.log" >&2; fail "apt-get purge failed"; }

# --- 2. an admin's own files --------------------------------------------------------------
install_old
step "an admin's /etc/pltrun.toml (max-restarts = 2) and an edited /etc/default/pltrun-store"
printf '# written by the admin for %s\nmax-restarts = 2\n' "$old_version" >/etc/pltrun.toml
echo '# the admin was here' >>/etc/default/pltrun-store
cp /etc/pltrun.toml "$work/admin.toml"
cp /etc/default/pltrun-store "$work/admin.default"
step "upgrade to $new_version with --force-confold --force-confdef"
apt_install "$work/apt-new.log" -o Dpkg::Options::=--force-confold -o Dpkg::Options::=--force-confdef "${new_debs[@]}"
[ "$(dpkg-query -W -f '${Version}' pltrun)" = "$new_version" ] || fail "pltrun is not at $new_version"
cmp -s /etc/pltrun.toml "$work/admin.toml" || fail "the upgrade changed the admin's /etc/pltrun.toml: $(cat /etc/pltrun.toml)"
cmp -s /etc/default/pltrun-store "$work/admin.default" || fail "the upgrade changed the admin's /etc/default/pltrun-store"
[ -f /etc/pltrun.toml.dpkg-dist ] || fail "the shipped /etc/pltrun.toml is not beside the admin's as .dpkg-dist"
grep -q '^#max-restarts = 3$' /etc/pltrun.toml.dpkg-dist || fail "/etc/pltrun.toml.dpkg-dist is not the shipped example"
out=$work/admin.out
(cd "$work" && timeout -k 10 60 pltrun -q --no-prefix --nproc-per-node 1 sh -c 'echo "restarts=$TORCHELASTIC_MAX_RESTARTS"') \
  >"$out" 2>&1 || { cat "$out" >&2; fail "a job with the admin's /etc/pltrun.toml failed"; }
grep -qx 'restarts=2' "$out" || { cat "$out" >&2; fail "the admin's max-restarts = 2 did not reach the worker"; }
echo "   kept: the admin's /etc/pltrun.toml (its max-restarts = 2 reaches the workers) and /etc/default/pltrun-store;"
echo "   the example is /etc/pltrun.toml.dpkg-dist"
run_job

# --- purge --------------------------------------------------------------------------------
step "apt-get purge --autoremove pltrun pltrun-dev"
unshare --net -- apt-get purge -y -q --autoremove pltrun pltrun-dev >"$work/apt-purge.log" 2>&1 ||
  { cat "$work/apt-purge.log" >&2; fail "apt-get purge failed"; }
dpkg-query -W -f '${Package} ${Version}\n' | sort >"$work/packages.after"
diff "$work/packages.before" "$work/packages.after" >&2 || fail "the installed packages differ from before (above)"
for path in /etc/pltrun.toml /etc/pltrun.toml.dpkg-dist /etc/default/pltrun-store /usr/bin/pltrun; do
  [ ! -e "$path" ] || fail "the purge left $path"
done
LC_ALL=C sort -u "$work/old.files" "$work/new.files" >"$work/all.files"
left=$(still_there "$work/all.files")
[ -z "$left" ] || fail "the purge left files of the packages: $(tr '\n' ' ' <<<"$left")"
echo "   every file of both releases is gone, and the package set is as before"
echo "upgrade test in the chroot passed"
