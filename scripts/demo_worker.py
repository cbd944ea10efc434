"""Demo worker: reads the environment pltrun gives it, takes its shard of a dataset the way
torch's DistributedSampler does (padding by wrapping around so every rank gets the same
number of samples), and can crash on purpose to show restarts and the failure report.
Standard library only, so the demo needs no PyTorch."""

import argparse
import json
import os
import sys
import time
import traceback


def shard(num_samples, rank, world_size):
    per_rank = -(-num_samples // world_size)  # ceiling division
    indices = list(range(num_samples))
    indices += indices[: per_rank * world_size - num_samples]  # wrap around to pad
    return indices[rank::world_size]


def record_error(error):
    """Write the error the way torch's @record does, so pltrun's report can show it."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path:
        return
    with open(path, "w") as file:
        json.dump({"message": {"message": f"{type(error).__name__}: {error}",
                               "extraInfo": {"py_callstack": traceback.format_exc(),
                                             "timestamp": str(int(time.time()))}}}, file)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--crash-rank", type=int, default=-1)
    parser.add_argument("--crash-attempts", type=int, default=0)
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    print(f"rank {rank} of {world_size} (local rank {os.environ['LOCAL_RANK']}, attempt {attempt}, "
          f"master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']})")

    mine = shard(args.samples, rank, world_size)
    total = 0
    for step, index in enumerate(mine, 1):
        total += index
        if rank == 0 and step % 50 == 0:
            sys.stdout.write(f"\rprogress {step}/{len(mine)}")
            sys.stdout.flush()
            time.sleep(0.02)
        if rank == args.crash_rank and attempt < args.crash_attempts and step == len(mine) // 2:
            try:
                raise RuntimeError(f"simulated crash of rank {rank} at sample {index}")
            except RuntimeError as error:
                record_error(error)
                traceback.print_exc()
                sys.exit(3)
    if rank == 0:
        print()
    print(f"rank {rank}: {len(mine)} samples, first {mine[:3]}, sum {total}")


if __name__ == "__main__":
    main()
