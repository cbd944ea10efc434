#!/usr/bin/env bash
# The wheel as a user meets it (CTest: "wheel: ... (SUITE, Python 3.X)"): in a fresh copy of
# a clean Debian chroot of SUITE (scripts/chroot/venv.sh: no Debian package of pltrun's
# dependencies in it), as the unprivileged user pltrun-user (scripts/chroot/test_user.env),
# tests/wheel/in_venv.py installs the wheel with `pip install --no-index` into a fresh
# virtual environment and checks AREA:
#   install   pltrun and pltrun-store --version from the venv's bin (the ELF programs
#             themselves), ldd of both and of libpltrun.so name only libc's family (and the
#             C++ runtime for the library), the running agent maps no OpenSSL, spdlog, fmt,
#             toml++ or Boost; python -m pltrun --version; pip uninstall leaves the venv's
#             file list as it was before the install
#   python    a stall caught through pltrun.heartbeat (exit 124 naming the rank),
#             rank_info() under pltrun, heartbeat outside pltrun (tests/python's cases), and
#             python -m pltrun --version
#   secret    a 2-agent c10d job on 127.0.0.1 (port 0) with --rdzv-conf secret_file: an
#             agent with a wrong secret is refused, the job with the right one succeeds
#   etcd      a 2-agent job on a real etcd this script starts on the host's loopback (free
#             ports, TLS off): the chroot shares the host's network
#   consumer  tests/consumer built with the chroot's g++ against the wheel's libpltrun
#             (CMAKE_PREFIX_PATH from python -m pltrun --cmake-dir, pkg-config from
#             --pkgconfig-dir) and run under the venv's pltrun
#   pipx      pipx install --pip-args=--no-index WHEEL, its pltrun --version, pipx uninstall
# The wheel: tests/wheel/wheel_file.py's ($PLTRUN_WHEEL_FILE, else the newest
# SOURCE_DIR/build-wheel/dist/pltrun-*.whl); none fails the test with the command that makes
# it. Exits 77 (CTest's skip) when not root or debootstrap is missing. The chroot's run
# fails if a process is left in its copy; this script ends its etcd by pid and removes its
# temporary directory.
#
# Usage: run_wheel_test.sh AREA SUITE SOURCE_DIR
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 AREA SUITE SOURCE_DIR" >&2; exit 2; }
area=$1
suite=$2
source_dir=$(cd "$3" && pwd -P)
venv_chroot=$source_dir/scripts/chroot/venv.sh

fail() {
  echo "wheel test FAILED: $*" >&2
  exit 1
}
skip() {
  echo "wheel test SKIPPED: $*"
  exit 77
}
step() { echo "== $*"; }

case "$area" in install | python | secret | etcd | consumer | pipx) ;; *) fail "unknown area '$area'" ;; esac
# wheel_file.py prints the one line saying how to make a missing wheel.
wheel=$(/usr/bin/python3 "$source_dir/tests/wheel/wheel_file.py" "$source_dir") || exit 1
[ "$(id -u)" -eq 0 ] || skip "not root (debootstrap, chroot and mount need it)"
command -v debootstrap >/dev/null || skip "debootstrap is missing (scripts/install-deps.sh installs it)"

work=$(mktemp -d "${TMPDIR:-/tmp}/pltrun-wheel.XXXXXX")
etcd_pid=
cleanup() {
  if [ -n "$etcd_pid" ]; then
    kill -TERM "$etcd_pid" 2>/dev/null || true
    wait "$etcd_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
started=$(date +%s)

step "scripts/chroot/venv.sh $suite ensure"
bash "$venv_chroot" "$suite" ensure || fail "no clean $suite chroot"

# What the user in the chroot reads: the wheel under its own name, and the tests.
mkdir -p "$work/source/tests"
cp "$wheel" "$work/"
cp -a "$source_dir/tests/wheel" "$source_dir/tests/python" "$source_dir/tests/consumer" "$work/source/tests/"
chmod -R a+rX "$work"

etcd_endpoint=
if [ "$area" = etcd ]; then
  # shellcheck source=start_etcd.sh
  . "$source_dir/tests/wheel/start_etcd.sh"
  start_etcd "$work/etcd" || fail "etcd did not start (log: above)"
  step "etcd on the host at $etcd_endpoint (pid $etcd_pid)"
fi

# shellcheck source=../../scripts/chroot/test_user.env
. "$source_dir/scripts/chroot/test_user.env"
step "$area, as $test_user_name in a fresh copy of $(bash "$venv_chroot" "$suite" path)"
bash "$venv_chroot" "$suite" run --bind "$work" -- \
  runuser -u "$test_user_name" -- env -i HOME="/home/$test_user_name" USER="$test_user_name" LANG=C.UTF-8 PATH=/usr/bin:/bin \
  /usr/bin/python3 "$work/source/tests/wheel/in_venv.py" "$area" "$work/$(basename "$wheel")" "$work/source" \
  ${etcd_endpoint:+"$etcd_endpoint"} ||
  fail "$area in the $suite chroot (above)"
if [ "$area" = etcd ]; then
  # The agents met at this etcd: their rounds are there (docs/USAGE.md: ETCD_PREFIX/pltrun/rdzv/RUN_ID/).
  keys=$(ETCDCTL_API=3 etcdctl --endpoints "$etcd_endpoint" get --prefix --keys-only /pltrun/rdzv/ | grep -c . || true)
  [ "$keys" -gt 0 ] || fail "the host's etcd holds no key under /pltrun/rdzv/: the agents did not meet there"
  echo "   the host's etcd holds $keys keys of the job under /pltrun/rdzv/"
fi
echo "wheel test ($area, $suite) passed in $(($(date +%s) - started)) s"
