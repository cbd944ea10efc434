"""Workers for the metrics tests (tests/e2e/metrics_test.cc), on Debian's python3 without
torch: `metrics_workers.py DIR`. Every rank sends its step counter to $PLTRUN_HEARTBEAT
every 50 ms (the README's one-liner) and writes its pid to DIR/pid_<restart>_<rank> first.
Files the test creates in DIR steer them:
- DIR/crash: in the first attempt or round (TORCHELASTIC_RESTART_COUNT 0), rank 1 exits
  with code 3;
- DIR/silence: rank 3 stops beating, and lives on;
- DIR/done: every rank exits with 0.
"""

import os
import socket
import sys
import time

directory = sys.argv[1]
rank = int(os.environ["RANK"])
restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
with open(os.path.join(directory, f"pid_{restart}_{rank}.tmp"), "w") as pid_file:
    pid_file.write(str(os.getpid()))
os.rename(os.path.join(directory, f"pid_{restart}_{rank}.tmp"), os.path.join(directory, f"pid_{restart}_{rank}"))

beats = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
step = 0
deadline = time.monotonic() + 300  # never outlive a test that lost track of us
while time.monotonic() < deadline:
    if os.path.exists(os.path.join(directory, "done")):
        sys.exit(0)
    if rank == 1 and restart == 0 and os.path.exists(os.path.join(directory, "crash")):
        sys.exit(3)
    if not (rank == 3 and os.path.exists(os.path.join(directory, "silence"))):
        beats.sendto(str(step).encode(), os.environ["PLTRUN_HEARTBEAT"])
        step += 1
    time.sleep(0.05)
sys.exit(1)
