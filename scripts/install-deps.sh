#!/usr/bin/env bash
# Installs what pltrun needs to build, test and benchmark, from Debian's packages only.
# Idempotent: packages already present are skipped, and apt-get runs only when one is missing.
set -euo pipefail

# --with-torch adds Debian's python3-torch (torch 1.13, CPU, gloo), for the PyTorch
# interoperability tests; it is run by /usr/bin/python3.
packages=(
  build-essential cmake pkg-config
  libcli11-dev libboost1.81-dev
  nlohmann-json3-dev libspdlog-dev catch2 libssl-dev openssl
  hyperfine time procps python3 iproute2
  openssh-server openssh-client
  clang libclang-rt-14-dev clang-format-14
  etcd-server etcd-client  # the etcd rendezvous backend's tests start real members (issue 13)
  slurmctld slurmd slurm-client munge  # the real-Slurm tests start a two-node cluster (issue 15)
  # The Debian package (scripts/package/deb.sh, issue 16): man pages, dependencies, stripping;
  # its test checks the debug symbols and the store's unit, and installs it in a chroot.
  help2man dpkg-dev file gdb systemd debootstrap elfutils
  lintian  # the package test runs it (issue 29)
  libtomlplusplus-dev  # the site config is read by a real TOML 1.0 parser (issue 29)
  zsh fish  # the package test completes command lines in them (issue 29)
  mypy  # the Python package's types, checked for Python 3.8 (issue 45)
  python3-venv  # the wheel's tests and benchmark install it into venvs of Debian's python3 (issue 45)
  prometheus  # the metrics test scrapes a live job with Debian's real Prometheus 2.42 and promtool (issue 47)
)
# Packages that ship a system service the tests start themselves (as their own children, on
# loopback): installing them must neither start nor enable it (issue 48).
quiet_services=(prometheus)
for argument in "$@"; do
  case "$argument" in
    --with-torch) packages+=(python3-torch) ;;
    *) echo "install-deps: unknown argument $argument (accepted: --with-torch)" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive

# While our apt-get runs, /usr/sbin/policy-rc.d answers 101 ("action forbidden"): invoke-rc.d
# and deb-systemd-invoke, which the packages' maintainer scripts start their services through,
# then start nothing, with or without systemd running. A policy-rc.d already there (Docker's)
# is put back afterwards.
policy=/usr/sbin/policy-rc.d
saved_policy="$policy.pltrun-install-deps"
refuse_services() {
  if [ -e "$policy" ]; then "${sudo_cmd[@]}" mv "$policy" "$saved_policy"; fi
  printf '#!/bin/sh\n# scripts/install-deps.sh: no service starts while it installs (removed after)\nexit 101\n' |
    "${sudo_cmd[@]}" tee "$policy" >/dev/null
  "${sudo_cmd[@]}" chmod 755 "$policy"
}
restore_policy() {
  "${sudo_cmd[@]}" rm -f "$policy"
  if [ -e "$saved_policy" ]; then "${sudo_cmd[@]}" mv "$saved_policy" "$policy"; fi
}
# A policy-rc.d does not stop a postinst from enabling the service for the next boot
# (deb-systemd-helper enable, update-rc.d defaults): disabled here, for the packages this run
# installed. `systemctl disable` works without systemd running (a container, a chroot), removes
# the unit's links and the SysV script's start links (systemd-sysv-install), and upgrades keep
# it disabled (deb-systemd-helper re-enables only units that were enabled).
disable_services() {
  local package
  for package in "$@"; do
    if command -v systemctl >/dev/null; then
      "${sudo_cmd[@]}" systemctl disable --quiet "$package.service"
    elif [ -e "/etc/init.d/$package" ]; then
      "${sudo_cmd[@]}" update-rc.d "$package" disable
    fi
  done
}

newly_quiet=()
for package in "${quiet_services[@]}"; do
  if [[ " ${missing[*]} " == *" $package "* ]]; then newly_quiet+=("$package"); fi
done
"${sudo_cmd[@]}" apt-get update -q
trap restore_policy EXIT
trap "exit 130" INT TERM  # the EXIT trap then puts the policy back
refuse_services
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
disable_services "${newly_quiet[@]}"
