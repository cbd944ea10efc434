"""Real PyTorch workers (torch 1.13 and 2.x, CPU, gloo) for the
interoperability tests. `allreduce DIR`: join the process group from pltrun's environment
(env://) and all-reduce; `raise`: fail inside torch's @record, which writes the error
file pltrun reports; `--local_rank=N deepspeed DIR`: a DeepSpeed-style script, whose
argparse requires the --local_rank its launcher passes first, then all-reduces."""

import argparse
import os
import sys

# Whether torch was imported before this script began: a worker forked from pltrun's zygote
# (--preload torch).
FORKED = "torch" in sys.modules

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch_exit import destroy_and_exit  # noqa: E402
from torch.distributed.elastic.multiprocessing.errors import record  # noqa: E402


def allreduce(directory, fail_first_attempt):
    dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from pltrun
    rank, world_size = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"]) and world_size == int(os.environ["WORLD_SIZE"])
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    gathered = [torch.zeros(1) for _ in range(world_size)]
    dist.all_gather(gathered, torch.tensor([float(rank)]))
    if fail_first_attempt and rank == 1 and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
        sys.exit(5)  # the launcher restarts the group; the next attempt meets under a new prefix
    with open(os.path.join(directory, f"result_{rank}"), "w") as file:
        file.write(f"{value.item():g} {[int(t.item()) for t in gathered]} "
                   f"agent-store={os.environ['TORCHELASTIC_USE_AGENT_STORE']}")
    dist.barrier()
    destroy_and_exit()


def deepspeed_style(arguments):
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, required=True)  # as DeepSpeed's examples declare it
    parser.add_argument("mode")
    parser.add_argument("directory")
    args = parser.parse_args(arguments)
    assert args.local_rank == int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")
    value = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(value)
    with open(os.path.join(args.directory, f"result_{dist.get_rank()}"), "w") as file:
        file.write(f"{value.item():g} local_rank={args.local_rank}")
    dist.barrier()
    destroy_and_exit()


@record
def main():
    if sys.argv[1].startswith("--local_rank="):
        deepspeed_style(sys.argv[1:])
    elif sys.argv[1] == "allreduce":
        allreduce(sys.argv[2], "--fail-first-attempt" in sys.argv)
    elif sys.argv[1] == "raise":
        raise ValueError(f"bad batch on rank {os.environ['RANK']} ({'forked' if FORKED else 'cold'})")


if __name__ == "__main__":
    main()
