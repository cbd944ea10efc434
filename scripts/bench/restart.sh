#!/usr/bin/env bash
# Recovery benchmarks for docs/PERFORMANCE.md ("Recovery: crash to first step", issue 43):
# pltrun (cold, and --preload when this build has it) against torchrun, in one run, for each
# torch: 1.13 (Debian's /usr/bin/python3), 2.6 and 2.14 (tests/torch2/python3-trixie and
# python3-forky: chroots, scripts/chroot/torch.sh). The worker is tests/bench/restart_train.py:
# a 4-rank gloo DDP job (Adam, a checkpoint saved every step and loaded on a restart).
#
#   (a) crash -> every rank's first step after the restart: the last rank exits (os._exit(1))
#       after step 3 of attempt 0; every rank of attempt 1 loads the step-3 checkpoint and
#       takes step 4. Split into the moments the LAST rank reached: its process created by
#       the launcher, its interpreter started (differs only behind the chroot wrapper, which
#       pltrun starts per worker and torchrun once for its agent), `import torch` done,
#       init_process_group returned, first step done.
#   (b) launcher start -> every rank's first step (cold start): attempt 0 of the same jobs,
#       from the launcher's own process creation, split the same way.
#   (c) memory: PSS (/proc/PID/smaps_rollup) summed over 4 and 8 workers that imported torch,
#       formed the group and took one step, cold against each --preload (its zygote's own PSS
#       shown apart; the chroot wrappers' processes are not counted).
#
# Every time is CLOCK_BOOTTIME (process creation: /proc/PID/stat starttime, 10 ms ticks).
#
#   scripts/bench/restart.sh [--repeat 3] [--torch 1.13,2.6,2.14] [--only a,c]
#                            [--preload MODULES]... [--build-dir DIR] [--no-build]
#
# --only a runs the restart jobs, whose attempt 0 gives (b) too. --preload MODULES (a comma
# list; may be given again for more variants) replaces the default variant, `torch` (which
# pltrun's zygote takes with torch._dynamo where torch has it: torch 2.x's DDP and
# torch.optim import it, and with it sympy, on their first use: 1.5-2 s; see
# tests/bench/lazy_imports.py). When `pltrun --help` lists no --preload the variants are
# skipped and the tables say "not available in this build".
# TORCHRUN_FLAGS="--monitor-interval 0.1" passes more flags to torchrun (its defaults here:
# static rendezvous on a free port, as `torchrun --nproc-per-node 4 --max-restarts 1`).
# torchrun runs through tests/bench/torchrun_shim.py: torch 1.13's torchrun cannot start on
# Python 3.11 and Debian's torch 2.x agent store asks for libuv it lacks; see that file.
#
# Builds Release into build-bench/ (or --build-dir), prints markdown tables of medians (min,
# max), and leaves each run's files in a fresh temporary directory (named at the end). Exit
# status: 0 when every job ran and checked out, 1 otherwise (the tables still print).
set -euo pipefail
cd "$(dirname "$0")/../.."

repeat=3
torches="1.13,2.6,2.14"
only="a,c"
preloads=()
build_dir=$PWD/build-bench
build=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) repeat=${2:?--repeat needs a value}; shift 2 ;;
    --torch) torches=${2:?--torch needs a value}; shift 2 ;;
    --only) only=${2:?--only needs a value}; shift 2 ;;
    --preload) preloads+=("${2:?--preload needs a value}"); shift 2 ;;
    --build-dir) build_dir=$(realpath -m "${2:?--build-dir needs a value}"); shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench/restart.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "bench/restart.sh: --repeat '$repeat' is not a positive whole number" >&2; exit 2; }
