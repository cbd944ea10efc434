"""The tables of scripts/bench/restart.sh, in markdown for docs/PERFORMANCE.md.

    restart_report.py RUNS_TSV HAS_PRELOAD CPUS COMMIT ONLY COMMAND

ONLY: the parts run (a,b,c). RUNS_TSV: the script's runs.tsv (KIND TORCH MODE REP DIR STATUS, or "load"/"missing" lines).
Each restart job's DIR holds launcher_start (seconds since boot) and the workers'
stamps.jsonl (tests/bench/restart_train.py); each memory job's DIR holds pss. A job counts
only when it checks out (see `restart_figures`); every other one is listed as FAILED with
what went wrong, and the exit status is then 1.
"""

import json
import os
import statistics
import sys

RANKS = 4
CRASH_STEP = 3
# Each split column: the moment the LAST rank reached it (the job is back only then).
MILESTONES = [("created", "process created"), ("python", "interpreter started"),
              ("torch", "`import torch` done"), ("pg", "group formed"), ("first_step", "first step done")]


def read_stamps(directory):
    crashes, attempts = [], {}
    try:
        lines = open(os.path.join(directory, "stamps.jsonl")).read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        record = json.loads(line)
        if "crash" in record:
            crashes.append(record["crash"])
        else:
            attempts.setdefault(record["attempt"], []).append(record)
    return crashes, attempts


def split(origin, records):
    """The seconds from ORIGIN to the last rank's creation, then between the milestones."""
    latest = [max(r[key] for r in records) for key, _ in MILESTONES]
    return [latest[0] - origin] + [b - a for a, b in zip(latest, latest[1:])]


def why_not(status, kind_a, crashes, attempts, directory):
    """Why a restart job does not count for (a), or None when it does."""
    if status != "0":
        return f"exit {status}" + last_error(directory)
    if kind_a and len(crashes) != 1:
        return f"{len(crashes)} crash stamps, expected 1"
    if kind_a and len(attempts.get(1, [])) != RANKS:
        return f"{len(attempts.get(1, []))} of {RANKS} ranks took a step after the restart"
    if kind_a and any(r["resumed_at"] != CRASH_STEP for r in attempts[1]):
        return f"attempt 1 did not resume from the step-{CRASH_STEP} checkpoint"
    return None


def last_error(directory):
    """The launcher's last error-looking line, for a failed job's one line."""
    try:
        lines = open(os.path.join(directory, "launcher.err"), errors="replace").read().splitlines()
        lines += open(os.path.join(directory, "launcher.out"), errors="replace").read().splitlines()
    except OSError:
        return ""
    # The most telling first: gloo's mesh failure (a stale peer address), then any Error line.
    for key in ("connectFullMesh failed", "Error: ", "rror", "refused", "failed"):
        picked = [line for line in lines if key in line and "ChildFailedError" not in line]
        if picked:
            return ": " + picked[-1].strip()[:240]
    return ""


