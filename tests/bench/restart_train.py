"""The worker of scripts/bench/restart.sh: a 4- or 8-rank gloo DDP job that saves a checkpoint
every step, resumes from it after a restart, and stamps each phase of its start on
CLOCK_BOOTTIME (the clock of /proc/PID/stat's starttime, shared by every process of the
machine and by the chroots' processes, which run on the same kernel).

    restart_train.py OUT_DIR [--steps N] [--crash-step S] [--crash-rank R] [--hold]
                             [--trace-imports] [--preimport MOD,MOD]

Under any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
TORCHELASTIC_RESTART_COUNT (pltrun, torchrun). Each rank appends one JSON line to
OUT_DIR/stamps.jsonl after its first step of each attempt (so a rank killed later still
counts), with:
  created   creation of the process the launcher started for it (the oldest ancestor below
            the launcher; a wrapper such as tests/torch2/python3-forky's chroot entry lies
            between it and the interpreter; a worker forked from pltrun's zygote is itself)
  python    creation of this interpreter's own process
  entered   the first line of this script ran
  torch     `import torch` done; pg: init_process_group returned; first_step: the first
            optimizer step of this attempt done (after DDP, torch.load, forward, backward);
            phases: each part of the first step
The crashing rank (--crash-rank, default the last) of attempt 0 appends
{"crash": TIME} just before os._exit(1) after step --crash-step (0: never).
--hold: after the steps, stay with the group formed until SIGTERM (for the memory figures).
--trace-imports: rank 0 records which modules each phase imported (OUT_DIR/imports.json).
--preimport: import these modules right after torch (what a zygote's preload would give).
"""

import time

_BOOT = time.CLOCK_BOOTTIME
entered = time.clock_gettime(_BOOT)

import argparse  # noqa: E402  (after the first stamp on purpose)
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def now():
    return time.clock_gettime(_BOOT)


def stat_fields(pid):
    """(ppid, starttime in seconds since boot) from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        after_name = f.read().rsplit(b")", 1)[1].split()
    return int(after_name[1]), int(after_name[19]) / TICKS


def is_launcher(pid):
    """pltrun, or torchrun's agent (`python3 -m torch.distributed.run`, `torchrun`, or
    tests/bench/torchrun_shim.py)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return True  # beyond what we may read: stop there
    program = os.path.basename(words[0])
    return (program.startswith(b"pltrun") or program == b"torchrun" or b"torch.distributed.run" in words[1:3]
            or any(word.endswith(b"torchrun_shim.py") for word in words[1:3]))


def launched_process_start():
    """The creation time of the process the launcher started for this worker: walk up
    the parents until the next one is the launcher (pltrun, torchrun)."""
    pid = os.getpid()
    parent, started = stat_fields(pid)
    while parent > 1 and not is_launcher(parent):
        pid = parent
        parent, started = stat_fields(pid)
    return started


def append_line(path, record):
    # One write of one short line to an O_APPEND file: lines of several processes never mix.
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--crash-step", type=int, default=0)
    parser.add_argument("--crash-rank", type=int, default=-1)
    parser.add_argument("--hold", action="store_true")
    parser.add_argument("--trace-imports", action="store_true")
    parser.add_argument("--preimport", default="")
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    crash_rank = args.crash_rank if args.crash_rank >= 0 else world - 1
    created = launched_process_start()
    python = stat_fields(os.getpid())[1]
    tracing = args.trace_imports and rank == 0
    imports = {}
    marks = {}
    last = [set(sys.modules)]

    def mark(name):
        marks[name] = now()
        if tracing:
            mods = set(sys.modules)
            imports[name] = sorted(mods - last[0])
            last[0] = mods

    mark("before_torch")
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    mark("torch")
    for module in filter(None, args.preimport.split(",")):
        __import__(module)
    mark("preimport")

    dist.init_process_group("gloo")
    mark("pg")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    ddp = DDP(model)
    mark("ddp")
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    mark("optimizer")
    checkpoint = os.path.join(args.out, "checkpoint.pt")
    step = 0
    if os.path.exists(checkpoint):
        state = torch.load(checkpoint, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
    mark("load")
    resumed_at = step

    generator = torch.Generator().manual_seed(rank)
    first = True
    while step < args.steps:
        inputs = torch.randn(32, 64, generator=generator)
        targets = torch.randint(0, 10, (32,), generator=generator)
        loss = nn.functional.cross_entropy(ddp(inputs), targets)
        first and mark("forward")
        optimizer.zero_grad()
        loss.backward()
        first and mark("backward")
        optimizer.step()
        step += 1
        if first:
            mark("first_step")
            record = {
                "attempt": attempt, "rank": rank, "world": world, "pid": os.getpid(),
                "created": created, "python": python, "entered": entered,
                "torch": marks["torch"], "pg": marks["pg"], "first_step": marks["first_step"],
                "resumed_at": resumed_at, "phases": marks,
            }
            append_line(os.path.join(args.out, "stamps.jsonl"), record)
            if tracing:
                with open(os.path.join(args.out, f"imports-{attempt}.json"), "w") as f:
                    json.dump(imports, f)
            first = False
        if rank == 0:
            # Written whole, then renamed: a crash never leaves half a checkpoint.
            partial = checkpoint + ".partial"
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, partial)
            os.replace(partial, checkpoint)
        dist.barrier()  # every rank past the save before the crash below
        if attempt == 0 and rank == crash_rank and step == args.crash_step:
            append_line(os.path.join(args.out, "stamps.jsonl"), {"crash": now(), "rank": rank})
            os._exit(1)

    if args.hold:
        append_line(os.path.join(args.out, "held.jsonl"), {"rank": rank, "pid": os.getpid()})
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
        signal.sigwait([signal.SIGTERM, signal.SIGINT])
        os._exit(0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
