"""What the scripts that put the wheel into a venv share: in_venv.py (a clean chroot's fresh
copy) and torch_restart_job.py (this machine or a torch chroot's copy). Both run from a
directory holding tests/wheel beside tests/python (a copy of the source, or the tests
directory bound into the chroot), as this file finds tests/python: tests/python's one-line
checks (run_python_test.check, whose `failures` both count), programs run and reaped in a
session of their own, the venv made and the wheel installed with pip --no-index, and what
the wheel links in that the system's copies of must never be loaded.
"""

import os
import pwd
import re
import signal
import subprocess
import sys
from typing import Dict, Optional, Sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import run_python_test  # noqa: E402  (tests/python, beside this directory)
from run_python_test import check, failures  # noqa: E402

__all__ = ["run_python_test", "check", "failures", "Processes", "BUNDLED", "BUNDLED_NAMES", "make_venv",
           "pip_install", "check_elf"]

# What the wheel links in, statically or under names of its own: the system's copies (by
# file name, or a path in /proc/PID/maps) must never be loaded by its programs.
BUNDLED = re.compile(r"(?:^|/)lib(?:ssl|crypto|spdlog|fmt|tomlplusplus|boost)\w*\.so", re.MULTILINE)
BUNDLED_NAMES = "OpenSSL, spdlog, fmt, toml++ or Boost"


class Processes:
    """Programs started in a session of their own, each ended and reaped by `finish`: a
    chroot's fresh copy fails the run if any is left."""

    def __init__(self, env: Dict[str, str]) -> None:
        self.env = env

    def start(self, args: Sequence[str], env: Optional[Dict[str, str]] = None) -> "subprocess.Popen[str]":
        print(f"$ {' '.join(args)} &", flush=True)
        return subprocess.Popen(list(args), env=dict(self.env, **(env or {})), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    @staticmethod
    def finish(process: "subprocess.Popen[str]", timeout: float = 120) -> "subprocess.CompletedProcess[str]":
        """Waits for `process` (its whole session killed after `timeout` s) and its output."""
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            err += f"\n(killed after {timeout} s)"
        print(f"  exit {process.returncode}", flush=True)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def run(self, args: Sequence[str], timeout: float = 240,
            env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
        try:
            return self.finish(self.start(args, env), timeout)
        except OSError as error:  # a program that is not there: a failed check, not a crash
            print(f"  cannot run: {error}", flush=True)
            return subprocess.CompletedProcess(list(args), 127, "", str(error))


def user_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid {os.getuid()}"


def make_venv(processes: Processes, python: str, venv: str, *flags: str) -> bool:
    made = processes.run([python, "-m", "venv", *flags, venv])
    return check(made.returncode == 0, " ".join([python, "-m", "venv", *flags, venv]), made.stdout + made.stderr)


def pip_install(processes: Processes, venv: str, wheel: str) -> bool:
    done = processes.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-index", wheel])
    return check(done.returncode == 0, f"pip install --no-index {os.path.basename(wheel)} as {user_name()}",
                 done.stdout + done.stderr)


def check_elf(program: str) -> bool:
    """`program` (the venv's bin/pltrun or pltrun-store) is the wheel's ELF file itself."""
    with open(program, "rb") as file:
        return check(file.read(4) == b"\x7fELF", f"{program} is the ELF program itself, not a wrapper")
