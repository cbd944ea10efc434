#!/usr/bin/env bash
# What one heartbeat costs the worker that sends it (PLTRUN_HEARTBEAT, README "Hangs"):
#
#   (1) C++: pltrun::heartbeat(step) (tests/bench/heartbeat_bench), 1,000,000 calls, against
#       a receiver that drains, a full one (every send fails with EAGAIN) and none
#       (PLTRUN_HEARTBEAT unset), in ns per call;
#   (2) Python (Debian's /usr/bin/python3), in µs per call:
#       one-liner  the README's `socket.socket(AF_UNIX, SOCK_DGRAM).sendto(str(step).encode(),
#                  path)`, a new socket every call (100,000 calls; it blocks when the
#                  receiver falls behind, so it runs against a draining receiver only);
#       reused     one socket made once, `SOCK_DGRAM | SOCK_NONBLOCK`, `s.sendto(...)` in
#                  try/except BlockingIOError (1,000,000 calls), against a draining
#                  receiver and a full one;
#   (3) pltrun.heartbeat(step), the Python package (lib/python/pltrun), in ns per call
#       (tests/bench/python_heartbeat_bench.py): as a worker of the real pltrun
#       (--stall-timeout 60, so pltrun reads the socket), 1,000,000 calls back to back and
#       2,000 calls 1 ms apart each timed alone (their median); and outside pltrun (a no-op).
#
# Each figure is the median of --runs runs (default 5), each run's own figure listed after
# it. The Python receiver is a thread draining the socket in a process of its own, as
# pltrun is: a thread in the sender's process would time Python's GIL hand-offs, not the
# send. Every socket lives in a fresh temporary directory, removed at the end.
#
#   scripts/bench/heartbeat.sh [--runs 5] [--calls 1000000] [--build-dir DIR] [--no-build]
#
# Builds Release into build-bench/ (or --build-dir) unless --no-build. Run on an otherwise
# idle machine: every figure is one or two system calls plus the scheduler's noise.
set -euo pipefail
cd "$(dirname "$0")/../.."

runs=5
calls=1000000
build_dir=$PWD/build-bench
build=1
python=/usr/bin/python3  # Debian's, as the other benchmarks use
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs=${2:?--runs needs a value}; shift 2 ;;
    --calls) calls=${2:?--calls needs a value}; shift 2 ;;
    --build-dir) build_dir=$(realpath -m "${2:?--build-dir needs a value}"); shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "bench/heartbeat.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for value in "$runs" "$calls"; do
  [[ $value =~ ^[1-9][0-9]*$ ]] || { echo "bench/heartbeat.sh: '$value' is not a positive whole number (see --help)" >&2; exit 2; }
done

# shellcheck source=scripts/bench/lib/bench-build.sh
source scripts/bench/lib/bench-build.sh
[[ $build == 1 ]] && bench_build "$build_dir" heartbeat_bench pltrun
bench=$build_dir/tests/heartbeat_bench
pltrun=$build_dir/apps/pltrun
bench_require bench/heartbeat.sh "$bench" "$pltrun"

echo "== C++: pltrun::heartbeat(step), $calls calls per run"
"$bench" --calls "$calls" --runs "$runs"

echo "== Python ($("$python" --version 2>&1)): one heartbeat per call"
"$python" - "$runs" "$calls" <<'PYTHON'
import os, socket, statistics, sys, tempfile, threading, time

runs, calls = int(sys.argv[1]), int(sys.argv[2])
one_liner_calls = max(1, calls // 10)


def receiver(path, drain):
    """A process that binds `path` and, with `drain`, reads every datagram in a thread
    until told to stop on its stdin; without, it reads nothing (its queue fills)."""
    ready_read, ready_write = os.pipe()
    stop_read, stop_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(ready_read)
            os.close(stop_write)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(path)
            stopped = threading.Event()

            def loop():
                while not stopped.is_set():
                    try:
                        sock.recv(64)
                    except (socket.timeout, BlockingIOError):
                        pass
            if drain:
                sock.settimeout(0.05)
                thread = threading.Thread(target=loop)
                thread.start()
            os.write(ready_write, b"1")
            os.read(stop_read, 1)
            stopped.set()
            if drain:
                thread.join()
            status = 0
        finally:
            os._exit(status)
    os.close(ready_write)
    os.close(stop_read)
    ready = os.read(ready_read, 1)
    os.close(ready_read)
    if not ready:
        os.waitpid(pid, 0)
        sys.exit(f"bench/heartbeat.sh: the receiver could not bind {path}")

    def stop():
        os.close(stop_write)
        os.waitpid(pid, 0)
        os.unlink(path)
    return stop


def one_liner(path, n):
    start = time.perf_counter_ns()
    for step in range(n):
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(str(step).encode(), path)
    return (time.perf_counter_ns() - start) / n / 1000


def reused(path, n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK)
    start = time.perf_counter_ns()
    for step in range(n):
        try:
            s.sendto(str(step).encode(), path)
        except BlockingIOError:
            pass
    elapsed = time.perf_counter_ns() - start
    s.close()
    return elapsed / n / 1000


def measure(name, send, n, drain, note):
    with tempfile.TemporaryDirectory(prefix="pltrun-heartbeat-bench-") as directory:
        path = os.path.join(directory, "beat.sock")
        stop = receiver(path, drain)
        try:
            if not drain:  # fill the queue first
                reused(path, 1000)
            times = [send(path, n) for _ in range(runs)]
        finally:
            stop()
    print(f"python {name:<18} {statistics.median(times):6.2f} µs per call (median of {runs} runs of {n} calls; "
          f"runs: {' '.join(f'{t:.2f}' for t in times)}); {note}", flush=True)


measure("one-liner drained", one_liner, one_liner_calls, True, "a new socket per call, blocking send")
measure("reused drained", reused, calls, True, "one non-blocking socket")
measure("reused full", reused, calls, False, "one non-blocking socket; every send fails with EAGAIN")
PYTHON

echo "== Python ($("$python" --version 2>&1)): pltrun.heartbeat(step), the package in lib/python"
PYTHONPATH=$PWD/lib/python PYTHON_EXEC=$python "$pltrun" -q --nproc-per-node 1 --stall-timeout 60 \
  tests/bench/python_heartbeat_bench.py in-pltrun "$runs" "$calls"
env -u PLTRUN_HEARTBEAT PYTHONPATH="$PWD/lib/python" "$python" tests/bench/python_heartbeat_bench.py outside "$runs" "$calls"
