#!/usr/bin/env bash
# The installed bash completion (in_chroot.sh): completes what a user would type, with
# bash alone (no bash-completion package).
#
# Usage: check_completion.sh COMPLETIONS_DIR
set -euo pipefail

dir=$1
fail() {
  echo "check_completion: $*" >&2
  exit 1
}
[ -f "$dir/pltrun" ] || fail "no $dir/pltrun"
[ "$(readlink "$dir/pltrun-store")" = pltrun ] || fail "$dir/pltrun-store is not a link to pltrun"
# shellcheck source=/dev/null
source "$dir/pltrun"

# The words completion offers for the command line $2..., the cursor on its last word;
# $1 the completion function.
offered() {
  local function=$1
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  "$function"
  printf '%s\n' ${COMPREPLY[@]+"${COMPREPLY[@]}"}
}
# expect FUNCTION "WORDS THAT MUST BE OFFERED" WORD...
expect() {
  local function=$1 wanted=$2 word
  shift 2
  local got
  got=$(offered "$function" "$@")
  for word in $wanted; do
    grep -qxF -- "$word" <<<"$got" || fail "'$*' does not offer $word (offered: $(echo $got))"
  done
  echo "   $* -> $(echo $got | cut -c1-100)"
}

expect _pltrun "--nproc-per-node" pltrun --nproc-per
expect _pltrun "--nproc_per_node" pltrun --nproc_
expect _pltrun "--rdzv-endpoint --rdzv-conf --hostfile --no-python --version --help" pltrun --
expect _pltrun "auto cpu gpu" pltrun --nproc-per-node ''
expect _pltrun "static c10d etcd" pltrun --rdzv-backend =
expect _pltrun "c10d" pltrun -q --rdzv-backend = c  # bash splits --rdzv-backend=c at the =
expect _pltrun "status" pltrun st
expect _pltrun "--rdzv-endpoint --json --watch" pltrun status --
expect _pltrun_store "--secret-file --max-connections --port" pltrun-store --
# After PROGRAM the words are the program's: pltrun's options are not offered.
if offered _pltrun pltrun --nproc-per-node 2 train.py --nproc | grep -q .; then
  fail "pltrun's options are offered after PROGRAM"
fi
echo "   pltrun --nproc-per-node 2 train.py --nproc -> (nothing of pltrun's)"
