#!/usr/bin/env bash
# The Debian package as a node meets it (CTest: "package: .deb installs in a clean
# bookworm chroot, runs a 2-worker job and the consumer project, and removes cleanly"):
#   1. scripts/package/deb.sh --no-build packages BUILD_DIR (what CTest tests) into a
#      temporary directory;
#   2. on this machine: the packages' contents and fields (dpkg-deb), lintian (no error or
#      warning), stripped ELF files whose debug symbols gdb finds in pltrun-dbgsym by build
#      id, the zsh and fish completion, the systemd unit (systemd-analyze verify and
#      security);
#   3. in a fresh copy of the clean bookworm chroot (scripts/package/chroot.sh):
#      tests/package/in_chroot.sh installs, uses, purges, and checks nothing is left; the
#      chroot script fails the run if a process is left in the copy;
#   4. in another fresh copy: tests/package/upgrade_in_chroot.sh installs the previous
#      release's packages (scripts/package/previous.sh: built once, cached in
#      /var/cache/pltrun) and upgrades them to these, untouched and with an admin's own
#      configuration files, then purges.
# Exits 77 (CTest's skip) when not root or debootstrap is missing. Removes its temporary
# directory; the cached chroot never changes.
#
# Usage: run_package_test.sh BUILD_DIR SOURCE_DIR PLTRUN_BINARY
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 BUILD_DIR SOURCE_DIR PLTRUN_BINARY" >&2; exit 2; }
build_dir=$1
source_dir=$2
pltrun_binary=$3
here=$(cd "$(dirname "$0")" && pwd)

skip() {
  echo "package test SKIPPED: $*"
  exit 77
}
fail() {
  echo "package test FAILED: $*" >&2
  exit 1
}
step() { echo "== $*"; }

[ "$(id -u)" -eq 0 ] || skip "not root (debootstrap, chroot and mount need it)"
command -v debootstrap >/dev/null || skip "debootstrap is missing (scripts/install-deps.sh installs it)"

work=$(mktemp -d "${TMPDIR:-/tmp}/pltrun-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$(date +%s)

# --- 1. the packages ---------------------------------------------------------------------
step "scripts/package/deb.sh --no-build $build_dir"
bash "$source_dir/scripts/package/deb.sh" --no-build "$build_dir" "$work/debs" >"$work/packages" ||
  fail "scripts/package/deb.sh failed"
ls -l "$work/debs"/*.deb "$work/debs"/*.ddeb | awk '{print "   " $5 "  " $NF}'
version_line=$("$pltrun_binary" --version)

# --- 2. contents, fields, symbols, the unit ----------------------------------------------
bash "$here/check_debs.sh" "$work/debs" "$work/extracted" "$version_line" || fail "the packages' contents"

# --- 3. in a clean chroot ----------------------------------------------------------------
step "scripts/package/chroot.sh ensure"
bash "$source_dir/scripts/package/chroot.sh" ensure || fail "no clean bookworm chroot"
mkdir -p "$work/source/tests"
cp -a "$source_dir/tests/consumer" "$source_dir/tests/package" "$work/source/tests/"
chmod 755 "$work"
step "in a fresh copy of $(bash "$source_dir/scripts/package/chroot.sh" path)"
bash "$source_dir/scripts/package/chroot.sh" run --bind "$work" -- \
  bash "$work/source/tests/package/in_chroot.sh" "$work/debs" "$work/source" "$version_line" ||
  fail "in the chroot (above)"

# --- 4. the upgrade from the previous release ---------------------------------------------
upgrade_started=$(date +%s)
step "scripts/package/previous.sh ensure"
bash "$source_dir/scripts/package/previous.sh" ensure || fail "no packages of the previous release"
previous=$(bash "$source_dir/scripts/package/previous.sh" path)
step "upgrade from $(basename "$(ls "$previous"/pltrun_*.deb)"), in a fresh copy of the chroot"
bash "$source_dir/scripts/package/chroot.sh" run --bind "$work" --bind "$previous" -- \
  bash "$work/source/tests/package/upgrade_in_chroot.sh" "$previous" "$work/debs" "$work/source" ||
  fail "the upgrade in the chroot (above)"
echo "   the upgrade took $(($(date +%s) - upgrade_started)) s"
echo "package test passed in $(($(date +%s) - started)) s"