def median_cell(values, digits=2):
    if not values:
        return "—"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main():
    runs_tsv, has_preload, cpus, commit, only, command = sys.argv[1:7]
    restarts, memory, loads, failures, missing, order = {}, {}, [], [], [], []
    for line in open(runs_tsv):
        fields = line.rstrip("\n").split("\t")
        if fields[0] == "load":
            loads.append(f"{fields[1]}: {fields[2]}")
            continue
        if fields[0] == "missing":
            missing.append(f"torch {fields[1]}: {fields[2]}")
            continue
        kind, version, mode, rep, directory, status = fields
        if (version, mode) not in order:
            order.append((version, mode))
        if kind == "a":
            restarts.setdefault((version, mode), []).append((rep, directory, status))
        else:
            memory.setdefault((version, mode, int(rep.split("-")[0])), []).append((rep, directory, status))

    kind_a = "a" in only.split(",")
    cold, crash = {}, {}
    for key, jobs in restarts.items():
        for rep, directory, status in jobs:
            crashes, attempts = read_stamps(directory)
            # (b) counts whenever attempt 0 stepped on every rank, even if the restart failed.
            if len(attempts.get(0, [])) == RANKS:
                start = float(open(os.path.join(directory, "launcher_start")).read())
                cold.setdefault(key, []).append(split(start, attempts[0]))
            else:
                failures.append(f"torch {key[0]}, {key[1]}, run {rep}: {len(attempts.get(0, []))} of {RANKS} "
                                f"ranks took a first step; exit {status}{last_error(directory)} ({directory})")
                continue
            problem = why_not(status, kind_a, crashes, attempts, directory)
            if problem:
                failures.append(f"torch {key[0]}, {key[1]}, run {rep}: restart failed: {problem} ({directory})")
            elif kind_a:
                crash.setdefault(key, []).append(split(crashes[0], attempts[1]))

    print(f"\n{RANKS}-rank gloo DDP (Adam, checkpoint every step), loopback, {cpus} CPUs, commit {commit}")
    print(f"command: `{command}`")
    print("1-minute, 5-minute, 15-minute load averages as each part started: " + "; ".join(loads))
    if has_preload != "1":
        print("pltrun --preload: not available in this build (`pltrun --help` lists no --preload)")
    for line in missing:
        print(f"not run: {line}")

    def table(title, origin, figures):
        print(f"\n{title}: seconds, median (min–max) of the runs that checked out; each column is the")
        print("moment the LAST rank got there, less the column before (they add up to the total)\n")
        heads = " | ".join(f"→ {label}" for _, label in MILESTONES[1:])
        print(f"| torch | launcher | runs | total | {origin} → {MILESTONES[0][1]} | {heads} |")
        print("|---|---|---|---|" + "---|" * len(MILESTONES))
        for key in order:
            if key not in restarts:
                continue
            values = figures.get(key, [])
            total = median_cell([sum(v) for v in values])
            parts = " | ".join(median_cell([v[i] for v in values]) for i in range(len(MILESTONES)))
            print(f"| {key[0]} | {key[1]} | {len(values)}/{len(restarts[key])} | **{total}** | {parts} |")

    if kind_a:
        table("(a) crash → every rank's first step after the restart", "crash", crash)
    if restarts:
        table("(b) launcher start → every rank's first step (cold start)", "start", cold)
        print("\n(b) ratios of medians, pltrun cold / each mode (higher: sooner)")
        for version in dict.fromkeys(v for v, _ in order):
            base = cold.get((version, "pltrun"))
            if not base:
                continue
            base_total = statistics.median(sum(v) for v in base)
            for v, mode in order:
                if v == version and mode != "pltrun" and cold.get((v, mode)):
                    ratio = base_total / statistics.median(sum(x) for x in cold[(v, mode)])
                    print(f"    torch {version}: {mode}: {ratio:.2f}x")

    if memory:
        print("\n(c) PSS of the workers after one step (MB, sum over the workers; the zygote's own PSS apart),")
        print("median (min–max)\n")
        print("| torch | launcher | workers | runs | workers' PSS | zygote's PSS | together |")
        print("|---|---|---|---|---|---|---|")
        for key in sorted(memory, key=lambda k: (order.index((k[0], k[1])), k[2])):
            ok, zygotes, together = [], [], []
            for rep, directory, status in memory[key]:
                if status != "ok":
                    failures.append(f"torch {key[0]}, {key[1]}, {key[2]} workers, run {rep}: {status} ({directory})")
                    continue
                rows = [line.split() for line in open(os.path.join(directory, "pss"))]
                workers = sum(int(kb) for what, _, kb in rows if what == "worker") / 1024
                zygote = sum(int(kb) for what, _, kb in rows if what == "zygote") / 1024
                if sum(1 for row in rows if row[0] == "worker") != key[2]:
                    failures.append(f"torch {key[0]}, {key[1]}, {key[2]} workers, run {rep}: PSS read for "
                                    f"{sum(1 for row in rows if row[0] == 'worker')} workers ({directory})")
                    continue
                ok.append(workers)
                zygotes.append(zygote)
                together.append(workers + zygote)
            print(f"| {key[0]} | {key[1]} | {key[2]} | {len(ok)}/{len(memory[key])} | {median_cell(ok, 0)} | "
                  f"{median_cell(zygotes, 0)} | {median_cell(together, 0)} |")

    for line in failures:
        print(f"FAILED: {line}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
