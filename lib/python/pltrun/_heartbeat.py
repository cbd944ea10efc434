"""pltrun.heartbeat(): the Python side of pltrun's hang detection (--stall-timeout).

The protocol is libpltrun's (lib/client/src/heartbeat.cc; docs/USAGE.md "Hangs"): one
Unix datagram to the path in PLTRUN_HEARTBEAT, whose payload is the step as decimal text,
or "beat" for a heartbeat without a progress counter. pltrun counts every datagram as a
heartbeat and reads a payload of at most 18 digits as the worker's progress counter.
"""

import atexit
import operator
import os
import socket
from typing import Any, Optional, Tuple

_VARIABLE = "PLTRUN_HEARTBEAT"
_NO_COUNTER = b"beat"  # what libpltrun sends for a negative step: alive, no counter

# This process's sender: (pid, socket, address). The socket is None where there is nothing
# to send to (PLTRUN_HEARTBEAT unset or empty, or no socket could be made): then a call
# costs a getpid and a comparison. Made on the first call, and again in a child made by
# fork() (another pid). The address is read with it: pltrun sets PLTRUN_HEARTBEAT before
# the worker starts and never changes it, and reading os.environ on every call would cost
# a tenth of the send.
_Sender = Tuple[int, Optional[socket.socket], bytes]
_sender: Optional[_Sender] = None


def _new_sender(pid: int, inherited: Optional[_Sender]) -> _Sender:
    if inherited is not None and inherited[1] is not None:
        # A child's copy of its parent's socket: let it go without closing the descriptor,
        # which the child may have closed and reused for a file or a connection of its own
        # (closing that would break it; libpltrun, too, never touches the inherited one).
        inherited[1].detach()
    path = os.environ.get(_VARIABLE, "")
    if not path:
        return (pid, None, b"")
    try:
        # Non-blocking: a launcher that stops reading must never stall the worker; a full
        # queue drops this beat, and the next one says the same. Not inherited by exec.
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.setblocking(False)
    except OSError:
        return (pid, None, b"")
    return (pid, sock, os.fsencode(path))


def _payload(step: Any) -> bytes:
    if step is None:
        return _NO_COUNTER
    try:
        number = operator.index(step)  # int, bool, numpy and torch integers
    except TypeError:
        return _NO_COUNTER  # not an integer: still a sign of life, without a counter
    return str(number).encode("ascii") if number >= 0 else _NO_COUNTER


def heartbeat(step: Optional[int] = None) -> None:
    """Tells pltrun that this worker is alive and, with ``step``, how far it got.

    Call it once per training step, after the step's work: ``pltrun --stall-timeout``
    names a worker that sent a heartbeat and then none for the timeout, and the step (the
    progress counter, an integer >= 0) tells the rank behind the others from those waiting
    for it. Without a step (or with a negative one) the heartbeat carries no counter.

    Made for the hot loop: one ``sendto`` on a non-blocking socket opened once per process
    (a new one after ``fork``). It never blocks and never raises: a full queue, a launcher
    that has gone, or a step that is not an integer are all silent. Outside pltrun
    (``PLTRUN_HEARTBEAT`` unset) it does nothing and opens nothing.
    """
    global _sender
    try:
        sender = _sender
        pid = os.getpid()
        if sender is None or sender[0] != pid:
            sender = _sender = _new_sender(pid, sender)
        sock = sender[1]
        if sock is not None:
            sock.sendto(_payload(step), sender[2])
    except Exception:  # noqa: BLE001 - a heartbeat must never break the training loop
        pass


@atexit.register
def _close() -> None:
    sender = _sender
    if sender is not None and sender[1] is not None:
        if sender[0] == os.getpid():
            sender[1].close()
        else:
            sender[1].detach()  # a forked child's copy: the descriptor is not ours to close
