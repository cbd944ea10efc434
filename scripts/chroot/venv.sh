#!/usr/bin/env bash
# Clean Debian chroots in which the wheel's tests (tests/wheel) install pltrun's wheel with
# pip, as an unprivileged user in a fresh virtual environment, each run in a fresh copy.
#
#   scripts/chroot/venv.sh SUITE ensure     build the chroot once (minutes), then instant
#   scripts/chroot/venv.sh SUITE ready      exit 0 when the chroot is built, 1 otherwise
#   scripts/chroot/venv.sh SUITE path       print the chroot's directory
#   scripts/chroot/venv.sh SUITE run [--bind HOSTDIR]... [--] CMD...
#
# SUITE: bookworm (Python 3.11), trixie (3.13) or forky (3.14; debootstrap's sid script,
# and a Release file past its Valid-Until taken, as scripts/chroot/torch.sh does).
#
# The chroot: debootstrap's minbase, plus what a virtual environment, pipx and a C++ user's
# build need (python3-venv, pipx, cmake, make, g++, pkg-config) and procps, and NO Debian
# package of pltrun's own dependencies (OpenSSL's -dev files, spdlog, fmt, toml++, Boost,
# nlohmann/json, CLI11): the build refuses a chroot where one came in. Only libssl3 itself
# is there, which python3 needs: the tests check that the wheel's programs do not load it.
# The user `pltrun-user` (scripts/chroot/test_user.env: a uid the host does not use, so a
# process of the tests is never taken for a host user's) is made at build time; the tests
# run as that user (runuser). Changing the package list or the uid rebuilds the chroot
# (both are in its stamp).
#
# `run` runs CMD, as root, in a fresh copy of the chroot (an overlay whose writes go to a
# tmpfs and vanish with the run): every run starts from the same clean system, and a
# process CMD leaves in the copy is killed and fails the run (status 3).
# The chroot lives in ${PLTRUN_CHROOT_DIR:-/var/cache/pltrun}/SUITE-venv; its mirror is
# ${PLTRUN_CHROOT_MIRROR}, or else the Debian mirror this machine's apt sources name.
# A chroot shares the host's network: what runs in it listens on 127.0.0.1 only.
# Needs root (debootstrap, chroot, mount); scripts/chroot/common.sh holds the machinery.
# shellcheck disable=SC2034,SC2154 # chroot_tag, unset_vars, chroot_path, chroot_self: read by common.sh; chroot_url and chroot_started: set by it
set -euo pipefail

suite=${1:-}
case "$suite" in
  bookworm | trixie | forky) ;;
  *)
    sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    echo "chroot/venv.sh: SUITE must be bookworm, trixie or forky, not '${suite}'" >&2
    exit 2
    ;;
esac
shift

root=${PLTRUN_CHROOT_DIR:-/var/cache/pltrun}
root=${root%/}/$suite-venv
stamp="$root/.pltrun-$suite-venv.stamp"
packages=(python3-venv pipx cmake make g++ pkg-config procps)
# shellcheck source=test_user.env
. "$(dirname "$0")/test_user.env"
user_name=$test_user_name
user_id=$test_user_id  # not a host user's (checked at build time)
packages_line="installed ${packages[*]}; user $user_name $user_id"
# Debian packages of pltrun's dependencies (and their -dev files): none may be installed.
forbidden='^(libssl-dev|libspdlog.*|libfmt.*|libtomlplusplus.*|libboost.*|nlohmann-json.*|libcli11.*)$'
# Environment variables that would point the chroot's python or compiler at host files.
unset_vars=(PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE LD_LIBRARY_PATH LD_PRELOAD VIRTUAL_ENV
  PKG_CONFIG_PATH CMAKE_PREFIX_PATH CC CXX CFLAGS CXXFLAGS LDFLAGS PIP_INDEX_URL PIP_FIND_LINKS)
chroot_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# How common.sh re-runs this script (inside its mount namespace).
chroot_self=("$0" "$suite")

chroot_tag=$suite-venv-chroot
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
chroot_suite_settings "$suite"

build() {
  if getent passwd "$user_id" >/dev/null; then
    die "uid $user_id is a host user's ($(getent passwd "$user_id" | cut -d: -f1)): change user_id in $0"
  fi
  chroot_build_base "$suite" "${PLTRUN_CHROOT_MIRROR:-}"
  chroot_apt_install "${packages[@]}"
  local -a env_cmd=(env -i PATH="$chroot_path" HOME=/root LANG=C.UTF-8)
  local unwanted python
  # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
  unwanted=$(chroot "$root" dpkg-query -W -f '${Package}\n' | grep -E "$forbidden" || true)
  [ -z "$unwanted" ] || die "the packages brought in pltrun's dependencies: $(echo "$unwanted" | tr '\n' ' ')"
  chroot "$root" "${env_cmd[@]}" useradd --create-home --uid "$user_id" --user-group --shell /bin/bash "$user_name" ||
    die "useradd $user_name failed"
  python=$(chroot "$root" "${env_cmd[@]}" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])') ||
    die "python3 does not run in the chroot"
  chroot_finish_listed_build "python $python"
}

chroot_main --fresh "$@"
