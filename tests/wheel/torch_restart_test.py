"""CTest's "wheel: ... (torch X)": tests/wheel/torch_restart_job.py (the wheel's pltrun in
a venv, a 4-worker torch job through a crash and a restart) as an unprivileged user, under
one torch:

    torch_restart_test.py bookworm|trixie|forky SOURCE_DIR

bookworm: this machine's /usr/bin/python3 (torch 1.13), as the user nobody, in a temporary
directory under /tmp given to nobody and deleted after: the test makes no account on the
host, and running as the chroots' uid without one would leave pip, torch and getpass with a
uid that has no name. trixie (torch 2.6) and forky (torch 2.14): the chroot's python3
(scripts/chroot/torch.sh; its extras hold python3-venv), in a throwaway copy of the chroot
(`run --fresh`) where the user of the venv chroots (scripts/chroot/test_user.env: name and
uid) is created, as torch.sh's chroots have none; that copy fails the run when any process
is left in it. The temporary directory, bound into the chroot, holds the venv and the jobs'
files.

The wheel: tests/wheel/wheel_file.py's ($PLTRUN_WHEEL_FILE, else the newest
SOURCE_DIR/build-wheel/dist/pltrun-*.whl); without one the test fails saying how to build it.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Dict, List

import wheel_file  # beside this file

NOBODY = 65534
TORCH = {"bookworm": "1.13", "trixie": "2.6", "forky": "2.14"}
SECONDS = 570  # CTest's TIMEOUT is 600; the job ends a pltrun that runs past 150 s itself


def chroot_user(source_dir: str) -> Dict[str, str]:
    """scripts/chroot/test_user.env's NAME=VALUE lines: test_user_name, test_user_id."""
    with open(os.path.join(source_dir, "scripts", "chroot", "test_user.env")) as file:
        lines = [line.strip().split("=", 1) for line in file if "=" in line and not line.startswith("#")]
    return {name: value for name, value in lines}


def job_command(suite: str, directory: str, wheel: str, source_dir: str) -> List[str]:
    tests_dir = os.path.join(source_dir, "tests")
    job = [os.path.join(tests_dir, "wheel", "torch_restart_job.py"), os.path.join(directory, "job"), wheel, tests_dir,
           "--torch", TORCH[suite]]
    home = os.path.join(directory, "home")
    if suite == "bookworm":
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                "env", f"HOME={home}", "/usr/bin/python3", *job]
    # In the copy: the user, the directory given to it, then the job as that user.
    user = chroot_user(source_dir)
    inner = ('useradd --no-create-home --home-dir "$1" --uid "$3" --user-group --shell /bin/sh "$2" && '
             'chown -R "$2:" "$1" && shift 3 && '
             'exec setpriv --reuid="$USER_NAME" --regid="$USER_NAME" --init-groups env HOME="$HOME_DIR" python3 "$@"')
    return ["bash", os.path.join(source_dir, "scripts", "chroot", "torch.sh"), suite, "run", "--fresh",
            "--bind", directory, "--bind", tests_dir, "--",
            "env", f"USER_NAME={user['test_user_name']}", f"HOME_DIR={home}",
            "/bin/sh", "-c", inner, "sh", directory, user["test_user_name"], user["test_user_id"], *job,
            "--site", os.path.join(tests_dir, "torch2", "site")]


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in TORCH:
        print("usage: torch_restart_test.py bookworm|trixie|forky SOURCE_DIR")
        return 2
    suite = sys.argv[1]
    source_dir = os.path.realpath(sys.argv[2])  # as the chroot binds its tests
    wheel = wheel_file.find(source_dir)
    if not wheel:
        return 1
    if suite != "bookworm":
        ready = subprocess.run(["bash", os.path.join(source_dir, "scripts", "chroot", "torch.sh"), suite, "ready"])
        if ready.returncode != 0:
            print(f"the {suite} torch chroot is missing or lacks its extras: bash scripts/chroot/torch.sh {suite} ensure")
            return 1
    if os.getuid() != 0:
        print("needs root: it runs the job as another, unprivileged user (and chroots for torch 2.x)")
        return 1
    # Short, under /tmp: pltrun's heartbeat and zygote sockets are made in it (a Unix
    # socket's path has at most 107 bytes).
    directory = tempfile.mkdtemp(prefix="pltrun-wt-", dir="/tmp")
    try:
        os.chmod(directory, 0o755)
        os.makedirs(os.path.join(directory, "home"))
        copy = os.path.join(directory, os.path.basename(wheel))  # pip reads the name's tags
        shutil.copyfile(wheel, copy)
        if suite == "bookworm":
            for root, dirs, files in os.walk(directory):
                for name in [root] + [os.path.join(root, entry) for entry in dirs + files]:
                    os.chown(name, NOBODY, NOBODY)
        print(f"wheel: {wheel}", flush=True)
        job = subprocess.Popen(job_command(suite, directory, copy, source_dir), start_new_session=True)
        try:
            return job.wait(SECONDS)
        except subprocess.TimeoutExpired:
            print(f"the job still runs after {SECONDS} s; ending it", flush=True)
            os.killpg(job.pid, signal.SIGTERM)
            job.wait()
            return 1
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
