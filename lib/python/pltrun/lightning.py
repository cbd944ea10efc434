"""A Lightning callback that sends pltrun's heartbeat after every training batch.

    from pltrun.lightning import HeartbeatCallback
    trainer = lightning.Trainer(callbacks=[HeartbeatCallback()])

Importable without Lightning: its base class is ``lightning.pytorch.Callback`` where
Lightning 2 is installed, else ``pytorch_lightning.Callback``, else ``object``.
"""

from typing import TYPE_CHECKING, Any

from pltrun._heartbeat import heartbeat

if TYPE_CHECKING:
    _Callback = object
else:
    try:
        from lightning.pytorch import Callback as _Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback as _Callback
        except ImportError:
            _Callback = object


class HeartbeatCallback(_Callback):
    """Sends ``pltrun.heartbeat(trainer.global_step)`` at the end of each training batch,
    so that ``pltrun --stall-timeout`` watches the job and names the rank that stops."""

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        """Lightning's hook: the step the trainer has reached is the progress counter."""
        heartbeat(getattr(trainer, "global_step", None))
