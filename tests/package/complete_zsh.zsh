# check_completion.sh's zsh: what the packaged _pltrun offers for one command line, one word
# a line. compinit registers it from DIR (its #compdef line names pltrun and pltrun-store);
# the completion system's builtins and helpers it calls are replaced by functions that print
# what they would offer (<files>, <commands>, <normal:WORD:N> for PROGRAM's own completion),
# since they only run inside a line editor's completion widget.
#
# Usage: zsh -f complete_zsh.zsh DIR 'pltrun --nproc-per'   (a trailing space: a new word)
dir=$1
line=$2
fpath=($dir $fpath)
autoload -Uz compinit
compinit -u -D
if [[ $_comps[pltrun] != _pltrun || $_comps[pltrun-store] != _pltrun ]]; then
  print -u2 "compinit did not register _pltrun for pltrun and pltrun-store ($_comps[pltrun], $_comps[pltrun-store])"
  exit 1
fi

words=(${(z)line})
[[ $line == *' ' ]] && words+=('')
CURRENT=${#words}
service=$words[1]
PREFIX=$words[CURRENT]
IPREFIX=
compadd() {
  while [[ $1 == -* && $1 != -- ]]; do shift; done
  [[ $1 == -- ]] && shift
  local word
  for word in "$@"; do [[ $word == ${PREFIX}* ]] && print -r -- "$IPREFIX$word"; done
  return 0
}
compset() {
  if [[ $1 == -P && $PREFIX == *=* ]]; then
    IPREFIX=${PREFIX%%=*}=
    PREFIX=${PREFIX#*=}
  fi
}
_files() { print -r -- '<files>'; }
_alternative() { print -r -- '<commands>'; print -r -- '<files>'; }
_message() { :; }
_normal() { print -r -- "<normal:$words[1]:$CURRENT>"; }
$_comps[$service]
