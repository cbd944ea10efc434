"""N torch processes form a gloo process group through an existing TCPStore server (they
are all clients: nobody opens a second port) and all-reduce.
Usage: torch_store_gloo.py PORT WORLD_SIZE [--rank R]."""

import datetime
import subprocess
import sys


def worker(port, world_size, rank):
    import torch
    import torch.distributed as dist
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=30))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    value = torch.tensor([float(rank + 1)])
    dist.all_reduce(value)
    assert value.item() == world_size * (world_size + 1) / 2, value
    dist.barrier()
    dist.destroy_process_group()


def main():
    port, world_size = int(sys.argv[1]), int(sys.argv[2])
    if "--rank" in sys.argv:
        worker(port, world_size, int(sys.argv[sys.argv.index("--rank") + 1]))
        return
    ranks = [subprocess.Popen([sys.executable, __file__, str(port), str(world_size), "--rank", str(rank)])
             for rank in range(world_size)]
    codes = [rank.wait(timeout=120) for rank in ranks]
    if any(codes):
        sys.exit(f"ranks failed: {codes}")
    print(f"all_reduce ok on {world_size} ranks")


if __name__ == "__main__":
    main()
