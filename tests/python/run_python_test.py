"""One CTest case of pltrun's Python package (lib/python/pltrun, on PYTHONPATH) under one
interpreter, with the real pltrun binary:

    run_python_test.py CASE PYTHON PLTRUN SOURCE_DIR

CASE: stall | outside | rank | lightning | cli. PYTHON: /usr/bin/python3 or a chroot's
(tests/torch2/python3-trixie, python3-forky; their chroots must be built:
scripts/chroot/torch.sh SUITE ensure). Each case prints what it checked; exit 1 on a failure.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Callable, Dict, List, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
failures: List[str] = []


def check(ok: bool, what: str, evidence: str = "") -> bool:
    print(f"{'ok' if ok else 'FAILED'}: {what}" + ("" if ok else f"\n{evidence}"), flush=True)
    if not ok:
        failures.append(what)
    return ok


class Setup:
    """The interpreter, the binary and a private directory that a chroot's interpreter sees
    at the same path (PLTRUN_TORCH2_BINDS) and pltrun's run directory goes into (TMPDIR),
    so that the workers in the chroot reach their heartbeat sockets."""

    def __init__(self, python: str, pltrun: str, source_dir: str, directory: str) -> None:
        self.python, self.pltrun, self.directory = python, pltrun, directory
        self.package_dir = os.path.join(source_dir, "lib", "python")
        self.source_dir = source_dir
        self.in_chroot = "torch2" in python
        self.env = dict(os.environ, PYTHONPATH=self.package_dir, PYTHON_EXEC=python, TMPDIR=directory,
                        PLTRUN_TORCH2_BINDS=f"{self.package_dir}:{directory}")
        for name in ("PLTRUN_LAUNCHED", "PLTRUN_HEARTBEAT", "RANK", "NODE_RANK", "TORCHELASTIC_RUN_ID", "PLTRUN_CONFIG"):
            self.env.pop(name, None)
        self.env["PLTRUN_CONFIG"] = ""  # no site config

    def run(self, args: Sequence[str], **env: str) -> "subprocess.CompletedProcess[str]":
        done = subprocess.run(list(args), env=dict(self.env, **env), capture_output=True, text=True, timeout=240)
        print(f"$ {' '.join(args)}\n  exit {done.returncode}", flush=True)
        return done

    def launch(self, nproc: int, *args: str) -> "subprocess.CompletedProcess[str]":
        return self.run([self.pltrun, "--nproc-per-node", str(nproc), *args])


def case_stall(setup: Setup) -> None:
    hung = setup.launch(2, "--stall-timeout", "1", os.path.join(HERE, "beating_worker.py"), "20", "--stop-rank", "1")
    check(hung.returncode == 124, "a rank that stops calling pltrun.heartbeat() ends the run with 124", hung.stderr)
    check("rank 1 stalled" in hung.stderr and "culprit: rank 1 stopped sending heartbeats" in hung.stderr,
          "the stall report names rank 1", hung.stderr)
    check("rank 0 stalled" not in hung.stderr, "rank 0, which kept beating, is not called stalled", hung.stderr)
    # 2 s: a loaded machine's pause of a second must not read as a stall.
    steady = setup.launch(2, "--stall-timeout", "2", os.path.join(HERE, "beating_worker.py"), "5", "--with-step")
    check(steady.returncode == 0 and "stall" not in steady.stderr,
          "ranks that keep calling pltrun.heartbeat(step) for 5 s under --stall-timeout 2 are not stopped",
          steady.stdout + steady.stderr)


def case_outside(setup: Setup) -> None:
    done = setup.run([setup.python, os.path.join(HERE, "outside_checks.py")])
    print(done.stdout, end="")
    check(done.returncode == 0 and done.stdout.count("ok ") >= 10,
          "outside pltrun: heartbeat is a no-op that never raises; rank_info's defaults; pltrun.lightning",
          done.stdout + done.stderr)


def case_rank(setup: Setup) -> None:
    done = setup.launch(2, "--max-restarts", "1", "--rdzv-id", "pyrank", os.path.join(HERE, "rank_worker.py"))
    check(done.returncode == 0, "the rank_info worker ran under pltrun --nproc-per-node 2", done.stderr)
    lines = [line.split("] ", 1)[1] for line in done.stdout.splitlines() if line.startswith("[rank ")]
    reports = sorted((json.loads(line) for line in lines), key=lambda report: int(report["info"]["rank"]))
    check([report["info"]["rank"] for report in reports] == [0, 1], "both ranks reported", done.stdout)
    for report in reports:
        info, env = report["info"], report["env"]
        expected = {"rank": int(env["RANK"]), "local_rank": int(env["LOCAL_RANK"]),
                    "world_size": 2, "local_world_size": 2, "node_rank": int(env["NODE_RANK"]),
                    "master_addr": env["MASTER_ADDR"], "master_port": int(env["MASTER_PORT"]),
                    "restart_count": 0, "max_restarts": 1, "run_id": env["TORCHELASTIC_RUN_ID"],
                    "role_name": env["ROLE_NAME"], "launched": True}
        check(info == expected and env["WORLD_SIZE"] == "2" and env["TORCHELASTIC_MAX_RESTARTS"] == "1",
              f"rank {info['rank']}: rank_info() matches the variables pltrun set", json.dumps(report))
        check(report["is_launched"] and report["group_rank"] == int(env["GROUP_RANK"]),
              f"rank {info['rank']}: is_launched() and group_rank", json.dumps(report))


def case_lightning(setup: Setup) -> None:
    done = setup.launch(2, "--stall-timeout", "1", os.path.join(HERE, "lightning_worker.py"), "20", "--stop-rank", "1")
    check(done.returncode == 124 and "culprit: rank 1 is behind: progress counter 3" in done.stderr,
          "HeartbeatCallback sends trainer.global_step: the rank that stopped at step 3 is named by it",
          done.stderr)


def cmake_version(source_dir: str) -> str:
    with open(os.path.join(source_dir, "CMakeLists.txt")) as file:
        found = re.search(r"project\(pltrun VERSION ([0-9.]+)", file.read())
    return found.group(1) if found else "(none in CMakeLists.txt)"


def stand_in(directory: str, setup: Setup) -> str:
    """The program `python -m pltrun` is to run, placed in `directory`: the real binary
    here; in a chroot (which lacks bookworm's shared libraries) a script standing in."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "pltrun")
    if setup.in_chroot:
        with open(path, "w") as file:
            file.write('#!/bin/sh\necho "stand-in pltrun $*"\n')
        os.chmod(path, 0o755)
        return "stand-in pltrun --version\n"
    os.symlink(os.path.abspath(setup.pltrun), path)
    return subprocess.run([setup.pltrun, "--version"], capture_output=True, text=True).stdout


# `python -m pltrun ARGS` with PATH set inside the interpreter: a chroot's run sets its own.
WITH_PATH = ("import os, runpy, sys; os.environ['PATH'] = sys.argv[1]; sys.argv[1:2] = []; "
             "runpy.run_module('pltrun', run_name='__main__', alter_sys=True)")
# Runs a program from inside the interpreter, so that a chroot's venv runs in the chroot.
EXEC = "import os, sys; os.execv(sys.argv[1], sys.argv[1:])"


def case_cli(setup: Setup) -> None:
    version = setup.run([setup.python, "-c", "import pltrun; print(pltrun.__version__)"]).stdout.strip()
    check(version == cmake_version(setup.source_dir), f"pltrun.__version__ {version} is project()'s in CMakeLists.txt")

    bare_path = "/usr/bin:/bin"  # no pltrun there (checked: the not-found case below)
    missing = setup.run([setup.python, "-c", WITH_PATH, bare_path, "--version"])
    check(missing.returncode == 2 and missing.stderr.startswith("python -m pltrun: no pltrun program in")
          and missing.stderr.count("\n") == 1, "no pltrun anywhere: one line, exit 2", missing.stderr)

    venv = os.path.join(setup.directory, "venv")
    made = setup.run([setup.python, "-m", "venv", "--without-pip", venv])
    check(made.returncode == 0, "a venv of this interpreter", made.stderr)
    expected = stand_in(os.path.join(venv, "bin"), setup)
    in_venv = setup.run([setup.python, "-c", EXEC, os.path.join(venv, "bin", "python"), "-m", "pltrun", "--version"],
                        PATH=bare_path)
    check(in_venv.returncode == 0 and in_venv.stdout == expected,
          "python -m pltrun --version in a venv runs the venv's bin/pltrun", in_venv.stdout + in_venv.stderr)

    on_path = os.path.join(setup.directory, "on-path")
    expected = stand_in(on_path, setup)
    found = setup.run([setup.python, "-c", WITH_PATH, f"{on_path}:{bare_path}", "--version"])
    check(found.returncode == 0 and found.stdout == expected, "python -m pltrun --version runs the pltrun on PATH",
          found.stdout + found.stderr)

    source_tree = setup.run([setup.python, "-m", "pltrun", "--cmake-dir"])
    check(source_tree.returncode == 2 and source_tree.stdout == "" and source_tree.stderr.count("\n") == 1
          and source_tree.stderr.startswith("python -m pltrun: --cmake-dir: ")
          and "lib/cmake/pltrun does not exist" in source_tree.stderr,
          "--cmake-dir from the source tree: one line, exit 2", source_tree.stderr)

    # The wheel's layout: the C++ library's directories inside the package.
    site = os.path.join(setup.directory, "site")
    shutil.copytree(os.path.join(setup.package_dir, "pltrun"), os.path.join(site, "pltrun"))
    wanted = {"--cmake-dir": "lib/cmake/pltrun", "--pkgconfig-dir": "lib/pkgconfig", "--include-dir": "include",
              "--lib-dir": "lib"}
    for flag, relative in wanted.items():
        os.makedirs(os.path.join(site, "pltrun", relative), exist_ok=True)
    for flag, relative in wanted.items():
        shown = setup.run([setup.python, "-m", "pltrun", flag], PYTHONPATH=site)
        check(shown.returncode == 0 and shown.stdout == os.path.join(site, "pltrun", relative) + "\n",
              f"{flag} in the wheel's layout prints pltrun/{relative}", shown.stdout + shown.stderr)


CASES: Dict[str, Callable[[Setup], None]] = {
    "stall": case_stall, "outside": case_outside, "rank": case_rank, "lightning": case_lightning, "cli": case_cli}


def main() -> int:
    case, python, pltrun, source_dir = sys.argv[1:5]
    if "torch2" in python:
        suite = os.path.basename(python).replace("python3-", "")
        ready = subprocess.run(["bash", os.path.join(source_dir, "scripts/chroot/torch.sh"), suite, "ready"])
        if ready.returncode != 0:
            print(f"{python} needs its chroot: bash scripts/chroot/torch.sh {suite} ensure (root)")
            return 1
    # Short and under /tmp: pltrun's heartbeat sockets are made in it (a Unix socket's path
    # has at most 107 bytes).
    with tempfile.TemporaryDirectory(prefix="pltrun-py-", dir="/tmp") as directory:
        CASES[case](Setup(python, pltrun, source_dir, directory))
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
