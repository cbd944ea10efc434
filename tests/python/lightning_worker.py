"""A pltrun worker that drives pltrun.lightning.HeartbeatCallback as Lightning's fit loop
does, with a stand-in trainer whose global_step counts the batches; the rank named by
--stop-rank hangs after step 3 (then exits 0 after SECONDS, as beating_worker.py does).

    lightning_worker.py SECONDS --stop-rank N
"""

import argparse
import os
import time

from pltrun.lightning import HeartbeatCallback


class StandInTrainer:
    """The one attribute of lightning.Trainer that the callback reads."""

    global_step = 0


parser = argparse.ArgumentParser()
parser.add_argument("seconds", type=float)
parser.add_argument("--stop-rank", type=int, default=-1)
args = parser.parse_args()

rank = int(os.environ["RANK"])
trainer = StandInTrainer()
callback = HeartbeatCallback()
deadline = time.monotonic() + args.seconds
while time.monotonic() < deadline:
    if rank == args.stop_rank and trainer.global_step == 3:
        time.sleep(max(0.0, deadline - time.monotonic()))
        break
    trainer.global_step += 1
    callback.on_train_batch_end(trainer, None, {"loss": 0.0}, None, trainer.global_step - 1)
    time.sleep(0.02)
print(f"rank {rank} reached step {trainer.global_step}", flush=True)
