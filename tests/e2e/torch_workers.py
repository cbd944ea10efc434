"""Real PyTorch workers (Debian's python3-torch: torch 1.13, CPU, gloo) for the
interoperability tests. `allreduce DIR`: join the process group from pltrun's environment
(env://) and all-reduce; `raise`: fail inside torch's @record, which writes the error
file pltrun reports."""

import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


def allreduce(directory):
    dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from pltrun
    rank, world_size = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"]) and world_size == int(os.environ["WORLD_SIZE"])
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    gathered = [torch.zeros(1) for _ in range(world_size)]
    dist.all_gather(gathered, torch.tensor([float(rank)]))
    with open(os.path.join(directory, f"result_{rank}"), "w") as file:
        file.write(f"{value.item():g} {[int(t.item()) for t in gathered]}")
    dist.barrier()
    dist.destroy_process_group()


@record
def main():
    if sys.argv[1] == "allreduce":
        allreduce(sys.argv[2])
    elif sys.argv[1] == "raise":
        raise ValueError(f"bad batch on rank {os.environ['RANK']}")


if __name__ == "__main__":
    main()
