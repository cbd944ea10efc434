#!/usr/bin/env bash
# The package test's part inside a fresh clean bookworm chroot (run_package_test.sh runs it
# through scripts/package-chroot.sh): installs pltrun's .deb files with apt, as on a node,
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
step() { echo "== $*"; }
export DEBIAN_FRONTEND=noninteractive

# --- install -----------------------------------------------------------------------------
dpkg-query -W -f '${Package} ${Version}\n' | sort >"$work/packages.before"
runtime_deb=$(ls "$deb_dir"/pltrun_*.deb)
dev_deb=$(ls "$deb_dir"/pltrun-dev_*.deb)
step "apt-get install $(basename "$runtime_deb") $(basename "$dev_deb"), with no network"
# In a network namespace of its own: the dependencies come from apt's cache in the cached
# chroot (scripts/package-chroot.sh downloads them once), never from the network.
if ! unshare --net -- apt-get install -y -q --no-install-recommends "$runtime_deb" "$dev_deb" >"$work/apt.log" 2>&1; then
  cat "$work/apt.log" >&2
  fail "apt-get install failed; a new dependency must be added to scripts/package-chroot.sh's lists"
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

step "man pages and bash completion"
for page in pltrun pltrun-store pltrun-status; do
  file=/usr/share/man/man1/$page.1.gz
  [ -f "$file" ] || fail "no man page $file"
  gzip -dc "$file" | grep -c '^\.SH OPTIONS' >/dev/null || fail "$file has no OPTIONS section"
done
gzip -dc /usr/share/man/man1/pltrun.1.gz | grep -cF 'nproc\-per\-node' >/dev/null || fail "pltrun(1) does not list --nproc-per-node"
gzip -dc /usr/share/man/man1/pltrun-status.1.gz | grep -cF 'rdzv\-endpoint' >/dev/null || fail "pltrun-status(1) does not list --rdzv-endpoint"
bash "$source_copy/tests/package/check_completion.sh" /usr/share/bash-completion/completions || fail "bash completion"

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
left=0
while read -r path; do
  [ -e "$path" ] || [ -L "$path" ] || continue
  # A directory some other package owns (/usr/bin, /usr/share/man/man1) stays.
  if [ -d "$path" ] && [ ! -L "$path" ] && dpkg-query -S "$path" >/dev/null 2>&1; then continue; fi
  [ "$path" = /. ] && continue
  echo "   left behind: $path" >&2
  left=1
done <"$work/files"
[ "$left" = 0 ] || fail "the purge left files of the packages (above)"
[ ! -L "$enabled" ] || fail "the purge left the unit's enabling link $enabled"
echo "   every file of the packages is gone, and the package set is as before"
echo "package test in the chroot passed"
