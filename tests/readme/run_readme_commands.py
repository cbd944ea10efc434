"""Runs the commands of README.md's ```sh blocks as written (issue 44), against the built
pltrun, on loopback:

    python3 run_readme_commands.py README.md CONTRIBUTING.md PLTRUN_BINARY

Each command that starts with `pltrun` runs in a fresh directory holding the files the
README's examples name (train.py, hosts.txt), with `pltrun` first on PATH and four GPUs
faked (PLTRUN_FAKE_GPUS). It must exit 0, and where it runs train.py, every rank of one
world must report. Only host names change: an elastic command's `--rdzv-endpoint node-a:PORT`
becomes `127.0.0.1:0` for the first agent (which prints the free port it took) and that
port for the others, as many agents as the command's `--nnodes` allows at most; `node-a`
and `node-b` in `--hosts` become `localhost` and `127.0.0.1` (two agents on this machine,
started without ssh). Every other command (the demo, the tests, apt, sudo) must be listed,
exactly as written, in CONTRIBUTING.md's checklist, which says how it was checked, and a
script it runs (`bash scripts/...`) must exist. Also:
README.md is at most 200 lines and shows `bash scripts/demo.sh` and `bash scripts/test.sh`
in its first 40. Prints one line per command; exit status 1 on the first failure."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

RUN_TIMEOUT_S = 180
TRAIN_PY = """import os, sys
print("readme-train: rank %s of %s" % (os.environ["RANK"], os.environ["WORLD_SIZE"]), sys.argv[1:], flush=True)
"""
HOSTS_TXT = "localhost slots=2\n127.0.0.1 slots=2\n"
LOCAL_HOSTS = {"node-a": "localhost", "node-b": "127.0.0.1"}


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def sh_commands(readme):
    """The command lines of every ```sh block: comments dropped, continuations joined."""
    commands, in_sh, pending = [], False, ""
    for line in readme.splitlines():
        if line.startswith("```"):
            in_sh = not in_sh and line.strip() == "```sh"
            continue
        text = line.strip()
        if not in_sh or not text or text.startswith("#"):
            continue
        text = re.sub(r"\s+#\s.*$", "", pending + text)
        if text.endswith("\\"):
            pending = text[:-1]
            continue
        pending = ""
        commands.append(text)
    return commands


def start(command, workdir, env, output):
    """bash -c COMMAND in a session of its own, so that everything it starts is reaped."""
    return subprocess.Popen(["bash", "-c", command], cwd=workdir, env=env, stdout=output,
                            stderr=subprocess.STDOUT, start_new_session=True)


def finish(processes, deadline):
    """Waits for every process until the deadline; kills each one's session either way."""
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            codes.append("timed out")
    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    return codes


def whole_world(output):
    """True when train.py reported every rank 0..W-1 of one world size W."""
    reports = re.findall(r"readme-train: rank (\d+) of (\d+)", output)
    worlds = {int(world) for _, world in reports}
    return len(worlds) == 1 and {int(rank) for rank, _ in reports} == set(range(worlds.pop()))


def elastic_agents(command, workdir, env):
    """The same command as every node's agent: the first on 127.0.0.1:0, the rest on its port."""
    nnodes = re.search(r"--nnodes[ =](\d+)(?::(\d+))?", command)
    agents = int(nnodes.group(2) or nnodes.group(1))
    endpoint = re.compile(r"node-a:\d+")
    logs = [open(os.path.join(workdir, "agent%d.log" % i), "w+") for i in range(agents)]
    processes = [start(endpoint.sub("127.0.0.1:0", command), workdir, env, logs[0])]
    deadline = time.monotonic() + RUN_TIMEOUT_S
    port = None
    while port is None and time.monotonic() < deadline and processes[0].poll() is None:
        time.sleep(0.05)
        found = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(logs[0].name).read())
        port = found and found.group(1)
    if port:
        for log in logs[1:]:
            processes.append(start(endpoint.sub("127.0.0.1:" + port, command), workdir, env, log))
    codes = finish(processes, deadline)
    output = "".join(open(log.name).read() for log in logs)
    return (codes if port else ["no port printed"]), output


def run_pltrun(command, workdir, env):
    if re.search(r"--rdzv-endpoint[ =]node-a:", command):
        return elastic_agents(command, workdir, env)
    for name, local in LOCAL_HOSTS.items():
        command = re.sub(r"\b%s\b" % name, local, command)
    with open(os.path.join(workdir, "pltrun.log"), "w+") as log:
        codes = finish([start(command, workdir, env, log)], time.monotonic() + RUN_TIMEOUT_S)
        return codes, open(log.name).read()


def test_environment(scratch, pltrun):
    bindir = os.path.join(scratch, "bin")
    locks = os.path.join(scratch, "gpu-locks")
    os.makedirs(bindir)
    os.makedirs(locks, mode=0o700)
    os.symlink(os.path.abspath(pltrun), os.path.join(bindir, "pltrun"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "PLTRUN_", "SLURM_"))}
    env.update(PATH=bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin"), PLTRUN_FAKE_GPUS="4",
               PLTRUN_GPU_LOCK_DIR=locks, PLTRUN_CONFIG="")
    return env


def check_command(command, index, scratch, env, checklist, repo):
    if not command.startswith("pltrun "):
        if command not in checklist:
            fail("README command neither run by this test nor in CONTRIBUTING.md's checklist: " + command)
        for script in re.findall(r"(?:^|&& )bash (\S+)", command):
            if not os.path.isfile(os.path.join(repo, script)):
                fail("README command runs %s, which is not in the repository: %s" % (script, command))
        print("checklist: " + command, flush=True)
        return
    workdir = os.path.join(scratch, "command%d" % index)
    os.makedirs(workdir)
    with open(os.path.join(workdir, "train.py"), "w") as f:
        f.write(TRAIN_PY)
    with open(os.path.join(workdir, "hosts.txt"), "w") as f:
        f.write(HOSTS_TXT)
    codes, output = run_pltrun(command, workdir, env)
    if any(code != 0 for code in codes):
        fail("%s: exit %s\n%s" % (command, codes, output[-4000:]))
    if "train.py" in command and not whole_world(output):
        fail("%s: not every rank of one world reported\n%s" % (command, output[-4000:]))
    print("ran: " + command, flush=True)


def main(readme_path, contributing_path, pltrun):
    readme = open(readme_path).read()
    lines = readme.splitlines()
    if len(lines) > 200:
        fail("README.md has %d lines; at most 200" % len(lines))
    for first_screen in ("bash scripts/demo.sh", "bash scripts/test.sh"):
        if not any(line.startswith(first_screen) for line in lines[:40]):
            fail("README.md's first 40 lines do not show " + first_screen)
    checklist = open(contributing_path).read()
    commands = sh_commands(readme)
    if not any(c.startswith("pltrun ") for c in commands):
        fail("no pltrun command found in README.md's sh blocks")
    with tempfile.TemporaryDirectory(prefix="pltrun-readme-") as scratch:
        env = test_environment(scratch, pltrun)
        for index, command in enumerate(commands):
            check_command(command, index, scratch, env, checklist, os.path.dirname(os.path.abspath(readme_path)))
    print("%d README commands checked" % len(commands))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: run_readme_commands.py README.md CONTRIBUTING.md PLTRUN_BINARY")
    main(*sys.argv[1:])
