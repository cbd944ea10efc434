#!/bin/bash
# Checks on a GPU machine with torch (CUDA, NCCL): pltrun starts NCCL workers, restarts
# them after a crash, and after `kill -9 pltrun` leaves neither GPU memory nor a setsid
# descendant behind; a rank stuck in a CUDA kernel that never ends is found by
# --stall-timeout, reported, killed, and the GPU is free afterwards; the official wheel's
# libuv TCPStore client (which Debian's torch lacks) uses the agent store's queues;
# --numa-binding reads the real GPUs' PCI addresses from NVML; --auto-select-gpus refuses
# GPU 0 while a process holds it, naming its pid, and takes it once that ends; the wheel
# (when DIR holds pltrun-*.whl) installs into a venv of the machine's Python and its
# pltrun.lightning.HeartbeatCallback drives --stall-timeout in a real Lightning Trainer;
# `pltrun health` runs NVML's node checks on the real GPUs (each verdict shown, all pass).
# Not run by CI (no GPU there). On the lent machine, with a stripped pltrun and the shared
# libraries it needs copied into one folder DIR beside this script (and the wheel):
#   bash scripts/gpu-check.sh DIR   (ONLY_KILL=1, ONLY_HANG=1, ONLY_QUEUE=1, ONLY_AUTO=1, ONLY_LIGHTNING=1 or ONLY_HEALTH=1: that check alone)
set -u
cd "${1:?usage: gpu-check.sh DIR_WITH_PLTRUN}"
export LD_LIBRARY_PATH=$PWD
./pltrun --version || { ldd ./pltrun; exit 1; }
nvidia-smi -L
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'nccl', torch.cuda.nccl.version())"
echo "== pltrun health: NVML's node checks on the real GPUs (every verdict shown; healthy expected)"
gpus=$(nvidia-smi -L | grep -c '^GPU ')
./pltrun health --expected-gpus "$gpus"; echo "rc=$? (0 expected)"
./pltrun health --json --expected-gpus "$gpus" --health-check 'nvidia-smi -L'; echo "rc=$? (0 expected)"
./pltrun health --expected-gpus $((gpus + 1)); echo "rc=$? (1 expected: one GPU more than there are)"
./pltrun --nproc-per-node gpu --health-check 'echo site check says no; exit 1' --no-python /bin/true
echo "rc=$? (1 expected: the job does not start)"
./pltrun --nproc-per-node gpu --no-python /bin/true; echo "rc=$? (0 expected: the checks pass, the job runs)"
[ -n "${ONLY_HEALTH:-}" ] && exit 0
cat > ddp.py <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
rank, local = dist.get_rank(), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
t = torch.ones(1 << 20, device="cuda") * (rank + 1)
dist.all_reduce(t)
torch.cuda.synchronize()
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))
cgroup = open("/proc/self/cgroup").read().strip().splitlines()[-1]
print(f"rank {rank}/{dist.get_world_size()} local {local} sum {t[0].item()} restart {restart} cgroup {cgroup}", flush=True)
if restart == 0 and os.environ.get("CRASH"):
    os._exit(3)
dist.destroy_process_group()
PY
echo "== the wheel in a venv: Lightning with pltrun.lightning.HeartbeatCallback under --stall-timeout"
cat > lightning_job.py <<'PY'
import os, time, torch, pltrun
from pltrun.lightning import HeartbeatCallback
try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl
class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)
    def training_step(self, batch, index):
        if os.environ.get("STALL") and self.global_rank == 1 and self.global_step == 10:
            time.sleep(3600)  # rank 1 stops beating; the callback's last step is 10
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(256, 8), torch.randn(256, 1)), batch_size=8)
trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_steps=30, callbacks=[HeartbeatCallback()],
                     enable_progress_bar=False, logger=False, enable_checkpointing=False)
