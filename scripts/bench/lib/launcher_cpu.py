"""What the benchmarks of pltrun's own cost share (bench/stall-watch.sh, bench/metrics.sh):
the worker that sends heartbeats, and pltrun's CPU time read from /proc. Imported from the
repository root's scripts/bench/lib, never run."""
import os


def worker_source(seconds, rate):
    """A Python worker that for `seconds` sends `rate` heartbeats a second, each its step
    counter, on one non-blocking socket to $PLTRUN_HEARTBEAT; with the argument `silent` it
    keeps the same pace and sends nothing."""
    return f"""
import os, socket, sys, time
beat = sys.argv[1:] != ["silent"]
path = os.environ["PLTRUN_HEARTBEAT"]
sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK)
start = time.monotonic()
due, step = start, 0
while due - start < {seconds}:
    if beat:
        try:
            sender.sendto(str(step).encode(), path)
        except BlockingIOError:
            pass
    step += 1
    due += 1.0 / {rate}
    pause = due - time.monotonic()
    if pause > 0:
        time.sleep(pause)
"""


def thread_cpu_seconds(pid):
    """The CPU time of process `pid` alone, its threads together (not its children): each
    thread's time on a CPU from /proc/PID/task/*/schedstat, in nanoseconds (utime and stime
    count whole clock ticks)."""
    total = 0.0
    for thread in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{thread}/schedstat") as file:
            total += int(file.read().split()[0]) / 1e9
    return total
