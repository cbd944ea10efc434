#!/usr/bin/env bash
# What the demo and the test command install on a fresh Debian bookworm: the figures of
# README.md's "Try it / develop" (issue 48), package count, download and installed size.
#
#   scripts/deps/measure.sh            the figures for this tree's package lists
#   scripts/deps/measure.sh PACKAGE... the figures for these packages instead
#
# In a throwaway copy of scripts/chroot/fresh.sh's clean bookworm (built once): apt-get
# update, then for each command apt's plan of `apt-get install --no-install-recommends` of its
# packages (scripts/deps/apt-plan.sh). Nothing is downloaded or installed. Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)

# In the fresh copy: apt's lists, then one line per command.
measure() {
  as_root() { "$@"; }
  # shellcheck source=apt-plan.sh
  . "$here/apt-plan.sh"
  env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  if [ $# -gt 0 ]; then
    echo "$*: $(apt_plan "$@" || echo "no plan: apt cannot install them")"
    return
  fi
  local -a demo test
  mapfile -t demo < <(bash "$repo/scripts/install-deps.sh" --build-only --list)
  mapfile -t test < <(bash "$repo/scripts/install-deps.sh" --with-torch --list)
  echo "bash scripts/demo.sh (install-deps.sh --build-only, ${#demo[@]} named): $(apt_plan "${demo[@]}")"
  echo "bash scripts/test.sh (install-deps.sh --with-torch, ${#test[@]} named): $(apt_plan "${test[@]}")"
}

if [ "${1:-}" = --inside ]; then
  shift
  measure "$@"
  exit
fi
bash "$repo/scripts/chroot/fresh.sh" ensure
bash "$repo/scripts/chroot/fresh.sh" run --bind "$repo" -- bash "$repo/scripts/deps/measure.sh" --inside "$@"
