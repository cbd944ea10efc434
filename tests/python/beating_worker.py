"""A pltrun worker that sends pltrun.heartbeat() every 20 ms for SECONDS; the rank named by
--stop-rank stops beating after its third heartbeat (a hang: it sleeps on, then exits 0, so
a run whose heartbeats never reached pltrun ends with 0, not 124).

    beating_worker.py SECONDS [--stop-rank N] [--with-step]
"""

import argparse
import os
import time

import pltrun

parser = argparse.ArgumentParser()
parser.add_argument("seconds", type=float)
parser.add_argument("--stop-rank", type=int, default=-1)
parser.add_argument("--with-step", action="store_true")
args = parser.parse_args()

rank = int(os.environ["RANK"])
deadline = time.monotonic() + args.seconds
beats = 0
while time.monotonic() < deadline:
    if rank == args.stop_rank and beats == 3:
        time.sleep(max(0.0, deadline - time.monotonic()))  # hung: no heartbeat any more
        break
    pltrun.heartbeat(beats if args.with_step else None)
    beats += 1
    time.sleep(0.02)
print(f"rank {rank} sent {beats} heartbeats", flush=True)
