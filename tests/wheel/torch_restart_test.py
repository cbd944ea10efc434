"""CTest's "wheel: ... (torch X)": tests/wheel/torch_restart_job.py (the wheel's pltrun in
a venv, a 4-worker torch job through a crash and a restart) as an unprivileged user, under
one torch:

    torch_restart_test.py bookworm|trixie|forky SOURCE_DIR

bookworm: this machine's /usr/bin/python3 (torch 1.13), as the user nobody (the test makes
no account on the host), in a temporary directory under /tmp given to nobody and deleted
after. trixie (torch 2.6) and forky (torch 2.14): the chroot's python3 (scripts/chroot/
torch.sh; its extras hold python3-venv), in a throwaway copy of the chroot (`run --fresh`)
where the job's user is created; that copy fails the run when any process is left in it.
The temporary directory, bound into the chroot, holds the venv and the jobs' files.

The wheel: tests/wheel/wheel_file.py's ($PLTRUN_WHEEL_FILE, else the newest
SOURCE_DIR/build-wheel/dist/pltrun-*.whl); without one the test fails saying how to build it.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import List

import wheel_file  # beside this file

NOBODY = 65534
CHROOT_USER = "pltrun-wheel"  # made in the throwaway copy only
TORCH = {"bookworm": "1.13", "trixie": "2.6", "forky": "2.14"}
SECONDS = 570  # CTest's TIMEOUT is 600; the job ends a pltrun that runs past 150 s itself


def job_command(suite: str, directory: str, wheel: str, tests_dir: str) -> List[str]:
    job = [os.path.join(tests_dir, "wheel", "torch_restart_job.py"), os.path.join(directory, "job"), wheel, tests_dir,
           "--torch", TORCH[suite]]
    home = os.path.join(directory, "home")
    if suite == "bookworm":
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                "env", f"HOME={home}", "/usr/bin/python3", *job]
    # In the copy: the user, the directory given to it, then the job as that user.
    inner = ('useradd --no-create-home --home-dir "$1" --shell /bin/sh "$2" && chown -R "$2:" "$1" && shift 2 && '
             'exec setpriv --reuid="$USER_NAME" --regid="$USER_NAME" --init-groups env HOME="$HOME_DIR" python3 "$@"')
    return ["bash", os.path.join(tests_dir, "..", "scripts", "chroot", "torch.sh"), suite, "run", "--fresh",
            "--bind", directory, "--bind", tests_dir, "--",
            "env", f"USER_NAME={CHROOT_USER}", f"HOME_DIR={home}",
            "/bin/sh", "-c", inner, "sh", directory, CHROOT_USER, *job, "--site", os.path.join(tests_dir, "torch2", "site")]


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in TORCH:
        print("usage: torch_restart_test.py bookworm|trixie|forky SOURCE_DIR")
        return 2
    suite, source_dir = sys.argv[1:3]
    tests_dir = os.path.join(os.path.realpath(source_dir), "tests")  # as the chroot binds it
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
        job = subprocess.Popen(job_command(suite, directory, copy, tests_dir), start_new_session=True)
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