trainer.fit(Model(), data)
print(f"rank {trainer.global_rank}: {trainer.global_step} steps, is_launched {pltrun.is_launched()}", flush=True)
PY
wheel=$(ls pltrun-*.whl 2>/dev/null | head -n1)
if [ -z "$wheel" ]; then
  echo "no pltrun-*.whl in $PWD: the wheel's check is skipped"
else
  rm -rf venv && python3 -m venv --system-site-packages venv && venv/bin/pip install -q --no-index "$wheel"
  venv/bin/pltrun --version; venv/bin/python -c "import pltrun, pltrun.lightning; print('pltrun', pltrun.__version__, pltrun.lightning.HeartbeatCallback.__mro__[1])"
  PYTHON_EXEC=venv/bin/python venv/bin/pltrun --nproc-per-node 2 --stall-timeout 20 lightning_job.py; echo "rc=$? (0 expected: 30 steps each)"
  STALL=1 PYTHON_EXEC=venv/bin/python venv/bin/pltrun --nproc-per-node 2 --stall-timeout 10 lightning_job.py 2>lightning.err
  echo "rc=$? (124 expected)"; grep -E "culprit|progress counter" lightning.err || echo "NO CULPRIT LINE"
fi
[ -n "${ONLY_LIGHTNING:-}" ] && exit 0
echo "== torch's libuv TCPStore client: queue_push / queue_pop / queue_len on the agent store"
cat > queues.py <<'PY'
import datetime, os, torch.distributed as dist
rank, consumers = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]) - 1
store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                      use_libuv=True, timeout=datetime.timedelta(seconds=30))
if rank == 0:
    for i in range(99):
        store.queue_push("jobs", f"job{i}")
    for _ in range(consumers):
        store.queue_push("jobs", "stop")
    replies = sorted(store.queue_pop("done").decode() for _ in range(99))  # blocking pops
    assert replies == sorted(f"job{i}!" for i in range(99)), replies[:5]
    print("rank 0: 99 replies; queue_len(jobs) =", store.queue_len("jobs"), flush=True)
else:
    got = 0
    while (item := store.queue_pop("jobs")) != b"stop":  # blocking: many consumers at once
        store.queue_push("done", item + b"!")
        got += 1
    print(f"rank {rank}: handled {got}", flush=True)
PY
if [ -z "${ONLY_QUEUE:-}" ]; then
echo "== --auto-select-gpus: a process holding GPU 0 is named (exit 2, no worker); once it ends, GPU 0 is chosen"
# CUDA_VISIBLE_DEVICES=0 makes any machine a one-GPU machine; the locks in a folder of our own.
export PLTRUN_GPU_LOCK_DIR=$PWD/gpu-locks
rm -f holder.ready auto-worker.ran
python3 -c 'import torch, time; torch.cuda.init(); torch.ones(1, device="cuda:0"); open("holder.ready", "w").write("1"); time.sleep(600)' &
holder=$!
for i in $(seq 600); do [ -e holder.ready ] && break; sleep 0.1; done
sleep 1; nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader
CUDA_VISIBLE_DEVICES=0 ./pltrun --devices 1 --auto-select-gpus --no-python /bin/sh -c 'touch auto-worker.ran' 2>auto.err
rc=$?; cat auto.err
echo "rc=$rc (2 expected)"
grep -q "held by pid $holder" auto.err && echo "the holder, pid $holder, named" || echo "HOLDER PID $holder NOT NAMED"
[ -e auto-worker.ran ] && echo "A WORKER RAN" || echo "no worker started"
kill $holder; wait $holder 2>/dev/null
sleep 1
CUDA_VISIBLE_DEVICES=0 ./pltrun --devices 1 --auto-select-gpus --no-python /bin/sh -c 'echo "worker on CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"'
echo "rc=$? (0 expected, the worker on CUDA_VISIBLE_DEVICES=0)"
unset PLTRUN_GPU_LOCK_DIR
[ -n "${ONLY_AUTO:-}" ] && exit 0
fi
./pltrun --nproc-per-node 4 python3 queues.py; echo "rc=$? (0 expected)"
[ -n "${ONLY_QUEUE:-}" ] && exit 0
echo "== --numa-binding node / exclusive: each worker on the CPUs near its GPU (NVML's PCI address, sysfs)"
for mode in node exclusive; do
  ./pltrun --nproc-per-node gpu --numa-binding $mode --no-python /bin/sh -c 'grep Cpus_allowed_list /proc/self/status'
  echo "rc=$? ($mode)"
