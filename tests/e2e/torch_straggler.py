"""A straggler against the next attempt (torch 1.13 and 2.x): `torch_straggler.py DIR`.

Attempt 0 (TORCHELASTIC_RESTART_COUNT 0): every rank joins the process group (env://),
counts itself in the workers' store under a raw key (no prefix, as torch >= 2.2's env://
store has none), and passes a barrier; then the last rank fails, and rank 0 ignores SIGTERM
and keeps writing the key the next attempt reads, reconnecting to MASTER_ADDR:MASTER_PORT
whenever its connection is closed, until the launcher SIGKILLs it. It records in
DIR/straggler.json what it did after SIGTERM.

Attempt 1: every rank joins the process group again and reads those raw keys: it writes
DIR/seen_<rank>.json with the counts it finds (0 when attempt 0's writes are out of reach).
Every worker writes its pid to DIR/pids/attempt<N>_rank<R> first.
"""

import datetime
import json
import os
import signal
import sys
import time

import torch.distributed as dist
from torch_exit import destroy_and_exit


def raw_store(timeout_seconds):
    # torch.distributed.rendezvous's TCPStore: the chroot's test-only sitecustomize gives
    # torch 2.6 the legacy transport there; torch 1.13 has only that one.
    store_class = sys.modules["torch.distributed.rendezvous"].TCPStore
    return store_class(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                       timeout=datetime.timedelta(seconds=timeout_seconds))


def write_json_atomically(value, path):
    temporary = f"{path}.tmp.{os.getpid()}"
    with open(temporary, "w") as file:
        json.dump(value, file)
    os.replace(temporary, path)


def straggle(directory):
    """Rank 0 of attempt 0: outlive SIGTERM, writing into whatever store it can reach."""
    report = {"sigterm": False, "writes_after_sigterm": 0, "failures_after_sigterm": 0}
    path = os.path.join(directory, "straggler.json")

    def on_sigterm(signum, frame):
        report["sigterm"] = True

    signal.signal(signal.SIGTERM, on_sigterm)
    store = raw_store(5)
    while True:
        try:
            if store is None:
                store = raw_store(1)
            store.add("straggler_writes", 1)
            store.set("straggler", "attempt 0 was here")
            if report["sigterm"]:
                report["writes_after_sigterm"] += 1
        except Exception:  # closed connection, refused reconnect: try again
            store = None
            if report["sigterm"]:
                report["failures_after_sigterm"] += 1
        if report["sigterm"]:
            write_json_atomically(report, path)
        time.sleep(0.01)


def main():
    directory = sys.argv[1]
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    os.makedirs(os.path.join(directory, "pids"), exist_ok=True)
    with open(os.path.join(directory, "pids", f"attempt{attempt}_rank{rank}"), "w") as file:
        file.write(str(os.getpid()))

    dist.init_process_group("gloo")
    store = raw_store(30)
    if attempt == 0:
        store.add("attempt0_ranks", 1)
        dist.barrier()
        if rank == world_size - 1:
            sys.exit(3)  # the failure that ends attempt 0
        if rank == 0:
            straggle(directory)
        time.sleep(3600)  # the other ranks wait to be stopped
    seen = {name: store.add(name, 0) for name in ("attempt0_ranks", "straggler_writes")}
    write_json_atomically(seen, os.path.join(directory, f"seen_{rank}.json"))
    dist.barrier()
    destroy_and_exit()


if __name__ == "__main__":
    main()
