"""The wheel's test inside a fresh copy of a clean chroot (scripts/chroot/venv.sh), as the
unprivileged user tests/wheel/run_wheel_test.sh runs it as: one AREA of the wheel, installed
with `pip install --no-index` into a fresh virtual environment of the chroot's python3.

    in_venv.py AREA WHEEL SOURCE_COPY [ETCD_ENDPOINT]

AREA: install | python | secret | etcd | consumer | pipx (run_wheel_test.sh's header says
what each checks). SOURCE_COPY holds a copy of tests/python, tests/wheel and tests/consumer;
the checks of tests/python/run_python_test.py are reused against the wheel's pltrun
(wheel_venv.py, beside this file, finds them). Each check prints one line; exit 1 when any
failed; 2 for a wrong command line.
"""

import os
import re
import subprocess
import sys
import tempfile
from typing import Callable, Dict, List, Optional, Sequence, Set

from wheel_venv import (BUNDLED, BUNDLED_NAMES, Processes, check, check_elf, failures, make_venv, pip_install,
                        run_python_test)

SOURCE_COPY = sys.argv[3] if len(sys.argv) > 3 else ""
HOME = os.path.expanduser("~")
VENV = os.path.join(HOME, "venv")
VENV_BIN = os.path.join(VENV, "bin")
PLTRUN = os.path.join(VENV_BIN, "pltrun")
PYTHON = os.path.join(VENV_BIN, "python")
SYSTEM_PYTHON = "/usr/bin/python3"
# What a program's ldd may name: libc's family; the library also needs the C++ runtime.
LIBC_FAMILY = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
               "ld-linux-x86-64.so.2"}
CXX_RUNTIME = {"libstdc++.so.6", "libgcc_s.so.1"}


class WheelSetup(run_python_test.Setup):
    """run_python_test's Setup, with the venv's python and the wheel's pltrun: what Setup makes
    of the source tree is then replaced (no PYTHONPATH: the package is the wheel's; an
    environment of the venv's, nothing of the chroot's root)."""

    def __init__(self, directory: str) -> None:
        super().__init__(PYTHON, PLTRUN, SOURCE_COPY, directory)
        self.package_dir = ""  # the copy has no lib/python: the venv's pltrun package is the one
        self.in_chroot = False  # tests/python's torch chroots are not in this one
        self.env = {"HOME": HOME, "PATH": f"{VENV_BIN}:/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": directory,
                    "PYTHON_EXEC": PYTHON, "PLTRUN_CONFIG": "", "PIP_NO_INDEX": "1",
                    "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        self.processes = Processes(self.env)

    def run(self, args: Sequence[str], **env: str) -> "subprocess.CompletedProcess[str]":
        return self.processes.run(args, env=env)


def venv_files() -> Set[str]:
    """Every path in the venv, relative to it."""
    found = set()
    for directory, dirs, files in os.walk(VENV):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(directory, name), VENV))
    return found


def install(setup: WheelSetup, wheel: str) -> Set[str]:
    """A fresh venv with the wheel; returns the venv's paths from before the install."""
    make_venv(setup.processes, SYSTEM_PYTHON, VENV)
    before = venv_files()
    pip_install(setup.processes, VENV, wheel)
    return before


def wheel_version(wheel: str) -> str:
    return os.path.basename(wheel).split("-")[1]


def needed_libraries(setup: WheelSetup, path: str) -> List[str]:
    done = setup.run(["ldd", path])
    check(done.returncode == 0 and "not found" not in done.stdout, f"ldd {path} finds every library",
          done.stdout + done.stderr)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def check_libraries(setup: WheelSetup, path: str, allowed: Set[str]) -> None:
    names = needed_libraries(setup, path)
    bundled = [name for name in names if BUNDLED.search(os.path.basename(name))]
    check(not bundled, f"{os.path.basename(path)} loads no {BUNDLED_NAMES} of the system",
          " ".join(bundled))
    others = [name for name in names if os.path.basename(name) not in allowed]
    check(not others, f"{os.path.basename(path)} loads only {', '.join(sorted(allowed - {'linux-vdso.so.1'}))}",
          " ".join(others))


