"""A small DistributedDataParallel training job (CPU, gloo; torch 1.13 and 2.x alike) for
the torch compatibility matrix (tests/e2e/torch_matrix_test.cc):
`torch_ddp_train.py DIR [--steps N] [--fail-at K]`.

Every worker joins the process group from pltrun's environment alone (env://: pltrun's
workers' store, or rank 0's with --no-agent-store), trains a 2-layer MLP on synthetic data that is a function of (rank, step)
only, and resumes from DIR/checkpoint.pt when one exists. Rank 0 writes that checkpoint at
the start of every step, before the step's collectives: a checkpoint saying "next step s"
holds exactly the state after s steps, and no rank can pass step s's all-reduce before it
exists, so a resumed run follows the clean run's trajectory step for step.

`--fail-at K`: in the first round (TORCHELASTIC_RESTART_COUNT 0) rank 3 SIGKILLs itself at
the start of step K, after the checkpoint of step K-1 (at least) is on disk; the launcher
restarts every node's workers, which resume from the checkpoint.

`--crash-at K`: in every round rank 3 SIGKILLs itself at step K, after its heartbeat of
step K: each round resumes from the checkpoint and crashes again where it did, so no round
passes step K (--max-no-progress-restarts stops the job). `--crash-after N`: in every
round rank 3 does so N steps after the step it resumed from, so every round gets further.

Every rank sends a heartbeat with its step to $PLTRUN_HEARTBEAT at the start of each step
(the README's one-liner). `--stall-at K --stall-how sleep|stop`: in the first round rank 2
stops making progress at the start of step K, after its heartbeat: it sleeps for an hour, or
SIGSTOPs itself; the other ranks then wait in step K's gradient all-reduce. With
--stall-timeout the launcher names rank 2, stops every worker and restarts them.

`--linger-until PATH`: once trained (result.json written), every rank waits until PATH
exists before it leaves (tests/e2e/metrics_test.cc scrapes the launcher meanwhile).

Rank 0 writes DIR/result.json at the end: the final parameters (flattened), the restart
count it ran under, the step it resumed from, the torch version, whether torch was imported
before the script began (a worker forked from pltrun's zygote, --preload torch), and the
interpreter's sys.prefix (a venv's, in the wheel tests). Every worker
writes its pid to DIR/pids/round<N>_rank<R> first, so the test can check that none survives.
"""

import sys

TORCH_PRELOADED = "torch" in sys.modules  # before this script imports it

import argparse
import json
import os
import signal
import socket
import time

import torch
import torch.distributed as dist
from torch_exit import destroy_and_exit
from torch.nn.parallel import DistributedDataParallel

IN_FEATURES = 8
HIDDEN = 16
BATCH = 16


def batch_for(rank, step):
    """This rank's batch of step `step`: the same on every run, whatever round it runs in."""
    generator = torch.Generator().manual_seed(1_000_003 * step + 7919 * rank + 17)
    inputs = torch.randn(BATCH, IN_FEATURES, generator=generator)
    true_weights = torch.linspace(-1.0, 1.0, IN_FEATURES).unsqueeze(1)
    targets = torch.sin(inputs @ true_weights) + 0.05 * torch.randn(BATCH, 1, generator=generator)
    return inputs, targets


def save_atomically(state, path):
    temporary = f"{path}.tmp.{os.getpid()}"
    torch.save(state, temporary)
    os.replace(temporary, path)  # a worker killed mid-save leaves the last whole checkpoint


def write_json_atomically(value, path):
    temporary = f"{path}.tmp.{os.getpid()}"
    with open(temporary, "w") as file:
        json.dump(value, file)
    os.replace(temporary, path)


def stall(how):
    """A rank that stops making progress without exiting."""
    if how == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(3600)


def linger_until(path):
    """With --linger-until PATH every rank waits, once trained, until PATH exists (5 minutes
    at most): the job lives on while the test reads what the launcher says about it."""
    deadline = time.monotonic() + 300
    while path and not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--fail-at", type=int, default=-1)
    parser.add_argument("--stall-at", type=int, default=-1)
    parser.add_argument("--stall-how", choices=["sleep", "stop"], default="sleep")
    parser.add_argument("--crash-at", type=int, default=-1)
    parser.add_argument("--crash-after", type=int, default=-1)
    parser.add_argument("--linger-until", default="")
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    restart_count = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    os.makedirs(os.path.join(args.directory, "pids"), exist_ok=True)
    with open(os.path.join(args.directory, "pids", f"round{restart_count}_rank{rank}"), "w") as file:
        file.write(str(os.getpid()))

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dist.init_process_group("gloo")  # MASTER_ADDR/MASTER_PORT: the agents' store
    world_size = dist.get_world_size()
    assert rank == dist.get_rank() and world_size == int(os.environ["WORLD_SIZE"])

    torch.manual_seed(1234)
    model = torch.nn.Sequential(
        torch.nn.Linear(IN_FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
    optimizer_state = None
    start_step = 0
    checkpoint_path = os.path.join(args.directory, "checkpoint.pt")
    # Every rank loads before DDP's constructor, a collective: rank 0 cannot write a newer
    # checkpoint before all ranks have read this one.
    if os.path.exists(checkpoint_path):
        checkpoint = torch.load(checkpoint_path, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer_state = checkpoint["optimizer"]
        start_step = checkpoint["next_step"]
    ddp = DistributedDataParallel(model)
    # Momentum makes the optimizer's state matter: a resume that lost it would diverge.
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state)

    starts = [torch.zeros(1, dtype=torch.int64) for _ in range(world_size)]
    dist.all_gather(starts, torch.tensor([start_step], dtype=torch.int64))
    assert all(int(s.item()) == start_step for s in starts), f"ranks resumed from different steps: {starts}"

    losses = []
    for step in range(start_step, args.steps):
        if rank == 0:
            save_atomically({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "next_step": step},
                            checkpoint_path)
        if rank == 3 and restart_count == 0 and step == args.fail_at:
            os.kill(os.getpid(), signal.SIGKILL)  # a worker killed mid-training
        if "PLTRUN_HEARTBEAT" in os.environ:  # set with --stall-timeout and in elastic jobs
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(str(step).encode(), os.environ["PLTRUN_HEARTBEAT"])
        crashes_here = step == args.crash_at or (args.crash_after >= 0 and step == start_step + args.crash_after)
        if rank == 3 and crashes_here:
            os.kill(os.getpid(), signal.SIGKILL)  # the same crash every round
        if rank == 2 and restart_count == 0 and step == args.stall_at:
            stall(args.stall_how)
        inputs, targets = batch_for(rank, step)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(inputs), targets)
        loss.backward()  # DDP all-reduces (averages) the gradients over every rank
        optimizer.step()
        losses.append(loss.item())

    dist.barrier()
    if rank == 0:
        parameters = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        write_json_atomically({
            "parameters": [float(v) for v in parameters.tolist()],
            "restart_count": restart_count,
            "resumed_from": start_step,
            "steps": args.steps,
            "world_size": world_size,
            "torch": torch.__version__,
            "torch_preloaded": TORCH_PRELOADED,
            "prefix": sys.prefix,
            "agent_store": os.environ["TORCHELASTIC_USE_AGENT_STORE"],
            "first_loss": losses[0] if losses else None,
            "last_loss": losses[-1] if losses else None,
        }, os.path.join(args.directory, "result.json"))
    dist.barrier()
    linger_until(args.linger_until)
    destroy_and_exit()


if __name__ == "__main__":
    main()