done
if [ -z "${ONLY_KILL:-}" ]; then
echo "== a rank stuck in a CUDA kernel that never ends (--stall-timeout 5): found, killed, GPU free"
cat > hang.py <<'PY'
import os, socket, torch
beat = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
x = torch.ones(1 << 26, device="cuda")
for step in range(1000):
    x.mul_(1.0)
    torch.cuda.synchronize()
    beat.sendto(str(step).encode(), os.environ["PLTRUN_HEARTBEAT"])
    if step == 5:
        torch.cuda._sleep(1 << 62)  # a kernel that spins for years
        torch.cuda.synchronize()
PY
start=$(date +%s.%N)
./pltrun --nproc-per-node 1 --stall-timeout 5 --term-timeout 5 --log-dir hang-logs python3 hang.py 2>hang.err
rc=$?; end=$(date +%s.%N)
cat hang.err
echo "rc=$rc (124 expected) after $(python3 -c "print(round($end - $start, 1))") s"
grep -q "culprit: rank 0" hang.err && echo "culprit named" || echo "NO CULPRIT NAMED"
grep -q "hang.py" hang.err && echo "its stack names hang.py" || echo "NO STACK LINE"
sleep 1
echo "GPU processes after the hang: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l) (0 expected)"
[ -n "${ONLY_HANG:-}" ] && exit 0
echo "== one worker per GPU (--nproc-per-node gpu), NCCL all_reduce"
/usr/bin/time -f "wall %e s" ./pltrun --nproc-per-node gpu python3 ddp.py; echo "rc=$?"
echo "== crash in attempt 0, restart (--max-restarts 1)"
CRASH=1 ./pltrun --nproc-per-node 1 --max-restarts 1 python3 ddp.py; echo "rc=$?"
echo "== --preload torch: NCCL workers forked from a zygote that never touched CUDA; crash and restart"
/usr/bin/time -f "wall %e s (cold above, forked here)" ./pltrun --nproc-per-node gpu --preload torch ddp.py 2>preload.err
echo "rc=$?"; grep -- "--preload" preload.err || echo "no fallback line: every worker was forked"
CRASH=1 ./pltrun --nproc-per-node gpu --max-restarts 1 --preload torch ddp.py; echo "rc=$? (0 expected)"
fi
echo "== kill -9 pltrun while a worker holds the GPU and a setsid child sleeps"
cat > hold.py <<'PY'
import os, subprocess, time, torch
x = torch.ones(1 << 28, device="cuda")
p = subprocess.Popen(["sleep", "77"], start_new_session=True)
open("escaped.pid", "w").write(str(p.pid))
time.sleep(1000)
PY
rm -f escaped.pid
./pltrun --nproc-per-node 1 python3 hold.py & job=$!
for i in $(seq 300); do [ -s escaped.pid ] && break; sleep 0.1; done
sleep 1; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
kill -9 $job; wait $job; echo "pltrun rc=$?"
sleep 1
e=$(cat escaped.pid); echo "escaped sleep $e: $(cut -d' ' -f1-4 /proc/$e/stat 2>/dev/null || echo 'no such process')"
if grep -q ') [^Z]' /proc/$e/stat 2>/dev/null; then echo "escaped sleep STILL ALIVE"; kill $e; else echo "escaped sleep gone (dead or a zombie awaiting its reaper)"; fi
echo "GPU processes after: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)"
cat /proc/self/cgroup | tail -1; ls /sys/fs/cgroup | grep pltrun || echo "no pltrun cgroup left"