for part in ${only//,/ }; do
  [[ $part =~ ^(a|b|c)$ ]] || { echo "bench/restart.sh: --only: '$part' is not a, b or c" >&2; exit 2; }
done
for version in ${torches//,/ }; do
  [[ $version =~ ^(1\.13|2\.6|2\.14)$ ]] || { echo "bench/restart.sh: --torch: '$version' is not 1.13, 2.6 or 2.14" >&2; exit 2; }
done
for list in ${preloads[@]+"${preloads[@]}"}; do
  [[ $list =~ ^[A-Za-z_][A-Za-z0-9_.]*(,[A-Za-z_][A-Za-z0-9_.]*)*$ ]] ||
    { echo "bench/restart.sh: --preload '$list' is not a comma list of module names" >&2; exit 2; }
done
wants() { [[ ",$only," == *",$1,"* ]]; }

# shellcheck source=scripts/bench/lib/bench-build.sh
source scripts/bench/lib/bench-build.sh
[[ $build == 1 ]] && bench_build "$build_dir" pltrun
pltrun=$build_dir/apps/pltrun
bench_require bench/restart.sh "$pltrun"
worker=$PWD/tests/bench/restart_train.py
shim=$PWD/tests/bench/torchrun_shim.py
has_preload=0
"$pltrun" --help 2>&1 | grep -q -- '--preload' && has_preload=1

results=$(mktemp -d /tmp/restart-bench-XXXXXX)
runs=$results/runs.tsv  # KIND TORCH MODE REP DIR STATUS (tab-separated), one line a job
: >"$runs"
mkdir -p "$results/tmp"
# The chroots see the results (each job's files, pltrun's run directory under TMPDIR) at the
# same path; tests/ is bound by the wrapper itself.
export PLTRUN_TORCH2_BINDS=$results TMPDIR=$results/tmp

launcher_pid=""
stop_launcher() {
  if [[ -n $launcher_pid ]]; then kill -KILL "$launcher_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  launcher_pid=""
}
trap stop_launcher EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
python_of() {
  case $1 in
    1.13) echo /usr/bin/python3 ;;
    2.6) echo "$PWD/tests/torch2/python3-trixie" ;;
    2.14) echo "$PWD/tests/torch2/python3-forky" ;;
  esac
}
suite_of() { case $1 in 2.6) echo trixie ;; 2.14) echo forky ;; esac; }

# start_launcher DIR CMD...: starts CMD (stdout/stderr to DIR/launcher.out/.err); sets
# launcher_pid and writes its creation time (seconds since boot) to DIR/launcher_start.
start_launcher() {
  local dir=$1
  shift
  "$@" >"$dir/launcher.out" 2>"$dir/launcher.err" &
  launcher_pid=$!
  python3 - "$launcher_pid" >"$dir/launcher_start" <<'PY'
import os, sys
after_name = open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")", 1)[1].split()
print(int(after_name[19]) / os.sysconf("SC_CLK_TCK"))
PY
}

# wait_launcher LIMIT_S: sets `ended` to the launcher's exit status, or "timeout" after
# LIMIT_S (then kills it).
wait_launcher() {
  local deadline=$(( $(now_ms) + $1 * 1000 ))
  while kill -0 "$launcher_pid" 2>/dev/null && (( $(now_ms) < deadline )); do sleep 0.1; done
  if kill -0 "$launcher_pid" 2>/dev/null; then
    stop_launcher
    ended=timeout
    return
  fi
  ended=0
  wait "$launcher_pid" || ended=$?
  launcher_pid=""
}

# The launcher command for MODE (pltrun, "pltrun --preload LIST", torchrun) and torch
# VERSION, with NPROC workers and max RESTARTS, as words in `launch`; the worker's own
# arguments follow.
launch_command() {
  local mode=$1 version=$2 nproc=$3 restarts=$4 python
  python=$(python_of "$version")
  case $mode in
    torchrun)
      # shellcheck disable=SC2206  # TORCHRUN_FLAGS: more flags for torchrun, split on blanks
      launch=("$python" "$shim" --nnodes 1 --master_addr 127.0.0.1 --master_port "$(free_port)"
              --nproc_per_node "$nproc" --max_restarts "$restarts" ${TORCHRUN_FLAGS:-} "$worker") ;;
    pltrun) launch=(env PYTHON_EXEC="$python" "$pltrun" --nproc-per-node "$nproc" --max-restarts "$restarts" "$worker") ;;
    "pltrun --preload "*)
      launch=(env PYTHON_EXEC="$python" "$pltrun" --preload "${mode#pltrun --preload }"
              --nproc-per-node "$nproc" --max-restarts "$restarts" "$worker") ;;
  esac
}

