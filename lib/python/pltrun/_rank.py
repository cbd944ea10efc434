"""This worker's place in the job, from the environment pltrun gives every worker.

The variables are torchrun's plus Lightning's NODE_RANK (docs/USAGE.md "What each worker
gets"); outside pltrun, the defaults describe a one-process run.
"""

import os
from dataclasses import dataclass
from typing import Mapping, Optional


@dataclass(frozen=True)
class RankInfo:
    """Where this process sits in the job. The defaults are those of a one-process run."""

    rank: int = 0
    """Global rank (``RANK``), 0 to ``world_size - 1``."""
    local_rank: int = 0
    """Rank among the workers of this node (``LOCAL_RANK``)."""
    world_size: int = 1
    """Workers in the job (``WORLD_SIZE``)."""
    local_world_size: int = 1
    """Workers on this node (``LOCAL_WORLD_SIZE``)."""
    node_rank: int = 0
    """This node's rank (``NODE_RANK``, torchrun's ``GROUP_RANK``)."""
    master_addr: Optional[str] = None
    """Host of the job's TCPStore (``MASTER_ADDR``); None outside a launcher."""
    master_port: Optional[int] = None
    """Port of the job's TCPStore (``MASTER_PORT``); None outside a launcher."""
    restart_count: int = 0
    """Restarts of the job so far (``TORCHELASTIC_RESTART_COUNT``)."""
    max_restarts: int = 0
    """Restarts allowed (``TORCHELASTIC_MAX_RESTARTS``)."""
    run_id: Optional[str] = None
    """The run's id (``TORCHELASTIC_RUN_ID``); None outside a launcher."""
    role_name: str = "default"
    """The workers' role (``ROLE_NAME``)."""
    launched: bool = False
    """Whether pltrun launched this process (:func:`pltrun.is_launched`)."""

    @property
    def group_rank(self) -> int:
        """torchrun's name for :attr:`node_rank`."""
        return self.node_rank


def _launched(environ: Mapping[str, str]) -> bool:
    # PLTRUN_LAUNCHED=1 is in every worker pltrun starts, and no other launcher sets it;
    # torchrun's variables alone are torchrun's (or another torch-elastic launcher's).
    return environ.get("PLTRUN_LAUNCHED") == "1"


def is_launched() -> bool:
    """Whether pltrun launched this process (or a worker it launched started it)."""
    return _launched(os.environ)


def _integer(environ: Mapping[str, str], name: str, default: int) -> int:
    try:
        return int(environ[name])
    except (KeyError, ValueError):
        return default


def _text(environ: Mapping[str, str], name: str, default: Optional[str]) -> Optional[str]:
    value = environ.get(name)
    return value if value else default


def rank_info() -> RankInfo:
    """This worker's :class:`RankInfo`, read from the environment on each call.

    Each field comes from its variable where that is set (so it also reads what torchrun
    sets), else keeps the one-process default; ``launched`` says whether pltrun set them.
    """
    environ = os.environ
    defaults = RankInfo()
    port = _integer(environ, "MASTER_PORT", -1)
    return RankInfo(
        rank=_integer(environ, "RANK", defaults.rank),
        local_rank=_integer(environ, "LOCAL_RANK", defaults.local_rank),
        world_size=_integer(environ, "WORLD_SIZE", defaults.world_size),
        local_world_size=_integer(environ, "LOCAL_WORLD_SIZE", defaults.local_world_size),
        # GROUP_RANK first, as libpltrun reads it: a NODE_RANK exported for Lightning must not
        # outvote torchrun's own variable.
        node_rank=_integer(environ, "GROUP_RANK", _integer(environ, "NODE_RANK", defaults.node_rank)),
        master_addr=_text(environ, "MASTER_ADDR", defaults.master_addr),
        master_port=port if port >= 0 else defaults.master_port,
        restart_count=_integer(environ, "TORCHELASTIC_RESTART_COUNT", defaults.restart_count),
        max_restarts=_integer(environ, "TORCHELASTIC_MAX_RESTARTS", defaults.max_restarts),
        run_id=_text(environ, "TORCHELASTIC_RUN_ID", defaults.run_id),
        role_name=_text(environ, "ROLE_NAME", defaults.role_name) or defaults.role_name,
        launched=_launched(environ),
    )
