"""pltrun's Python side: heartbeats for ``--stall-timeout`` and the worker's rank.

- :func:`heartbeat` tells pltrun this worker is alive and how far it got;
- :func:`rank_info` says where this process sits in the job (:class:`RankInfo`);
- :func:`is_launched` says whether pltrun launched it;
- :mod:`pltrun.lightning` has a Lightning callback that sends the heartbeat;
- ``python -m pltrun ARGS`` runs the pltrun program; ``python -m pltrun --cmake-dir``
  (``--pkgconfig-dir``, ``--include-dir``, ``--lib-dir``) finds libpltrun for C++ builds.

Every function is a no-op or returns one-process defaults outside pltrun.
"""

from pltrun._heartbeat import heartbeat
from pltrun._rank import RankInfo, is_launched, rank_info

# The project's version, project(pltrun VERSION ...) in CMakeLists.txt (a test compares them).
__version__ = "0.1.0"

__all__ = ["RankInfo", "__version__", "heartbeat", "is_launched", "rank_info"]
