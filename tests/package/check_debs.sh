#!/usr/bin/env bash
# The package test's checks on this machine (run_package_test.sh), before any install:
# which files each package holds and which it must not, its fields and control files,
# lintian, stripped ELF files that need the system's OpenSSL and whose debug symbols gdb
# finds in pltrun-dbgsym by build id, the zsh and fish completion, and the store's systemd
# unit as systemd-analyze reads it.
#
# Usage: check_debs.sh DEB_DIR EXTRACT_DIR VERSION_LINE
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 DEB_DIR EXTRACT_DIR VERSION_LINE" >&2; exit 2; }
deb_dir=$1
extract=$2
version_line=$3
fail() {
  echo "check_debs: $*" >&2
  exit 1
}
upstream=$(awk '{print $2}' <<<"$version_line")
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
# The Debian version: pltrun's own and the Debian revision (0.1.0-1).
version=$(cd "$deb_dir" && ls pltrun_"$upstream"-*_"$arch".deb 2>/dev/null | sed -E "s/^pltrun_(.*)_$arch\.deb$/\1/") || true
[[ $version =~ ^$upstream-[0-9]+$ ]] || fail "no pltrun_$upstream-REVISION_$arch.deb in $deb_dir: $(ls "$deb_dir")"
runtime=$deb_dir/pltrun_${version}_$arch.deb
dev=$deb_dir/pltrun-dev_${version}_$arch.deb
dbgsym=$deb_dir/pltrun-dbgsym_${version}_$arch.ddeb

step() { echo "== $*"; }
for deb in "$runtime" "$dev" "$dbgsym"; do [ -f "$deb" ] || fail "no $deb"; done

# Paths in a package, one a line, without the leading "." (symlinks without their target).
paths() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's/^\.//'; }
# has PACKAGE REGEX...: each extended regex matches a path of the package.
has() {
  local deb=$1 pattern
  shift
  for pattern in "$@"; do
    paths "$deb" | grep -qE "^$pattern\$" || fail "$(basename "$deb") holds no path matching $pattern"
  done
}
# lacks PACKAGE REGEX: no path matches.
lacks() {
  if paths "$1" | grep -E "$2" | grep -v '/$'; then fail "$(basename "$1") holds the paths above"; fi
}
field() { dpkg-deb -f "$1" "$2"; }

step "contents (dpkg-deb -c)"
lib="/usr/lib/$multiarch"  # libraries and their CMake and pkg-config files: multiarch only
has "$runtime" /usr/bin/pltrun /usr/bin/pltrun-store "$lib/libpltrun\.so\.0\.1" "$lib/libpltrun\.so\.0\.1\.[0-9]+" \
  /usr/share/man/man1/pltrun\.1\.gz /usr/share/man/man1/pltrun-store\.1\.gz /usr/share/man/man1/pltrun-status\.1\.gz \
  /usr/share/man/man5/pltrun\.toml\.5\.gz \
  /usr/share/bash-completion/completions/pltrun /usr/share/bash-completion/completions/pltrun-store \
  /usr/share/zsh/vendor-completions/_pltrun /usr/share/fish/vendor_completions.d/pltrun\.fish \
  /usr/share/fish/vendor_completions.d/pltrun-store\.fish /etc/pltrun\.toml \
  /usr/lib/systemd/system/pltrun-store\.service /etc/default/pltrun-store /usr/share/doc/pltrun/copyright \
  /usr/share/doc/pltrun/changelog\.Debian\.gz /usr/share/lintian/overrides/pltrun
lacks "$runtime" '/include/|\.a$|/cmake/|/pkgconfig/|libpltrun\.so$|^/usr/lib/libpltrun'
has "$dev" /usr/include/pltrun/pltrun\.h /usr/include/pltrun/group\.h "$lib/libpltrun\.a" "$lib/libpltrun\.so" \
  "$lib/cmake/pltrun/pltrunConfig\.cmake" "$lib/pkgconfig/pltrun\.pc" /usr/share/doc/pltrun-dev/copyright
lacks "$dev" '/bin/|\.so\.|/man/|/systemd/|^/etc/|^/usr/lib/(libpltrun|cmake|pkgconfig)'
has "$dbgsym" '/usr/lib/debug/\.build-id/[0-9a-f]{2}/[0-9a-f]+\.debug' '/usr/share/doc/pltrun-dbgsym'
for deb in "$runtime" "$dev" "$dbgsym"; do echo "   $(basename "$deb"): $(paths "$deb" | grep -vc '/$') files"; done
copyright=$(dpkg-deb --fsys-tarfile "$runtime" | tar -xOf - ./usr/share/doc/pltrun/copyright)
grep -qx "Copyright: 2026 The pltrun authors" <<<"$copyright" && grep -qx "License: Apache-2.0" <<<"$copyright" &&
  grep -qF /usr/share/common-licenses/Apache-2.0 <<<"$copyright" || fail "the copyright file does not name LICENSE's terms"