def area_install(setup: WheelSetup, wheel: str) -> None:
    check(os.getuid() != 0, f"the test runs as an unprivileged user (uid {os.getuid()})")
    before = install(setup, wheel)
    version = setup.run([PLTRUN, "--version"]).stdout.strip()
    check(re.fullmatch(rf"pltrun {re.escape(wheel_version(wheel))}( .*)?", version) is not None,
          f"{PLTRUN} --version: {version}")
    store = setup.run([os.path.join(VENV_BIN, "pltrun-store"), "--version"]).stdout.strip()
    check(store == "pltrun-store " + version[len("pltrun "):], f"pltrun-store --version: {store}")
    for program in ("pltrun", "pltrun-store"):
        check_elf(os.path.join(VENV_BIN, program))
    # The system has OpenSSL (python3 needs it): the programs must still not load it.
    cache = setup.run(["/sbin/ldconfig", "-p"]).stdout
    check("libssl.so.3 " in cache and "libcrypto.so.3 " in cache, "the chroot has libssl3 for a program to load")
    lib_dir = setup.run([PYTHON, "-m", "pltrun", "--lib-dir"]).stdout.strip()
    check_libraries(setup, PLTRUN, LIBC_FAMILY)
    check_libraries(setup, os.path.join(VENV_BIN, "pltrun-store"), LIBC_FAMILY)
    check_libraries(setup, os.path.join(lib_dir, "libpltrun.so"), LIBC_FAMILY | CXX_RUNTIME)
    # At run time too (no dlopen of OpenSSL): what the agent has mapped while its worker runs.
    maps = setup.run([PLTRUN, "--nproc-per-node", "1", "/bin/sh", "-c", "cat /proc/$PPID/maps"])
    check(maps.returncode == 0 and "pltrun" in maps.stdout and not BUNDLED.search(maps.stdout),
          f"the running agent has mapped no {BUNDLED_NAMES} library",
          maps.stdout[-2000:] + maps.stderr)
    in_python = setup.run([PYTHON, "-m", "pltrun", "--version"])
    check(in_python.returncode == 0 and in_python.stdout.strip() == version, "python -m pltrun --version",
          in_python.stdout + in_python.stderr)
    removed = setup.run([PYTHON, "-m", "pip", "uninstall", "-y", "pltrun"])
    check(removed.returncode == 0, "pip uninstall -y pltrun", removed.stdout + removed.stderr)
    after = venv_files()
    check(after == before, "after pip uninstall the venv holds exactly the files it held before the install",
          f"left: {sorted(after - before)[:20]}; gone: {sorted(before - after)[:20]}")


def job_python_prefix(setup: WheelSetup, pltrun: str) -> str:
    """sys.prefix of a .py that `pltrun` runs with neither PYTHON_EXEC nor the venv on PATH:
    a batch script that runs VENV/bin/pltrun without activating VENV."""
    script = os.path.join(setup.directory, "prefix.py")
    with open(script, "w") as file:
        file.write("import sys\nprint('prefix', sys.prefix)\n")
    done = setup.run([pltrun, "--nproc-per-node", "1", "--no-prefix", script], PYTHON_EXEC="", PATH="/usr/bin:/bin")
    lines = [line for line in done.stdout.splitlines() if line.startswith("prefix ")]
    return lines[0][len("prefix "):] if done.returncode == 0 and lines else f"(none: exit {done.returncode})"


