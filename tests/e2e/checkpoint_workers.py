"""Workers that resume from a checkpoint, for the Prometheus tests (e2e/metrics_prometheus_test.cc,
metrics_flood_test.cc; on Debian's python3 without torch): each beats its step every 50 ms
through PLTRUN_HEARTBEAT, which --metrics alone must set; rank 0 saves a checkpoint (the step)
every 20 steps, and a restarted attempt resumes from it, redoing the steps since, as a
training job would (goodput's redone steps; the metrics tests' metrics_workers.py start again from 0). The
test steers them with files in DIR:
- DIR/crash: in the first attempt, rank 3 exits 3 (the job restarts: cause "exit");
- DIR/stall: rank 2 stops beating, alive and silent, until DIR/finish;
- DIR/finish: every rank ends with status 0.
Usage: checkpoint_workers.py DIR
"""

import os
import socket
import sys
import time

control = sys.argv[1]
rank = int(os.environ["RANK"])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
heartbeat = os.environ["PLTRUN_HEARTBEAT"]  # a KeyError here: --metrics did not set it
beats = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
checkpoint = os.path.join(control, "checkpoint")


def there(name):
    return os.path.exists(os.path.join(control, name))


step = int(open(checkpoint).read()) if attempt > 0 and os.path.exists(checkpoint) else 0
deadline = time.monotonic() + 300  # never outlive a test that lost track of us
while not there("finish"):
    if time.monotonic() > deadline:
        sys.exit(1)
    if attempt == 0 and rank == 3 and there("crash"):
        sys.exit(3)
    if not (rank == 2 and there("stall")):
        step += 1
        beats.sendto(str(step).encode(), heartbeat)
        if rank == 0 and step % 20 == 0:
            with open(checkpoint + ".new", "w") as saved:
                saved.write(str(step))
            os.replace(checkpoint + ".new", checkpoint)
    time.sleep(0.05)