step "fields and control files"
# Maintainer and Homepage from the top-level CMakeLists.txt; the changelog's trailer names
# the same maintainer, its entry the package's version.
maintainer=$(field "$runtime" Maintainer)
[[ $maintainer =~ ^[^\<]+\ \<[^@\>]+@[^@\>]+\.[a-z]+\>$ ]] && [[ $maintainer != *example.* ]] ||
  fail "Maintainer '$maintainer' is not a real 'Name <address>'"
homepage=$(field "$runtime" Homepage)
[[ $homepage == https://* ]] || fail "Homepage '$homepage' is not an https URL"
for deb in "$dev" "$dbgsym"; do
  [ "$(field "$deb" Maintainer)" = "$maintainer" ] || fail "$(basename "$deb") has another Maintainer"
done
[ "$(field "$dev" Homepage)" = "$homepage" ] || fail "pltrun-dev has another Homepage"
changelog=$(dpkg-deb --fsys-tarfile "$runtime" | tar -xOf - ./usr/share/doc/pltrun/changelog.Debian.gz | gzip -dc)
head -n1 <<<"$changelog" | grep -qF "pltrun ($version) " || fail "the changelog's entry is not $version: $(head -n1 <<<"$changelog")"
grep -qF -- " -- $maintainer  " <<<"$changelog" || fail "the changelog is not signed by $maintainer"
echo "   Version: $version; Maintainer: $maintainer; Homepage: $homepage"
for deb in "$runtime" "$dev"; do
  echo "   $(field "$deb" Package): Depends: $(field "$deb" Depends)"
done
depends=$(field "$runtime" Depends)
# The programs link the system's shared libraries, and dpkg-shlibdeps reads their NEEDED
# entries: the package of every library they need (on this machine, which built them) must
# be in Depends, or a node could install pltrun without what it needs to start (libssl3
# for libssl.so.3 and libcrypto.so.3, NEEDED as checked below). libpltrun is pltrun's own;
# the dynamic loader comes with libc6.
needed() { readelf -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | tr '\n' ' '; }
names_of() { sed -E 's/ *\([^)]*\)//g; s/ *[,|] */\n/g' <<<"$1" | sed '/^$/d'; }  # a Depends field's names, one a line
package_of() {  # SONAME: the package that installed it here (dpkg knows it as /lib or /usr/lib)
  local path
  path=$(ldconfig -p | awk -v soname="$1" -v dir="/$multiarch/" '$1 == soname && index($NF, dir) && !found++ {print $NF}')
  [ -n "$path" ] || fail "ldconfig does not know $1, which the programs need"
  { dpkg-query -S "$path" 2>/dev/null || dpkg-query -S "/usr$path"; } | sed -n '1s/[:,].*//p'
}
mkdir -p "$extract/root"
dpkg-deb -x "$runtime" "$extract/root"
for soname in $(needed "$extract/root/usr/bin/pltrun") $(needed "$extract/root/usr/bin/pltrun-store"); do
  case $soname in libpltrun.so.* | ld-linux*) continue ;; esac
  library=$(package_of "$soname")
  # The package, or a name it provides that its shlibs file asks for instead (spdlog's is
  # libspdlog1.10-fmt9: the fmt it was built with).
  names_of "$library, $(dpkg-query -W -f='${Provides}' "$library")" | grep -qxF -f - <(names_of "$depends") ||
    fail "pltrun needs $soname but does not depend on $library (dpkg-shlibdeps): $depends"
done
depends=$(field "$dev" Depends)
grep -qF "pltrun (= $version)" <<<"$depends" || fail "pltrun-dev does not depend on pltrun (= $version): $depends"
grep -q libssl-dev <<<"$depends" || fail "pltrun-dev does not depend on libssl-dev: $depends"
[ "$(field "$dbgsym" Package)" = pltrun-dbgsym ] || fail "the .ddeb is not pltrun-dbgsym"
mkdir -p "$extract/control"
dpkg-deb -e "$runtime" "$extract/control"
for conffile in /etc/default/pltrun-store /etc/pltrun.toml; do
  grep -qx "$conffile" "$extract/control/conffiles" || fail "$conffile is not a conffile"
done
grep -qE "^libpltrun 0\.1 pltrun \(>= $version\)$" "$extract/control/shlibs" || fail "no shlibs line for libpltrun 0.1"
grep -qx 'activate-noawait ldconfig' "$extract/control/triggers" || fail "no ldconfig trigger"
if grep -vE '^[[:space:]]*#' "$extract/control/postinst" | grep -qE '(systemctl|deb-systemd-[a-z]+) +(enable|start)'; then
  fail "the postinst enables or starts the store's unit (it must stay disabled)"
fi
echo "   conffiles, ldconfig trigger; shlibs: $(cat "$extract/control/shlibs")"
mkdir -p "$extract/dbgsym-control"
dpkg-deb -e "$dbgsym" "$extract/dbgsym-control"
if grep -v '^[0-9a-f]\{32\}  usr/lib/debug/' "$extract/dbgsym-control/md5sums"; then
  fail "pltrun-dbgsym's md5sums names the files above wrongly"
fi

step "lintian: no error, no warning"
# Every tag at warning level or above fails the test; the overrides the package ships say
# why (apps/packaging/debian/lintian-overrides). Info tags are shown.
if ! lintian --fail-on error,warning --display-info --tag-display-limit 0 "$runtime" "$dev" "$dbgsym" \
  >"$extract/lintian.out" 2>&1; then
  cat "$extract/lintian.out" >&2
  fail "lintian found errors or warnings (above)"
fi
sed 's/^/   /' "$extract/lintian.out"
echo "   lintian $(lintian --version | awk '{print $2}'): no error, no warning in $(basename -a "$runtime" "$dev" "$dbgsym" | tr '\n' ' ')"

step "stripped ELF files that need the system's OpenSSL, debug symbols by build id (gdb)"
dpkg-deb -x "$dbgsym" "$extract/root"
# libssl and libcrypto as the system's shared libraries, linked (NEEDED), so that Debian's
# security updates of OpenSSL reach pltrun, and dpkg-shlibdeps sees them.
for program in pltrun pltrun-store; do
  grep -qw libcrypto.so.3 <<<"$(needed "$extract/root/usr/bin/$program")" ||
    fail "$program does not need libcrypto.so.3: $(needed "$extract/root/usr/bin/$program")"
done
grep -qw libssl.so.3 <<<"$(needed "$extract/root/usr/bin/pltrun")" ||
  fail "pltrun does not need libssl.so.3: $(needed "$extract/root/usr/bin/pltrun")"
echo "   pltrun NEEDED: $(needed "$extract/root/usr/bin/pltrun")"
for elf in "$extract"/root/usr/bin/pltrun "$extract"/root/usr/bin/pltrun-store "$extract"/root/usr/lib/*/libpltrun.so.0.1.*; do
  [ -f "$elf" ] || continue
  description=$(file -b "$elf")
  [[ $description == *", stripped"* ]] || fail "$(basename "$elf") is not stripped: $description"
  id=$(readelf -n "$elf" | sed -n 's/^ *Build ID: \([0-9a-f]*\)$/\1/p')
  [ -n "$id" ] || fail "$(basename "$elf") has no build id"
  debug=$extract/root/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  [ -f "$debug" ] || fail "no debug file for $(basename "$elf") (build id $id) in pltrun-dbgsym"
  readelf -S "$debug" 2>/dev/null | grep -q '\.debug_info' || fail "$debug has no .debug_info"
  echo "   $(basename "$elf"): stripped, $(du -k "$elf" | cut -f1) KiB; build id $id -> $(du -k "$debug" | cut -f1) KiB of symbols"
done
# gdb ELF FUNCTION FILE: gdb, looking in the extracted /usr/lib/debug (set before it loads
# ELF), finds FUNCTION's line in FILE: the symbols came through the build id.
gdb_finds() {
  local out
  out=$(gdb -batch -nx -iex "set debug-file-directory $extract/root/usr/lib/debug" -ex "info line $2" "$1" 2>&1) || true
  grep -q "Line [0-9]* of \"[^\"]*$3\"" <<<"$out" || fail "gdb does not find $2 in $(basename "$1")'s symbols: $out"
  echo "   gdb: $(basename "$1"): $(grep -o "Line [0-9]* of \"[^\"]*$3\"" <<<"$out")"
}
gdb_finds "$extract/root/usr/bin/pltrun" main apps/pltrun/main.cc
gdb_finds "$extract/root/usr/bin/pltrun-store" main apps/pltrun-store/main.cc
gdb_finds "$(ls "$extract"/root/usr/lib/*/libpltrun.so.0.1.* 2>/dev/null | head -n1)" \
  pltrun_group_join lib/client/src/c_api.cc

step "completion in bash, zsh and fish"
bash "$(dirname "$0")/check_completion.sh" "$extract/root" --all-shells || fail "completion"

step "the store's systemd unit (systemd-analyze)"
# Against this machine's systemd units (network-online.target, ...), with ExecStart's
# program the extracted one: verify checks that it exists and is executable.
mkdir -p "$extract/unit"
unit=$extract/unit/pltrun-store.service
sed "s|^ExecStart=/usr/bin/|ExecStart=$extract/root/usr/bin/|" "$extract/root/usr/lib/systemd/system/pltrun-store.service" >"$unit"
systemd-analyze verify --man=no "$unit" || fail "systemd-analyze verify found problems (above)"
# --threshold: exposure times ten; over 2.0 ("OK" ends at 3.9) fails.
exposure=$(systemd-analyze security --offline=yes --threshold=20 "$unit" 2>&1) ||
  fail "the unit's exposure is over 2.0: $(tail -n 1 <<<"$exposure")"
echo "   verify: no problems; security: $(tail -n 1 <<<"$exposure" | sed 's/.*: //')"
