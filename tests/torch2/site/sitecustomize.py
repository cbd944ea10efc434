"""Test-only (tests/torch2/python3-chroot puts it on the chroots' path; never shipped).

Debian's torch 2.x (trixie's 2.6, forky's 2.14) was built without libuv, yet `TCPStore` asks for the libuv
transport by default. torch's env:// rendezvous (`init_process_group`) creates its TCPStore
without saying which transport when the launcher hosts it (TORCHELASTIC_USE_AGENT_STORE),
and with `use_libuv` from the environment's USE_LIBUV (default "1") when rank 0 hosts it.
This makes `use_libuv=False` the default of the TCPStore that `torch.distributed.rendezvous`
uses, once that module is imported, and USE_LIBUV=0 unless set; nothing else. Careful: the attribute `torch.distributed.rendezvous` is a function;
the module is `sys.modules["torch.distributed.rendezvous"]`.
"""

import importlib.abc
import importlib.util
import os
import sys

_MODULE = "torch.distributed.rendezvous"


def _legacy_store_by_default(module):
    base = module.TCPStore

    class TCPStore(base):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    module.TCPStore = TCPStore


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds the real module, then patches it right after it has run (torch is imported
    only by the processes that use it)."""

    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            _legacy_store_by_default(module)

        spec.loader.exec_module = exec_module
        return spec


os.environ.setdefault("USE_LIBUV", "0")
sys.meta_path.insert(0, _PatchOnImport())
