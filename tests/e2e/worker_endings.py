# The ways a Python worker ends, for the tests of pltrun's supervision of workers forked from
# its zygote (--preload) against cold-started ones (tests/e2e/preload_supervision_test.cc):
#
#   worker_endings.py DIR ACTION [RANK [ARG]]
#
# Every worker writes DIR/pid.<RANK>.<attempt> first. Then the worker of rank RANK (every
# rank when RANK is "all") does ACTION; the others end with 0.
#   exit N         sys.exit(N)
#   signal NAME    kills itself with signal NAME (SIGKILL, SIGSEGV, ...)
#   raise          an uncaught exception (a traceback on stderr, status 1)
#   interrupt      an uncaught KeyboardInterrupt (Python then dies by SIGINT)
#   fail-until N   exits 1 in attempts 0 .. N-1, then 0
#   wait           waits for SIGTERM; its handler writes DIR/term.<RANK>, then dies by it
#   stall          beats PLTRUN_HEARTBEAT three times, then sleeps in stall_here()
#   teardown       an atexit handler and a non-daemon thread each write a file; returns
#   fail-when-told attempt 0 waits for DIR/go, then exits 1; later attempts exit 0
# The pid file says "PID json" when json was imported before the program began (a worker
# forked from a zygote that preloaded it), "PID cold" otherwise.
import sys

FORKED_FROM_JSON_ZYGOTE = "json" in sys.modules

import atexit  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

DIRECTORY, ACTION = sys.argv[1], sys.argv[2]
TARGET = sys.argv[3] if len(sys.argv) > 3 else "all"
ARGUMENT = sys.argv[4] if len(sys.argv) > 4 else None
RANK = os.environ["RANK"]
ATTEMPT = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def write(name, text=""):
    with open(os.path.join(DIRECTORY, name + ".tmp"), "w") as target:
        target.write(text)
    os.rename(os.path.join(DIRECTORY, name + ".tmp"), os.path.join(DIRECTORY, name))


def on_term(number, frame):
    write("term." + RANK)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def stall_here():
    time.sleep(3600)


def stall():
    for step in range(3):
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(str(step).encode(), os.environ["PLTRUN_HEARTBEAT"])
        time.sleep(0.05)
    stall_here()


def teardown():
    atexit.register(write, "atexit." + RANK)
    threading.Thread(target=lambda: (time.sleep(0.5), write("thread." + RANK))).start()


def act():
    if ACTION == "exit":
        sys.exit(int(ARGUMENT))
    if ACTION == "signal":
        os.kill(os.getpid(), getattr(signal, ARGUMENT))
        time.sleep(10)
    if ACTION == "raise":
        raise ValueError("worker_endings raised on rank " + RANK)
    if ACTION == "interrupt":
        raise KeyboardInterrupt
    if ACTION == "fail-until":
        sys.exit(1 if ATTEMPT < int(ARGUMENT) else 0)
    if ACTION == "wait":
        signal.signal(signal.SIGTERM, on_term)
        write("ready." + RANK)
        while True:
            time.sleep(1)
    if ACTION == "stall":
        stall()
    if ACTION == "teardown":
        teardown()
    if ACTION == "fail-when-told":
        while ATTEMPT == 0 and not os.path.exists(os.path.join(DIRECTORY, "go")):
            time.sleep(0.05)
        sys.exit(1 if ATTEMPT == 0 else 0)


if __name__ == "__main__":
    write("pid.%s.%d" % (RANK, ATTEMPT), "%d %s" % (os.getpid(), "json" if FORKED_FROM_JSON_ZYGOTE else "cold"))
    if TARGET in ("all", RANK):
        act()
