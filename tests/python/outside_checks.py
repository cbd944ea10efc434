"""pltrun's Python package run directly (no pltrun around it), each check in a process of
its own because the heartbeat's socket and address are made once per process:

    outside_checks.py            every check below; prints "ok N" per check, exits 1 on a failure
    outside_checks.py CHECK DIR  one of them, in the empty directory DIR (run so by the first form)

TMPDIR must be a directory this interpreter sees (the chroot binds it).
"""

import dataclasses
import os
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from typing import Callable, Dict, List, Set

import pltrun

# Everything a launcher may set, removed for the checks that need a process outside any.
LAUNCHER_VARIABLES = ["PLTRUN_LAUNCHED", "PLTRUN_HEARTBEAT", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK",
                      "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
                      "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "ROLE_NAME"]


def open_descriptors() -> List[str]:
    return sorted(os.listdir("/proc/self/fd"))


def open_sockets() -> Set[int]:
    found = set()
    for name in open_descriptors():
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                found.add(int(name))
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return found


def receiver(directory: str) -> socket.socket:
    """A socket standing in for pltrun's end, at directory/beat.sock, with a timeout."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(os.path.join(directory, "beat.sock"))
    sock.settimeout(10)
    return sock


def no_op_without_variable(directory: str) -> None:
    before = open_descriptors()
    for step in (None, 0, 7, -1, 2**70, "seven", 3.5, object()):
        assert pltrun.heartbeat(step) is None  # type: ignore[arg-type, func-returns-value]
    assert open_descriptors() == before, f"a socket was opened outside pltrun: {before} -> {open_descriptors()}"


def silent_on_missing_path(directory: str) -> None:
    assert os.environ["PLTRUN_HEARTBEAT"].startswith("/nonexistent")
    for step in (None, 1, 2):
        pltrun.heartbeat(step)


def silent_on_long_path(directory: str) -> None:
    assert len(os.environ["PLTRUN_HEARTBEAT"]) > 200
    pltrun.heartbeat(1)


def payloads(directory: str) -> None:
    """What arrives for each kind of step: libpltrun's protocol."""
    with receiver(directory) as sock:
        for step, expected in ((None, b"beat"), (7, b"7"), (0, b"0"), (-1, b"beat"), ("x", b"beat"),
                               (3.5, b"beat"), (True, b"1")):
            pltrun.heartbeat(step)  # type: ignore[arg-type]
            got = sock.recv(64)
            assert got == expected, f"heartbeat({step!r}) sent {got!r}, not {expected!r}"


def full_queue_and_vanished_receiver(directory: str) -> None:
    """A receiver that reads nothing: every send past its queue fails; none may block or
    raise. Then the receiver goes: sends fail with ENOENT, silently."""
    sock = receiver(directory)
    errors: List[BaseException] = []

    def flood() -> None:
        try:
            for step in range(5000):
                pltrun.heartbeat(step)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "heartbeat() blocked on a full queue"
    assert not errors, f"heartbeat() raised {errors[0]!r}"
    assert sock.recv(64) == b"0", "the first heartbeat did not arrive"
    sock.close()
    os.unlink(os.environ["PLTRUN_HEARTBEAT"])
    pltrun.heartbeat(1)


def new_socket_after_fork(directory: str) -> None:
    """A forked child sends from a socket of its own, and leaves the inherited descriptor
    alone: here the child closes it and opens a file that takes its number."""
    with receiver(directory) as sock:
        before = open_sockets()
        pltrun.heartbeat(1)
        assert sock.recv(64) == b"1"
        (inherited,) = open_sockets() - before  # the parent's heartbeat socket
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.close(inherited)
                with open(os.path.join(directory, "file"), "w+b") as file:
                    assert file.fileno() == inherited, "the file did not take the socket's number"
                    pltrun.heartbeat(2)
                    os.fstat(file.fileno())  # still open: heartbeat() did not close it
                    assert os.path.getsize(file.name) == 0, "the child's heartbeat went into its file"
                status = 0
            except BaseException:  # noqa: BLE001 - the child reports and exits, never returns
                traceback.print_exc()
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert status == 0, f"the forked child failed ({status})"
        assert sock.recv(64) == b"2", "the child's heartbeat did not arrive"
        pltrun.heartbeat(3)  # the parent's socket still works
        assert sock.recv(64) == b"3"


def rank_defaults(directory: str) -> None:
    """One-process defaults outside any launcher; torchrun's variables read but not taken for
    pltrun's; then every field from its own variable."""
    assert not pltrun.is_launched()
    info = pltrun.rank_info()
    assert info == pltrun.RankInfo(), f"outside pltrun: {info}"
    assert (info.rank, info.world_size, info.launched, info.group_rank) == (0, 1, False, 0)
    try:
        info.rank = 3  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("RankInfo is not frozen")
    # torchrun's variables (no PLTRUN_LAUNCHED): read, but not pltrun's launch.
    os.environ.update({"RANK": "1", "WORLD_SIZE": "2", "GROUP_RANK": "1", "TORCHELASTIC_RUN_ID": "r"})
    info = pltrun.rank_info()
    assert (info.rank, info.world_size, info.node_rank, info.run_id) == (1, 2, 1, "r"), info
    assert not pltrun.is_launched() and not info.launched, "torchrun's variables taken for pltrun's"
    # Every field from its own variable (a 2-worker run on one node cannot tell RANK from
    # LOCAL_RANK), with PLTRUN_LAUNCHED: pltrun's set.
    os.environ.update({"PLTRUN_LAUNCHED": "1", "RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "NODE_RANK": "1",
                       "GROUP_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29400",
                       "TORCHELASTIC_RESTART_COUNT": "2", "TORCHELASTIC_MAX_RESTARTS": "3",
                       "TORCHELASTIC_RUN_ID": "job", "ROLE_NAME": "trainer"})
    assert pltrun.rank_info() == pltrun.RankInfo(5, 1, 8, 4, 1, "10.0.0.1", 29400, 2, 3, "job", "trainer", True), \
        pltrun.rank_info()
    assert pltrun.is_launched()


def write_module(directory: str, package: str, source: str) -> None:
    path = os.path.join(directory, *package.split("."), "__init__.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for parent in range(1, package.count(".") + 1):  # the packages above it
        open(os.path.join(directory, *package.split(".")[:parent], "__init__.py"), "a").close()
    with open(path, "w") as file:
        file.write(source)


def lightning_absent(directory: str) -> None:
    import importlib.util

    for name in ("lightning", "pytorch_lightning"):
        assert importlib.util.find_spec(name) is None, f"{name} is installed: this check needs it absent"
    from pltrun.lightning import HeartbeatCallback

    assert HeartbeatCallback.__mro__[1:] == (object,), HeartbeatCallback.__mro__
    HeartbeatCallback().on_train_batch_end(object(), None, None, None, 0)  # outside pltrun: nothing


def lightning_base(directory: str, preferred: str, other: str) -> None:
    """With stand-in Lightning packages on the path, the callback subclasses the
    preferred one's Callback."""
    for package in (preferred, other):
        write_module(directory, package, f"class Callback:\n    origin = {package!r}\n")
    sys.path.insert(0, directory)
    from pltrun.lightning import HeartbeatCallback

    base = HeartbeatCallback.__mro__[1]
    assert getattr(base, "origin", None) == preferred, f"subclasses {base!r}, not {preferred}.Callback"


def lightning_2_first(directory: str) -> None:
    lightning_base(directory, "lightning.pytorch", "pytorch_lightning")


def pytorch_lightning_next(directory: str) -> None:
    lightning_base(directory, "pytorch_lightning", "unrelated")


CHECKS: Dict[str, Callable[[str], None]] = {
    "lightning_absent": lightning_absent,
    "lightning_2_first": lightning_2_first,
    "pytorch_lightning_next": pytorch_lightning_next,
    "no_op_without_variable": no_op_without_variable,
    "silent_on_missing_path": silent_on_missing_path,
    "silent_on_long_path": silent_on_long_path,
    "payloads": payloads,
    "full_queue_and_vanished_receiver": full_queue_and_vanished_receiver,
    "new_socket_after_fork": new_socket_after_fork,
    "rank_defaults": rank_defaults,
}


def heartbeat_variable(name: str, directory: str) -> Dict[str, str]:
    if name == "silent_on_missing_path":
        return {"PLTRUN_HEARTBEAT": "/nonexistent/pltrun-run/beat.sock"}
    if name == "silent_on_long_path":
        return {"PLTRUN_HEARTBEAT": os.path.join(directory, "x" * 200)}
    if name in ("no_op_without_variable", "rank_defaults") or "lightning" in name:
        return {}
    return {"PLTRUN_HEARTBEAT": os.path.join(directory, "beat.sock")}


def run_all() -> int:
    failed = 0
    for name in CHECKS:
        with tempfile.TemporaryDirectory(prefix="pltrun-py-") as directory:
            env = {key: value for key, value in os.environ.items() if key not in LAUNCHER_VARIABLES}
            env.update(heartbeat_variable(name, directory))
            done = subprocess.run([sys.executable, __file__, name, directory], env=env, capture_output=True, text=True,
                                  timeout=120)
        if done.returncode == 0:
            print(f"ok {name}", flush=True)
        else:
            failed += 1
            print(f"FAILED {name} (exit {done.returncode}):\n{done.stdout}{done.stderr}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 1:
        sys.exit(run_all())
    CHECKS[sys.argv[1]](sys.argv[2])
