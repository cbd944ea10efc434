"""What the first training step of a DDP job imports after `import torch`, and what it costs
(issue 43: which modules a zygote's --preload needs for a fast first step). One process, a
gloo group of one over a FileStore (no TCPStore, so no libuv question), the same model,
optimizer and checkpoint as tests/bench/restart_train.py:

    python3 lazy_imports.py DIR [--order ddp-first|optimizer-first] [--preimport MOD,MOD]

For each phase (import torch, --preimport, group, optimizer, DDP, torch.save, torch.load,
forward, backward, optimizer step, and a second step) prints its seconds, how many modules
it imported and their top two name levels, and the modules that started each import chain
(the first new module whose importer was already loaded). Run with
`python3 -X importtime` to see each module's own cost on stderr.
"""

import time

start = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--order", choices=["ddp-first", "optimizer-first"], default="ddp-first")
    parser.add_argument("--preimport", default="")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args()

    phases = []
    last = [set(sys.modules), time.perf_counter()]

    def mark(name):
        mods, now = set(sys.modules), time.perf_counter()
        new = sorted(mods - last[0])
        phases.append({"phase": name, "s": round(now - last[1], 4), "modules": len(new),
                       "top": sorted({".".join(m.split(".")[:2]) for m in new})})
        last[0], last[1] = set(sys.modules), time.perf_counter()

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    mark("import torch")
    for module in filter(None, args.preimport.split(",")):
        __import__(module)
    mark("preimport " + (args.preimport or "(none)"))

    store = dist.FileStore(os.path.join(args.dir, "filestore"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    mark("init_process_group")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    if args.order == "optimizer-first":
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        mark("Adam(...)")
        ddp = DDP(model)
        mark("DDP(model)")
    else:
        ddp = DDP(model)
        mark("DDP(model)")
        optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3)
        mark("Adam(...)")
    checkpoint = os.path.join(args.dir, "checkpoint.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 0}, checkpoint)
    mark("torch.save")
    state = torch.load(checkpoint, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    mark("torch.load")
    for step in range(2):
        inputs = torch.randn(32, 64)
        targets = torch.randint(0, 10, (32,))
        loss = nn.functional.cross_entropy(ddp(inputs), targets)
        mark(f"step {step + 1}: forward")
        optimizer.zero_grad()
        loss.backward()
        mark(f"step {step + 1}: backward")
        optimizer.step()
        mark(f"step {step + 1}: optimizer.step")
    dist.destroy_process_group()
    total = round(time.perf_counter() - start, 3)
    if args.json:
        print(json.dumps({"torch": torch.__version__, "python": sys.version.split()[0], "order": args.order,
                          "preimport": args.preimport, "total_s": total, "phases": phases}))
        return
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, order {args.order}, total {total} s")
    for p in phases:
        shown = ", ".join(p["top"][:40]) + (" ..." if len(p["top"]) > 40 else "")
        print(f"  {p['phase']:<32} {p['s']:8.3f} s {p['modules']:5d} modules  {shown if p['phase'] != 'import torch' else ''}")


if __name__ == "__main__":
    main()
