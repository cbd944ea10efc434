#!/usr/bin/env bash
# What watching heartbeats costs pltrun itself (README "Hangs"): the CPU time of the pltrun
# process alone (its threads' time on a CPU from /proc/PID/task/*/schedstat, in nanoseconds:
# utime + stime count whole clock ticks; not its workers') over a 10 s job of 4
# workers that each send RATE heartbeats a second (default 1,000), against the same job whose
# workers send none; --stall-timeout 30 in both. Runs interleaved (beating, silent, beating, ...); the
# median of each, and per heartbeat the difference divided by the heartbeats sent.
#
#   scripts/bench/stall-watch.sh [RUNS [RATE]]   (default 3 and 1000; PLTRUN=path picks the binary)
#
# The workers are Debian's /usr/bin/python3 with one non-blocking socket each.
set -euo pipefail
cd "$(dirname "$0")/../.."
pltrun=$(realpath "${PLTRUN:-build/apps/pltrun}")
runs=${1:-3}
rate=${2:-1000}
[[ -x $pltrun ]] || { echo "bench/stall-watch.sh: no pltrun at $pltrun: bash scripts/build.sh pltrun" >&2; exit 2; }
/usr/bin/python3 - "$pltrun" "$runs" "$rate" <<'PYTHON'
import os, statistics, subprocess, sys, tempfile, time

sys.dont_write_bytecode = True  # no __pycache__ left in the tree
sys.path.insert(0, "scripts/bench/lib")
from launcher_cpu import thread_cpu_seconds, worker_source

pltrun, runs, RATE = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
SECONDS, WORKERS = 10.0, 4
WORKER = worker_source(SECONDS, RATE)

def launcher_cpu_seconds(mode):
    with tempfile.TemporaryDirectory() as directory:
        script = os.path.join(directory, "worker.py")
        with open(script, "w") as file:
            file.write(WORKER)
        job = subprocess.Popen([pltrun, "-q", "--nproc-per-node", str(WORKERS), "--stall-timeout", "30", "--no-python",
                                "/usr/bin/python3", script, mode], stdout=subprocess.DEVNULL)
        time.sleep(SECONDS - 0.3)  # just before the workers end: pltrun's own time so far
        cpu = thread_cpu_seconds(job.pid)
        if job.wait(timeout=60) != 0:
            sys.exit(f"bench/stall-watch.sh: the {mode} job failed")
        return cpu

samples = {"beat": [], "silent": []}
for _ in range(runs):
    for mode in samples:
        samples[mode].append(launcher_cpu_seconds(mode))
beating, silent = statistics.median(samples["beat"]), statistics.median(samples["silent"])
heartbeats = WORKERS * RATE * (SECONDS - 0.3)
print(f"pltrun's own CPU over {SECONDS - 0.3:.1f} s, {WORKERS} workers, medians of {runs}:")
print(f"  beating at {RATE} Hz each: {beating * 1000:.0f} ms (runs: {', '.join(f'{v * 1000:.0f}' for v in samples['beat'])})")
print(f"  silent:                {silent * 1000:.0f} ms (runs: {', '.join(f'{v * 1000:.0f}' for v in samples['silent'])})")
print(f"  per heartbeat: {(beating - silent) / heartbeats * 1e6:.2f} µs of pltrun's CPU "
      f"({(beating - silent) / (SECONDS - 0.3) * 100:.1f} % of one core at {WORKERS * RATE} heartbeats/s)")
PYTHON
