"""torch's FileTimer watchdog under pltrun (tests/e2e/stall_test.cc): every rank wraps each
step in `timer.expires(after=1)` through torch's own FileTimerClient at
TORCHELASTIC_TIMER_FILE; rank 1 overruns step 2 and must be killed (SIGKILL, the client's
default) by the launcher. Rank 0 finishes and prints "done 0 cold", or "done 0 forked" when
torch was imported before the script began (forked from pltrun's zygote, --preload torch)."""

import sys

FORKED = "torch" in sys.modules  # before this script imports it

import os  # noqa: E402
import time  # noqa: E402

import torch.distributed.elastic.timer as timer  # noqa: E402

rank = int(os.environ["RANK"])
timer.configure(timer.FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
for step in range(5):
    with timer.expires(after=1, scope=f"step{step}"):
        time.sleep(30 if (rank == 1 and step == 2) else 0.05)
print("done", rank, "forked" if FORKED else "cold", flush=True)
