#!/usr/bin/env bash
# Installs what pltrun needs from Debian's packages only (the lists: scripts/deps/packages.sh).
#
#   scripts/install-deps.sh                what building, running and testing pltrun needs
#   scripts/install-deps.sh --build-only   what building and running it needs (the demo's)
#   scripts/install-deps.sh --with-torch   adds Debian's python3-torch (the test command's)
#   scripts/install-deps.sh --list         prints the chosen packages' names and installs nothing
#
# Idempotent: packages already present are skipped, and apt-get runs only when one is missing.
# apt's output goes to a log file named in one line (PLTRUN_APT_LOG, else a new file in
# /tmp); on failure its last lines are shown. No service of the packages starts or stays
# enabled (scripts/deps/services.sh; scripts/check/no-services.sh checks it).
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=deps/packages.sh
. "$here/deps/packages.sh"
# shellcheck source=deps/services.sh
. "$here/deps/services.sh"
# shellcheck source=deps/apt-plan.sh
. "$here/deps/apt-plan.sh"

packages=("${build_packages[@]}")
with_tests=1 list=0
for argument in "$@"; do
  case "$argument" in
    --build-only) with_tests=0 ;;
    --with-torch) packages+=("${torch_packages[@]}") ;;
    --list) list=1 ;;
    *) echo "install-deps: unknown argument $argument (accepted: --build-only, --with-torch, --list)" >&2; exit 2 ;;
  esac
done
if [ "$with_tests" -eq 1 ]; then packages+=("${test_packages[@]}"); fi
if [ "$list" -eq 1 ]; then printf '%s\n' "${packages[@]}"; exit 0; fi

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

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
# sudo resets the environment: apt's settings go through env.
as_root() { "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
apt_options=(-q -o Dpkg::Use-Pty=0 --no-install-recommends)
log=${PLTRUN_APT_LOG:-$(mktemp /tmp/pltrun-apt-XXXXXX.log)}
started=$SECONDS

# Ends the run on a failed apt-get with the end of its log.
apt_failed() {
  echo "install-deps: apt-get failed; the last lines of $log:" >&2
  tail -n 25 "$log" >&2
  exit 1
}

echo "install-deps: ${missing[*]} missing; apt's output goes to $log"
as_root apt-get update -q >>"$log" 2>&1 || apt_failed
plan=$(apt_plan "${missing[@]}") || plan="them"  # apt says why below
echo "install-deps: installing $plan..."
services_guard_begin
as_root apt-get install -y "${apt_options[@]}" "${missing[@]}" >>"$log" 2>&1 || apt_failed
services_guard_end
echo "install-deps: done in $((SECONDS - started)) s"
