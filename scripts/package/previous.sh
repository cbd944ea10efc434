#!/usr/bin/env bash
# The previous release's Debian packages, built once and cached, from which the package
# test (tests/package/run_package_test.sh) upgrades to this build's.
#
#   scripts/package/previous.sh ensure   build them once (a full build: minutes), then instant
#   scripts/package/previous.sh ready    exit 0 when they are built, 1 otherwise
#   scripts/package/previous.sh path     print the directory holding the .deb files
#
# The previous release is commit 9309e30 (pltrun 0.1.0 as first packaged: OpenSSL linked
# statically, libraries in /usr/lib, no Debian revision, no /etc/pltrun.toml). Its source
# comes from this repository's history (git archive; the commit must be there, as in any
# full clone), is built with its own scripts/package.sh (its path in that tree; Release, no
# tests) in a temporary directory, and only the .deb files are kept, in
# ${PLTRUN_PREVIOUS_DEBS:-/var/cache/pltrun/previous-debs}/COMMIT. Needs root (writes there).
set -euo pipefail

commit=9309e3027c9fdd71b0573d3cba17938f4db0fcab
root=${PLTRUN_PREVIOUS_DEBS:-/var/cache/pltrun/previous-debs}
root=${root%/}
debs=$root/$commit
stamp=$debs/.built
source_dir=$(cd "$(dirname "$0")/../.." && pwd)

say() { echo "package/previous.sh: $*" >&2; }
die() {
  say "error: $*"
  exit 2
}
usage() { die "usage: scripts/package/previous.sh ensure|ready|path"; }

build() {
  git -C "$source_dir" cat-file -e "$commit^{commit}" 2>/dev/null ||
    die "commit $commit (the previous release) is not in $source_dir's history (a shallow clone?): git fetch --unshallow"
  local started work
  started=$(date +%s)
  work=$(mktemp -d "${TMPDIR:-/tmp}/pltrun-previous.XXXXXX")
  # shellcheck disable=SC2064 # $work is fixed now
  trap "rm -rf '$work'" EXIT
  say "building the previous release's packages (commit ${commit:0:7}) in $work: a full build, minutes"
  mkdir -p "$work/source"
  git -C "$source_dir" archive "$commit" | tar -x -C "$work/source"
  # Release, no tests: what the packages hold, sooner than its own RelWithDebInfo default.
  cmake -S "$work/source" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DPLTRUN_GIT_COMMIT="${commit:0:12}" -Wno-dev >"$work/configure.log" 2>&1 ||
    { tail -n 30 "$work/configure.log" >&2; die "configuring the previous release failed"; }
  # That tree's own packaging script: the scripts moved into folders after it.
  bash "$work/source/scripts/package.sh" "$work/build" "$work/debs" >"$work/packages" ||
    die "the previous release's scripts/package.sh failed (above)"
  rm -rf "$debs"
  mkdir -p "$debs"
  cp "$work"/debs/*.deb "$debs/"
  echo "commit $commit built $(date -u +%FT%TZ)" >"$stamp"
  say "ready: $(cd "$debs" && echo *.deb) in $debs after $(($(date +%s) - started)) s"
}

case "${1:-}" in
  ensure)
    [ -f "$stamp" ] && exit 0
    [ "$(id -u)" -eq 0 ] || die "building the previous release's packages into $root needs root"
    mkdir -p "$root"
    exec 9>"$root/.lock"
    flock 9
    [ -f "$stamp" ] || build
    ;;
  ready) [ -f "$stamp" ] ;;
  path) echo "$debs" ;;
  *) usage ;;
esac
