"""How the torch test workers end: `destroy_and_exit()` after their last collective.

It leaves the process group as a program should (destroy_process_group), then exits at
once, so that the C++ ProcessGroupGloo destructor never runs. Debian's torch 2.6 can
deadlock in that destructor: it joins gloo's work threads while holding the GIL, and a work
thread that frees a tensor's Python object needs the GIL (fixed upstream after 2.6 by
releasing the GIL there, pytorch/pytorch#154976). Seen about once in ten 4-worker runs on a
loaded 2-core machine, at the return of the function that held the group; pltrun waits for
such a worker as torchrun would. torch 1.13 workers end the same way.
"""

import os
import sys

import torch.distributed as dist


def destroy_and_exit(status=0):
    world = dist.group.WORLD  # keeps the C++ group alive past destroy_process_group  # noqa: F841
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
