"""The wheel's pltrun through a torch crash and restart, run by the interpreter under test as
an unprivileged user (tests/wheel/torch_restart_test.py starts it, on the host or in a
torch chroot):

    torch_restart_job.py DIRECTORY WHEEL TESTS_DIR --torch VERSION [--site DIR]

In DIRECTORY: a venv of this interpreter with --system-site-packages (the distribution's
torch stays importable), `pip install --no-index WHEEL`, then the venv's bin/pltrun (the
wheel's ELF binary, found first on PATH as in an activated venv) runs
tests/e2e/torch_ddp_train.py with 4 workers (gloo, loopback) three times: cleanly; with
rank 3 SIGKILLed at step 12 of the first attempt and --max-restarts 1; and that again with
--preload torch (every worker of both attempts forked from the zygote). The restarted runs
must end with the clean run's weights, as tests/e2e/torch_matrix_test.cc checks for the
build's pltrun. While each job runs, the launcher's /proc/PID/maps must show none of the
shared libraries the wheel links in (the torch chroots have libfmt and OpenSSL for torch's
sake, so a binary that reached for them would find them). `--site DIR` goes on the
workers' PYTHONPATH (tests/torch2/site: Debian's torch 2.x has no libuv). `--torch`: the
version the workers must import (the distribution's, through --system-site-packages).

Prints one line per check (tests/python's, through wheel_venv.py beside this file, which
also makes the venv and installs the wheel as in_venv.py does); exit 1 when any failed.
Every process a job started must be gone when its pltrun has exited.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from wheel_venv import BUNDLED, BUNDLED_NAMES, Processes, check, check_elf, failures, make_venv, pip_install

STEPS = 30
FAIL_AT = 12  # rank 3 kills itself at the start of this step of the first attempt
WORLD_SIZE = 4
PARAMETERS = 8 * 16 + 16 + 16 + 1  # torch_ddp_train.py's 2-layer MLP
# As torch_matrix_test.cc's kTolerance says: the resumed run replays the clean run's steps
# from the exact saved state but rounds its first step's all-reduce differently (far below
# this); a resume without the optimizer's state ends about 0.15 away.
TOLERANCE = 1e-5
JOB_SECONDS = 150
# The launchers running now: a TERM to this job (a test's timeout) ends their sessions.
launchers: List[int] = []


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def in_session(session: int) -> List[int]:
    """Live processes of a session (the launcher's: it was started as a session leader)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[4]) == session:
            found.append(int(name))
    return found


def end_all(pids: Sequence[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def on_terminate(signum: int, frame: object) -> None:
    for launcher in launchers:
        end_all(in_session(launcher))
    print("ended by a signal", flush=True)
    os._exit(1)


class Job:
    """One pltrun run of torch_ddp_train.py in its own directory."""

    def __init__(self, name: str, directory: str) -> None:
        self.name, self.directory = name, directory
        self.maps = ""
        self.exe = ""
        self.status: Optional[int] = None
        self.out = self.err = ""
        self.result: Dict[str, object] = {}

    def pid_files(self) -> List[str]:
        try:
            return sorted(os.listdir(os.path.join(self.directory, "pids")))
        except OSError:
            return []

    def worker_pids(self) -> List[int]:
        pids = []
        for name in self.pid_files():
            with open(os.path.join(self.directory, "pids", name)) as file:
                text = file.read()
            if text.isdigit():  # a worker that is still writing it (a job ended at its timeout)
                pids.append(int(text))
        return pids

    def start(self, command: Sequence[str], env: Dict[str, str]) -> None:
        os.makedirs(self.directory)
        out_path, err_path = (os.path.join(self.directory, name) for name in ("pltrun.out", "pltrun.err"))
        with open(out_path, "w") as out, open(err_path, "w") as err:
            launcher = subprocess.Popen(list(command), env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        start_new_session=True)
        launchers.append(launcher.pid)
        print(f"$ {' '.join(command)}", flush=True)
        deadline = time.monotonic() + JOB_SECONDS
        # The launcher's maps once its workers run: every library it loads at start or has
        # opened by then (a lazily opened OpenSSL included) is there.
        while launcher.poll() is None and not self.pid_files() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            self.exe = os.readlink(f"/proc/{launcher.pid}/exe")
            with open(f"/proc/{launcher.pid}/maps") as file:
                self.maps = file.read()
        except OSError as error:  # it has exited (and been reaped by poll)
            self.exe = self.maps = f"(unreadable: {error})"
        try:
            self.status = launcher.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"{self.name}: pltrun still runs after {JOB_SECONDS} s; ending it", flush=True)
            end_all(in_session(launcher.pid) + self.worker_pids())
            launcher.wait()
        with open(out_path) as out, open(err_path) as err:
            self.out, self.err = out.read(), err.read()
        result_path = os.path.join(self.directory, "result.json")
        if os.path.exists(result_path):
            with open(result_path) as file:
                self.result = json.load(file)
        self.check_reaped(launcher.pid)
        launchers.remove(launcher.pid)

    def check_reaped(self, session: int) -> None:
        deadline = time.monotonic() + 2
        left = [pid for pid in self.worker_pids() + in_session(session) if alive(pid)]
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [pid for pid in left if alive(pid)]
        check(not left, f"{self.name}: no worker or zygote outlives pltrun", f"still alive: {left}")
        end_all(left)

    def output(self) -> str:
        return f"--- pltrun exit {self.status}; stdout:\n{self.out}--- stderr:\n{self.err}"


def check_launcher(job: Job, pltrun: str) -> None:
    check(os.path.realpath(job.exe) == os.path.realpath(pltrun),
          f"{job.name}: the running launcher is the venv's bin/pltrun", f"/proc/PID/exe: {job.exe}")
    mapped = sorted({line.split()[-1] for line in job.maps.splitlines() if line.count("/") and ".so" in line})
    forbidden = [path for path in mapped if BUNDLED.search(path)]
    # libc is always mapped: a maps file without it was not read.
    libc = any(os.path.basename(path).startswith("libc.so") for path in mapped)
    check(libc and not forbidden,
          f"{job.name}: the running pltrun maps no {BUNDLED_NAMES} library of the system",
          "mapped: " + " ".join(mapped))


def check_ran(job: Job, attempts: int, preloaded: bool, venv: str) -> bool:
    expected = [f"round{attempt}_rank{rank}" for attempt in range(attempts) for rank in range(WORLD_SIZE)]
    ran = check(job.status == 0 and bool(job.result), f"{job.name}: pltrun exited 0 with rank 0's result",
                job.output())
    check(job.pid_files() == expected, f"{job.name}: {attempts} attempt(s) of {WORLD_SIZE} workers ran",
          " ".join(job.pid_files()) + "\n" + job.output())
    if not ran:
        return False
    result = job.result
    check(result.get("restart_count") == attempts - 1 and result.get("world_size") == WORLD_SIZE,
          f"{job.name}: the result is the attempt after {attempts - 1} restart(s), {WORLD_SIZE} ranks", json.dumps(result))
    check(result.get("torch_preloaded") == preloaded,
          f"{job.name}: workers {'forked from the zygote' if preloaded else 'started cold'}", job.output())
    check(os.path.realpath(str(result.get("prefix"))) == os.path.realpath(venv),
          f"{job.name}: the workers ran under the venv's python", f"sys.prefix {result.get('prefix')}")
    return True


def parameters(job: Job) -> List[float]:
    values = job.result.get("parameters")
    return [float(value) for value in values] if isinstance(values, list) else []


def check_restarted(job: Job, clean: Job) -> None:
    check("restarting the worker group (1 of 1 restarts) after rank 3" in job.err,
          f"{job.name}: pltrun restarted the workers once after rank 3 died", job.err)
    resumed = job.result.get("resumed_from")
    check(resumed in (FAIL_AT - 1, FAIL_AT), f"{job.name}: resumed from the checkpoint of step {FAIL_AT - 1} or {FAIL_AT}",
          f"resumed_from {resumed}")
    expected, actual = parameters(clean), parameters(job)
    if not check(len(actual) == len(expected) == PARAMETERS, f"{job.name}: {PARAMETERS} parameters in both results"):
        return
    largest = max(abs(a - b) for a, b in zip(actual, expected))
    check(largest <= TOLERANCE,
          f"{job.name}: ended with the clean run's weights (max |difference| {largest:.3g} <= {TOLERANCE})")


def install(directory: str, wheel: str) -> str:
    """A venv of this interpreter that sees the distribution's torch, with the wheel; "" when
    that failed."""
    venv = os.path.join(directory, "venv")
    processes = Processes(dict(os.environ, PIP_NO_INDEX="1", PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1"))
    made = make_venv(processes, sys.executable, venv, "--system-site-packages")
    return venv if made and pip_install(processes, venv, wheel) else ""


def job_environment(venv: str, directory: str, site: Optional[str]) -> Dict[str, str]:
    """An activated venv's environment, nothing of pltrun's own and no site config."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PLTRUN_", "TORCHELASTIC_", "PYTHON")) and name not in ("RANK", "NODE_RANK")}
    env.update(PATH=f"{os.path.join(venv, 'bin')}:/usr/bin:/bin", VIRTUAL_ENV=venv, PLTRUN_CONFIG="",
               GLOO_SOCKET_IFNAME="lo", TMPDIR=directory, TORCH_CPP_LOG_LEVEL="ERROR")
    if site:
        env["PYTHONPATH"] = site
    return env


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("wheel")
    parser.add_argument("tests_dir")
    parser.add_argument("--torch", required=True)
    parser.add_argument("--site")
    args = parser.parse_args()
    directory, tests_dir = args.directory, args.tests_dir
    signal.signal(signal.SIGTERM, on_terminate)
    print(f"{sys.executable} {sys.version.split()[0]} as uid {os.getuid()}", flush=True)
    check(os.getuid() != 0, "the job runs as an unprivileged user")
    venv = install(directory, args.wheel)
    if not venv:
        return 1
    pltrun = os.path.join(venv, "bin", "pltrun")
    check_elf(pltrun)
    # pip copies a file's x bit only when the wheel's zip mode also says "regular file".
    if not check(os.access(pltrun, os.X_OK), "the venv's bin/pltrun is executable",
                 f"mode {os.stat(pltrun).st_mode:o}: the wheel's zip entry needs S_IFREG | 0o755"):
        return 1
    env = job_environment(venv, directory, args.site)
    script = os.path.join(tests_dir, "e2e", "torch_ddp_train.py")
    common = ["--nproc-per-node", str(WORLD_SIZE), "--max-restarts", "1", "--term-timeout", "5"]
    fault = ["--fail-at", str(FAIL_AT)]
    clean = run_job("clean", common, [], directory, script, env, pltrun, venv)
    if clean.result:
        torch = str(clean.result.get("torch"))
        check(torch.startswith(args.torch + "."), f"clean: the workers imported torch {args.torch}", torch)
        check(float(str(clean.result.get("last_loss"))) < float(str(clean.result.get("first_loss"))),
              "clean: it trained (the loss went down)", json.dumps(clean.result))
    runs: List[Tuple[str, List[str]]] = [("crash", []), ("crash, --preload torch", ["--preload", "torch"])]
    for name, flags in runs:
        job = run_job(name, [*common, *flags], fault, directory, script, env, pltrun, venv)
        if job.result and clean.result:
            check_restarted(job, clean)
    print(f"{len(failures)} failed" if failures else "all passed", flush=True)
    return 1 if failures else 0


def run_job(name: str, flags: List[str], fault: List[str], directory: str, script: str, env: Dict[str, str],
            pltrun: str, venv: str) -> Job:
    """pltrun FLAGS torch_ddp_train.py; checks the launcher while it runs and how it ended."""
    job = Job(name, os.path.join(directory, re.sub(r"[^a-z]+", "-", name)))
    started = time.monotonic()
    job.start(["pltrun", *flags, script, job.directory, "--steps", str(STEPS), *fault], env)
    print(f"  {name}: {time.monotonic() - started:.1f} s", flush=True)
    check_launcher(job, pltrun)
    check_ran(job, 2 if fault else 1, "--preload" in flags, venv)
    return job


if __name__ == "__main__":
    sys.exit(main())
