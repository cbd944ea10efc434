"""What pltrun.heartbeat() costs the worker (scripts/bench/heartbeat.sh): run as a pltrun
worker (PLTRUN_HEARTBEAT set, pltrun reading the socket) or outside pltrun (a no-op).

    python_heartbeat_bench.py LABEL RUNS CALLS

Prints one line per figure, each the median of RUNS runs, each run's own figure after it:
  back-to-back  CALLS calls in a loop, the loop's time / CALLS (under pltrun most of these
                find the socket's queue full, as a worker beating a million times a second
                would: pltrun reads in batches);
  paced         (under pltrun only) min(CALLS, 2000) calls 1 ms of busy loop apart, each
                timed alone, the median call: every beat finds room, as a training loop's
                do (includes one perf_counter_ns, about 50 ns).
"""

import os
import statistics
import sys
import time
from typing import List

import pltrun

label, runs, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def back_to_back(n: int) -> float:
    beat = pltrun.heartbeat
    start = time.perf_counter_ns()
    for step in range(n):
        beat(step)
    return (time.perf_counter_ns() - start) / n


def paced(n: int) -> float:
    beat, clock, times = pltrun.heartbeat, time.perf_counter_ns, []
    for step in range(n):
        start = clock()
        beat(step)
        end = clock()
        times.append(end - start)
        while clock() - end < 1_000_000:  # busy, as a training step is: no sleep's cold caches
            pass
    return statistics.median(times)


def report(name: str, figures: List[float], note: str) -> None:
    listed = " ".join(f"{figure:.0f}" for figure in figures)
    print(f"python pltrun.heartbeat {label:<8} {name:<12} {statistics.median(figures):6.0f} ns per call "
          f"(median of {runs} runs; runs: {listed}); {note}", flush=True)


back_to_back(min(calls, 10000))  # the first call makes the socket; warm up
report("back-to-back", [back_to_back(calls) for _ in range(runs)], f"{calls} calls a run")
if os.environ.get("PLTRUN_HEARTBEAT"):
    paced_calls = min(calls, 2000)
    report("paced", [paced(paced_calls) for _ in range(runs)], f"{paced_calls} calls 1 ms apart, median call")