# The launchers compared, one a line.
modes_of() {
  local list
  echo pltrun
  local lists=("${preloads[@]}")
  [[ ${#lists[@]} == 0 ]] && lists=(torch)
  for list in "${lists[@]}"; do echo "pltrun --preload $list"; done
  echo torchrun
}

slug() { echo "$1" | tr -c 'A-Za-z0-9._\n' '-'; }

# restart_job VERSION MODE REP: one 4-rank job; (a) with a crash, (b) alone without.
restart_job() {
  local version=$1 mode=$2 rep=$3 dir
  dir=$results/a/$version/$(slug "$mode")/$rep
  mkdir -p "$dir"
  local crash=(--crash-step 3) restarts=1
  wants a || { crash=(); restarts=0; }
  launch_command "$mode" "$version" 4 "$restarts"
  start_launcher "$dir" "${launch[@]}" "$dir" --steps 5 "${crash[@]}"
  wait_launcher 300
  printf 'a\t%s\t%s\t%s\t%s\t%s\n' "$version" "$mode" "$rep" "$dir" "$ended" >>"$runs"
  echo "   torch $version, $mode, run $rep: exit $ended" >&2
}

# The PSS (kB) of PID and whether it is a python interpreter, as "PSS COMM".
pss_of() { echo "$(awk '/^Pss:/ { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0) $(cat "/proc/$1/comm" 2>/dev/null)"; }
descendants() {
  local child children
  children=$(cat /proc/"$1"/task/*/children 2>/dev/null || true)
  for child in $children; do
    echo "$child"
    descendants "$child"
  done
}

held() { if [[ -e $1/held.jsonl ]]; then wc -l <"$1/held.jsonl"; else echo 0; fi; }  # workers holding in DIR

# memory_job VERSION MODE NPROC REP: NPROC workers that hold after one step; writes
# DIR/pss: "worker PID KB" for each worker, "zygote PID KB" for other python processes.
memory_job() {
  local version=$1 mode=$2 nproc=$3 rep=$4 dir status="" pid deadline
  dir=$results/c/$version/$(slug "$mode")/$nproc-$rep
  mkdir -p "$dir"
  launch_command "$mode" "$version" "$nproc" 0
  start_launcher "$dir" "${launch[@]}" "$dir" --steps 1 --hold
  deadline=$(( $(now_ms) + 300000 ))
  while (( $(held "$dir") < nproc )) && (( $(now_ms) < deadline )) && kill -0 "$launcher_pid" 2>/dev/null; do
    sleep 0.2
  done
  if (( $(held "$dir") < nproc )); then
    status="not all $nproc workers held"
  else
    sleep 1  # the workers' last pages settle (gloo's threads, the allocator)
    local workers
    workers=" $(python3 -c 'import json, sys; print(" ".join(str(json.loads(l)["pid"]) for l in open(sys.argv[1])))' "$dir/held.jsonl") "
    : >"$dir/pss"
    for pid in $(descendants "$launcher_pid"); do
      read -r kb comm <<<"$(pss_of "$pid")"
      if [[ $workers == *" $pid "* ]]; then
        echo "worker $pid $kb" >>"$dir/pss"
      elif [[ $comm == python* ]]; then
        echo "zygote $pid $kb" >>"$dir/pss"
      fi
    done
    kill -TERM "$launcher_pid" 2>/dev/null || true
  fi
  wait_launcher 60
  status=${status:-ok}
  # pltrun ends with 128 + 15 when told to stop, as torchrun does.
  [[ $status == ok && $ended != 0 && $ended != 143 ]] && status="exit $ended after SIGTERM"
  printf 'c\t%s\t%s\t%s\t%s\t%s\n' "$version" "$mode" "$nproc-$rep" "$dir" "$status" >>"$runs"
  echo "   torch $version, $mode, $nproc workers, run $rep: $status" >&2
}

note_load() { printf 'load\t%s\t%s\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$runs"; }

available() {  # VERSION: 0 when its interpreter can run here, else says why
  local suite
  suite=$(suite_of "$1")
  [[ -z $suite ]] && return 0
  bash scripts/chroot/torch.sh "$suite" ready 2>/dev/null && return 0
  printf 'missing\t%s\tthe %s chroot is not built (bash scripts/chroot/torch.sh %s ensure)\n' "$1" "$suite" "$suite" >>"$runs"
  return 1
}

for version in ${torches//,/ }; do
  available "$version" || continue
  mapfile -t modes < <(modes_of)
  if wants a || wants b; then
    note_load "$version restart"
    echo "== torch $version: crash -> every rank's first step after the restart, 4 ranks, $repeat runs" >&2
    for rep in $(seq "$repeat"); do  # the modes interleaved, so a load change hits them alike
      for mode in "${modes[@]}"; do
        if [[ $mode == "pltrun --preload"* && $has_preload == 0 ]]; then continue; fi
        restart_job "$version" "$mode" "$rep"
      done
    done
  fi
  if wants c; then
    note_load "$version memory"
    echo "== torch $version: PSS of 4 and 8 workers after one step, $repeat runs" >&2
    for rep in $(seq "$repeat"); do
      for nproc in 4 8; do
        for mode in "${modes[@]}"; do
          [[ $mode == torchrun ]] && continue
          if [[ $mode == "pltrun --preload"* && $has_preload == 0 ]]; then continue; fi
          memory_job "$version" "$mode" "$nproc" "$rep"
        done
      done
    done
  fi
done
note_load end

failed=0
python3 "$PWD/tests/bench/restart_report.py" "$runs" "$has_preload" "$(nproc)" \
  "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)" "$only" \
  "scripts/bench/restart.sh --repeat $repeat --torch $torches --only $only${preloads[*]/#/ --preload }" || failed=1
echo
echo "raw results: $results (runs.tsv; each job's stamps.jsonl, launcher.out/.err, pss)"
exit "$failed"