def area_python(setup: WheelSetup, wheel: str) -> None:
    install(setup, wheel)
    run_python_test.case_stall(setup)
    run_python_test.case_rank(setup)
    run_python_test.case_outside(setup)
    version = setup.run([PLTRUN, "--version"]).stdout
    in_python = setup.run([PYTHON, "-m", "pltrun", "--version"])
    check(in_python.returncode == 0 and in_python.stdout == version, "python -m pltrun --version runs the venv's pltrun",
          in_python.stdout + in_python.stderr)
    prefix = job_python_prefix(setup, PLTRUN)
    check(prefix == VENV, f"the venv's pltrun runs a .py under the venv's python3, not activated: sys.prefix {prefix}")


def store_port(agent: "subprocess.Popen[str]") -> int:
    """The port the first agent's rendezvous store listens on, from the line it prints."""
    assert agent.stderr is not None
    for line in agent.stderr:
        print("  " + line, end="", flush=True)
        found = re.search(r"rendezvous store for run \S+ listening on \S+:([0-9]+)$", line.strip())
        if found:
            return int(found.group(1))
    return 0


def secret_file(directory: str, name: str, text: str) -> str:
    path = os.path.join(directory, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        file.write(text)
    return path


def ranks_reported(done: "Sequence[subprocess.CompletedProcess[str]]") -> List[str]:
    """`rank N world W` for each line tests/python/rank_worker.py printed, sorted."""
    found = []
    for result in done:
        found += [f"rank {rank} world {world}" for rank, world in re.findall(
            r'"info": \{"rank": ([0-9]+), [^}]*"world_size": ([0-9]+)', result.stdout)]
    return sorted(found)


def agent_args(endpoint: str, run_id: str, *conf: str) -> List[str]:
    return [PLTRUN, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", endpoint, "--rdzv-id", run_id,
            "--rdzv-conf", ",".join(("last_call_timeout=1", "join_timeout=60") + conf),
            os.path.join(SOURCE_COPY, "tests", "python", "rank_worker.py")]


def check_four_ranks(agents: "Sequence[subprocess.CompletedProcess[str]]", what: str) -> None:
    expected = [f"rank {rank} world 4" for rank in range(4)]
    check(all(agent.returncode == 0 for agent in agents) and ranks_reported(agents) == expected, what,
          "\n".join(agent.stdout + agent.stderr for agent in agents))


def area_secret(setup: WheelSetup, wheel: str) -> None:
    install(setup, wheel)
    right = secret_file(setup.directory, "job.secret", "the job's shared secret, 32 bytes")
    wrong = secret_file(setup.directory, "other.secret", "another job's secret, 28 bytes")
    conf = "secret_file=" + right
    host = setup.processes.start(agent_args("127.0.0.1:0", "wheel-secret", conf))
    port = store_port(host)
    check(port > 0, f"the first agent hosts the rendezvous store on a free port ({port})")
    if port == 0:
        print(setup.processes.finish(host, timeout=60).stderr)
        return
    endpoint = f"127.0.0.1:{port}"
    intruder = setup.processes.run(agent_args(endpoint, "wheel-secret", "secret_file=" + wrong), timeout=60)
    print("  " + "\n  ".join(intruder.stderr.strip().splitlines()[-3:]), flush=True)
    check(intruder.returncode == 1 and "could not prove our shared secret" in intruder.stderr
          and "rank" not in intruder.stdout,
          "an agent with a wrong secret is refused (exit 1, no worker)", intruder.stdout + intruder.stderr)
    joined = setup.processes.run(agent_args(endpoint, "wheel-secret", conf), timeout=120)
    hosted = setup.processes.finish(host, timeout=60)
    check_four_ranks([hosted, joined], "with the secret, the 2-agent c10d job runs ranks 0 to 3 and succeeds")


def area_etcd(setup: WheelSetup, wheel: str, endpoint: str) -> None:
    install(setup, wheel)
    run_id = f"wheel-etcd-{os.getpid()}"
    args = agent_args(endpoint, run_id)
    args[1:1] = ["--rdzv-backend", "etcd"]
    agents = [setup.processes.start(args) for _ in range(2)]
    done = [setup.processes.finish(agent, timeout=120) for agent in agents]
    check_four_ranks(done, f"a 2-agent job on the host's etcd at {endpoint} runs ranks 0 to 3 and succeeds")


def area_consumer(setup: WheelSetup, wheel: str) -> None:
    install(setup, wheel)
    done = setup.processes.run(["bash", os.path.join(SOURCE_COPY, "tests", "consumer", "run_consumer_test.sh"),
                                "--wheel", PYTHON, SOURCE_COPY], timeout=600)
    print(done.stdout + done.stderr, end="")
    check(done.returncode == 0, "tests/consumer builds against the wheel's libpltrun (find_package through "
          "python -m pltrun --cmake-dir, pkg-config through --pkgconfig-dir) and runs under the venv's pltrun")


def area_pipx(setup: WheelSetup, wheel: str) -> None:
    # pipx (1.7 in trixie, 1.15 in forky) reinstalls pip into its shared venv with
    # --force-reinstall, which no installed pip satisfies: with no index it finds Debian's
    # pip wheel (python3-pip-whl, what `python3 -m venv` installs) in /usr/share/python-wheels.
    pipx_env = {"PIPX_HOME": os.path.join(HOME, "pipx"), "PIPX_BIN_DIR": os.path.join(HOME, "pipx-bin"),
                "PIP_FIND_LINKS": "/usr/share/python-wheels"}
    done = setup.run(["pipx", "install", "--pip-args=--no-index", wheel], **pipx_env)
    check(done.returncode == 0, "pipx install --pip-args=--no-index WHEEL", done.stdout + done.stderr)
    exposed = os.path.join(pipx_env["PIPX_BIN_DIR"], "pltrun")
    version = setup.run([exposed, "--version"])
    check(version.returncode == 0 and version.stdout.startswith(f"pltrun {wheel_version(wheel)}"),
          f"{exposed} --version: {version.stdout.strip()}", version.stderr)
    prefix = job_python_prefix(setup, exposed)
    check(prefix == "/usr", f"pipx's pltrun runs a .py under PATH's python3, not pipx's own venv: sys.prefix {prefix}")
    removed = setup.run(["pipx", "uninstall", "pltrun"], **pipx_env)
    left = [path for path in (exposed, os.path.join(pipx_env["PIPX_HOME"], "venvs", "pltrun"))
            if os.path.lexists(path)]
    check(removed.returncode == 0 and not left, "pipx uninstall pltrun removes its programs and its venv",
          removed.stdout + removed.stderr + " ".join(left))


AREAS: Dict[str, Callable[[WheelSetup, str], None]] = {
    "install": area_install, "python": area_python, "secret": area_secret, "consumer": area_consumer,
    "pipx": area_pipx}
USAGE = "usage: in_venv.py install|python|secret|etcd|consumer|pipx WHEEL SOURCE_COPY [ETCD_ENDPOINT]"


def main() -> int:
    if len(sys.argv) not in (4, 5) or sys.argv[1] not in [*AREAS, "etcd"]:
        print(USAGE, file=sys.stderr)
        return 2
    area, wheel = sys.argv[1:3]
    etcd: Optional[str] = sys.argv[4] if len(sys.argv) > 4 else None
    if area == "etcd" and not check(bool(etcd), "the etcd area is given an endpoint: in_venv.py etcd WHEEL "
                                    "SOURCE_COPY ETCD_ENDPOINT (run_wheel_test.sh starts the etcd and passes it)"):
        return 1
    # Short and under /tmp: pltrun's heartbeat sockets are made in it (at most 107 bytes).
    with tempfile.TemporaryDirectory(prefix="wheel-", dir="/tmp") as directory:
        setup = WheelSetup(directory)
        if area == "etcd" and etcd:
            area_etcd(setup, wheel, etcd)
        else:
            AREAS[area](setup, wheel)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
