"""A pltrun worker that prints, as one JSON line, pltrun.rank_info(), pltrun.is_launched()
and the environment variables they are read from, for run_python_test.py to compare."""

import dataclasses
import json
import os

import pltrun

NAMES = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR",
         "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
         "ROLE_NAME"]
info = pltrun.rank_info()
print(json.dumps({"info": dataclasses.asdict(info), "group_rank": info.group_rank,
                  "is_launched": pltrun.is_launched(), "env": {name: os.environ.get(name) for name in NAMES}}),
      flush=True)
