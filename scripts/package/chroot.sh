#!/usr/bin/env bash
# A clean Debian bookworm chroot, built once and cached, into which the package test
# (tests/package/run_package_test.sh) installs pltrun's .deb files, each time in a fresh
# throwaway copy of it.
#
#   scripts/package/chroot.sh ensure     build the chroot once (minutes), then instant
#   scripts/package/chroot.sh ready      exit 0 when the chroot is built, 1 otherwise
#   scripts/package/chroot.sh path       print the chroot's directory
#   scripts/package/chroot.sh run [--bind HOSTDIR]... [--] CMD...
#
# `run` runs CMD in a fresh copy of the chroot (an overlay whose writes go to a tmpfs and
# vanish with the run): every run starts from the same clean system, and the cached chroot
# never changes. A process CMD leaves in the copy is killed and fails the run (status 3).
#
# The chroot: debootstrap's minbase, plus what building against the -dev package needs
# (the consumer project: cmake, g++, pkg-config, libssl-dev, procps), and, downloaded into
# apt's cache but not installed, the libraries the pltrun package depends on that those do
# not bring. So `apt-get install --no-download ./pltrun_*.deb` resolves and installs the
# package's dependencies with no network, as apt would on a node. Changing the package
# lists below rebuilds the chroot (they are in its stamp).
#
# It lives in ${PLTRUN_PACKAGE_ROOT:-/var/cache/pltrun/bookworm-package}; its mirror is
# ${PLTRUN_PACKAGE_MIRROR}, or else the Debian mirror this machine's apt sources name.
# A chroot shares the host's network: what runs in it listens on 127.0.0.1 only.
# Needs root (debootstrap, chroot, mount); scripts/chroot/common.sh holds the machinery.
# shellcheck disable=SC2034,SC2154 # chroot_tag, unset_vars, chroot_path: read by ../chroot/common.sh; chroot_url and chroot_started: set by it
set -euo pipefail

root=${PLTRUN_PACKAGE_ROOT:-/var/cache/pltrun/bookworm-package}
root=${root%/}
stamp="$root/.pltrun-package-chroot.stamp"
installed=(cmake make g++ pkg-config libssl-dev procps)
downloaded=(libspdlog1.10 libfmt9 libtomlplusplus3)  # libtomlplusplus3: the site config parser (issue 29)
unset_vars=(LD_LIBRARY_PATH LD_PRELOAD PKG_CONFIG_PATH CMAKE_PREFIX_PATH CC CXX CFLAGS CXXFLAGS LDFLAGS)
chroot_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
packages_line="installed ${installed[*]}; downloaded ${downloaded[*]}"

chroot_tag=package-chroot
# shellcheck source=../chroot/common.sh
. "$(dirname "$0")/../chroot/common.sh"

build() {
  chroot_build_base bookworm "${PLTRUN_PACKAGE_MIRROR:-}"
  chroot_apt_install "${installed[@]}"
  chroot_apt_install --download-only "${downloaded[@]}"
  # apt's lists stay: the test's apt-get resolves the package's dependencies with them.
  chroot_finish_listed_build --keep-apt-lists
}

chroot_main --fresh "$@"
