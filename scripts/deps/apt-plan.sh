# shellcheck shell=bash
# apt_plan PACKAGE...: what `apt-get install --no-install-recommends PACKAGE...` would do, as
# "N packages (D to download, S on disk)": apt-get shows its plan and asks, --assume-no
# answers, and nothing is installed. Status 1, and nothing printed, when apt shows no plan
# (a package it cannot find). The caller defines as_root (how it runs apt-get as
# root). Sourced by scripts/install-deps.sh and scripts/deps/measure.sh, never run.
apt_plan() {
  local plan count download disk
  plan=$(LC_ALL=C as_root apt-get install --assume-no -q -o Dpkg::Use-Pty=0 --no-install-recommends "$@" 2>&1 || true)
  count=$(sed -n 's/.* \([0-9][0-9]*\) newly installed.*/\1/p' <<<"$plan")
  [ -n "$count" ] || return 1
  # "Need to get 52.3 MB of archives.", or "Need to get 10 MB/52.3 MB ..." with some cached.
  download=$(sed -n 's#^Need to get \([^/]*\)\(/.*\)\{0,1\} of archives\.#\1#p' <<<"$plan")
  disk=$(sed -n 's/^After this operation, \(.*\) of additional disk space will be used\./\1/p' <<<"$plan")
  echo "$count packages (${download:-nothing} to download, ${disk:-nothing more} on disk)"
}
