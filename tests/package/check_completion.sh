#!/usr/bin/env bash
# The packaged completion of pltrun, `pltrun status` and pltrun-store completes what a user
# would type: in bash (alone, no bash-completion package), zsh and fish, each from the
# directory Debian's shell loads it from under ROOT. The same command lines in every shell.
#
# Usage: check_completion.sh ROOT [--all-shells]
#   ROOT          / where the package is installed (in_chroot.sh), or an extracted package
#   --all-shells  zsh and fish must be installed here (the host, scripts/install-deps.sh);
#                 without it a shell that is not installed is skipped with a line
set -euo pipefail

root=${1%/}
all_shells=${2:-}
fail() {
  echo "check_completion: $*" >&2
  exit 1
}
dir=$root/usr/share/bash-completion/completions
zsh_dir=$root/usr/share/zsh/vendor-completions
fish_dir=$root/usr/share/fish/vendor_completions.d
[ -f "$dir/pltrun" ] || fail "no $dir/pltrun"
[ "$(readlink "$dir/pltrun-store")" = pltrun ] || fail "$dir/pltrun-store is not a link to pltrun"
[ -f "$zsh_dir/_pltrun" ] || fail "no $zsh_dir/_pltrun"
[ -f "$fish_dir/pltrun.fish" ] || fail "no $fish_dir/pltrun.fish"
[ "$(readlink "$fish_dir/pltrun-store.fish")" = pltrun.fish ] || fail "$fish_dir/pltrun-store.fish is not a link to pltrun.fish"
echo "-- bash"
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

# --- zsh and fish: the same lines --------------------------------------------------------
# (shell) expect_in SHELL "WORDS THAT MUST BE OFFERED" COMMAND LINE (the cursor at its end)
# and refuse_in SHELL PATTERN COMMAND LINE (no offered word matches PATTERN).
offered_in() {
  local shell=$1 line=$2
  case $shell in
    zsh) zsh -f "$here/complete_zsh.zsh" "$zsh_dir" "$line" ;;
    # fish loads a command's completion only when the command exists: ROOT's pltrun.
    fish) HOME=$work PATH=$root/usr/bin:$PATH fish --no-config -c "set fish_complete_path $fish_dir \$fish_complete_path; complete -C \$argv[1]" "$line" | cut -f1 ;;
  esac
}
expect_in() {
  local shell=$1 wanted=$2 line=$3 got word
  got=$(offered_in "$shell" "$line") || fail "$shell: completing '$line' failed: $got"
  for word in $wanted; do
    grep -qxF -- "$word" <<<"$got" || fail "$shell: '$line' does not offer $word (offered: $(tr '\n' ' ' <<<"$got" | cut -c1-300))"
  done
  echo "   $line -> $(tr '\n' ' ' <<<"$got" | cut -c1-100)"
}
refuse_in() {
  local shell=$1 pattern=$2 line=$3 got
  got=$(offered_in "$shell" "$line") || fail "$shell: completing '$line' failed: $got"
  if grep -qE -- "$pattern" <<<"$got"; then fail "$shell: '$line' offers $(grep -E -- "$pattern" <<<"$got" | head -3)"; fi
  echo "   $line -> (nothing matching $pattern)"
}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/check-completion.XXXXXX")
trap 'rm -rf "$work"' EXIT
for shell in zsh fish; do
  if ! command -v "$shell" >/dev/null; then
    [ "$all_shells" != --all-shells ] || fail "$shell is not installed (scripts/install-deps.sh installs it)"
    echo "-- $shell: not installed here, not checked"
    continue
  fi
  echo "-- $shell"
  expect_in "$shell" "--nproc-per-node" "pltrun --nproc-per"
  expect_in "$shell" "--nproc_per_node" "pltrun --nproc_"
  expect_in "$shell" "--rdzv-endpoint --rdzv-conf --hostfile --no-python --version --help" "pltrun --"
  expect_in "$shell" "auto cpu gpu" "pltrun --nproc-per-node "
  expect_in "$shell" "--rdzv-backend=c10d" "pltrun -q --rdzv-backend=c"
  expect_in "$shell" "c10d" "pltrun -q --rdzv-backend c"
  expect_in "$shell" "status" "pltrun st"
  expect_in "$shell" "--rdzv-endpoint --json --watch" "pltrun status --"
  expect_in "$shell" "--secret-file --max-connections --port" "pltrun-store --"
  # After PROGRAM the words are the program's: pltrun's options are not offered.
  refuse_in "$shell" '^--nproc' "pltrun --nproc-per-node 2 train.py --nproc"
done
