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
)
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
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
