"""torchrun (`python3 -m torch.distributed.run`) as Debian's torch builds can run it, for
scripts/bench/restart.sh (test-only, like tests/torch2/site). Two changes, each only where
it is needed; otherwise this is plain torchrun:
- torch 1.13 on Python 3.11+ (Debian bookworm): enum.IntFlag no longer iterates its zero
  member, so `Std.from_str("0")` (the default of --redirects and --tee) returns None and
  torchrun dies at its first worker start ("'NoneType' object has no attribute 'get'").
  That function gets the members back.
- torch 2.x built without libuv (Debian trixie's 2.6, forky's 2.14) whose agent creates its
  TCPStore with the libuv default and fails ("use_libuv was requested but PyTorch was built
  without libuv support, run with USE_LIBUV=0"): with USE_LIBUV=0 in the environment (which
  tests/torch2/site sets in the chroots), the agent's TCPStore defaults to use_libuv=False,
  as the message asks. The workers get the same from tests/torch2/site.

    python3 torchrun_shim.py TORCHRUN_ARGS...
"""

import os
import re
import runpy
import sys

import torch.distributed

from torch.distributed.elastic.multiprocessing import api

if api.Std.from_str("0") is None:
    broken = api.Std.from_str.__func__
    members = {int(s): s for s in (api.Std.NONE, api.Std.OUT, api.Std.ERR, api.Std.ALL)}

    def from_str(cls, vm):
        if re.fullmatch(api._VALUE_REGEX, vm):
            return members[int(vm)]
        if re.fullmatch(api._MAPPING_REGEX, vm):
            return {int(i): members[int(v)] for i, v in (m.split(":") for m in vm.split(","))}
        return broken(cls, vm)  # its ValueError for anything else

    api.Std.from_str = classmethod(from_str)

if os.environ.get("USE_LIBUV") == "0" and "use_libuv" in (torch.distributed.TCPStore.__init__.__doc__ or ""):
    base = torch.distributed.TCPStore

    class TCPStore(base):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    torch.distributed.TCPStore = TCPStore  # before torchrun's rendezvous modules import it

sys.argv[0] = "torch.distributed.run"
runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)
