"""Real PyTorch workers (torch 1.13 and 2.x, CPU, gloo) for
tests/e2e/torch_launcher_cases_test.cc: the jobs of torch's own launcher tests
(test/distributed/launcher/test_run.py) started by pltrun instead of torchrun.

  join DIR env|tcp  join the process group through init_method "env://", or through
                    "tcp://$MASTER_ADDR:$MASTER_PORT" with rank and world size from the
                    environment; every rank marks its own slot in an all-reduce; then write
                    DIR/rank_<RANK>.json with what the worker saw
  launched FILE     write str(torch.distributed.is_torchelastic_launched()) to FILE
  chatter           one line on stdout and one on stderr, each naming the rank
  raise             fail inside torch's @record, which writes the error file pltrun reports
"""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch_exit import destroy_and_exit


def join(directory, how):
    if how == "env":
        url = "env://"
        dist.init_process_group("gloo", init_method=url)
    else:
        url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        dist.init_process_group("gloo", init_method=url, rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    rank, world_size = dist.get_rank(), dist.get_world_size()
    slots = torch.zeros(world_size)
    slots[rank] = 1.0
    dist.all_reduce(slots)  # all ones when every rank took part exactly once
    seen = {
        "rank": rank,
        "world_size": world_size,
        "slots": [int(slot) for slot in slots.tolist()],
        "init_method": url,
        "launched": dist.is_torchelastic_launched(),
        "pid": os.getpid(),
    }
    for name in ("RANK", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                 "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_USE_AGENT_STORE"):
        seen[name] = os.environ.get(name, "<unset>")
    path = os.path.join(directory, f"rank_{rank}.json")
    with open(path + ".tmp", "w") as file:
        json.dump(seen, file)
    os.rename(path + ".tmp", path)  # whole or absent
    dist.barrier()
    destroy_and_exit()


@record
def main():
    mode = sys.argv[1]
    if mode == "join":
        join(sys.argv[2], sys.argv[3])
    elif mode == "launched":
        with open(sys.argv[2], "w") as file:
            file.write(str(dist.is_torchelastic_launched()))
    elif mode == "chatter":
        print(f"creating output of rank {os.environ['RANK']}", flush=True)
        print(f"warning from rank {os.environ['RANK']}", file=sys.stderr, flush=True)
    elif mode == "raise":
        raise RuntimeError(f"worker {os.environ['RANK']} gives up")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
