#!/usr/bin/env python3
"""Checks the layering docs/ARCHITECTURE.md states, over the #include lines: each folder of
sources may include its own headers and those of the folders below it, never one above,
and no mode of the launcher includes another.

A quoted include names a header by its path from an include root ("launcher/plan/x.h",
"rendezvous/store/x.h", "pltrun/x.h", "base/x.h", "version/version.h") or, for a header beside the
file, by its bare name. Angle-bracket includes (the system's and the libraries') are not
checked. Besides the table below, every quoted include of a file under rendezvous/ is found
on disk, and none of them may be a file under lib/: the rendezvous half is the layer the
rest builds on.
Usage: scripts/check/includes.py   (from the repository root; exit 1 on a breach)
"""
import pathlib
import re
import sys

# What each folder may include besides itself, lowest layer first (docs/ARCHITECTURE.md).
# "pltrun/error.h" and "base/" are rendezvous/base, the base every layer may use (Error,
# ErrorCode; the text helpers, the stored integers). The store family's public headers are
# pltrun/store.h and the stores; the rest of "pltrun/" is the client library's.
BASE = ["pltrun/error.h", "base/"]
STORE_PUBLIC = ["pltrun/store.h", "pltrun/tcp_store.h", "pltrun/in_memory_store.h", "pltrun/prefix_store.h"]
STORE = BASE + STORE_PUBLIC + ["rendezvous/store/"]
CLIENT = STORE + ["pltrun/"]
PLAN = CLIENT + ["launcher/plan/"]
OUTPUT = PLAN + ["launcher/output/", "version/"]
PROCESS = OUTPUT + ["launcher/process/"]
GROUP = PROCESS + ["launcher/stall/", "launcher/placement/", "launcher/group/"]
NET = PLAN + ["launcher/command_line/", "rendezvous/etcd/"]
HEALTH = PROCESS + ["launcher/placement/", "launcher/command_line/", "launcher/health/"]
# metrics reads a round end (restartCauseOfRoundEnd) and nothing else of the rendezvous.
METRICS = GROUP + ["launcher/metrics/", "rendezvous/elastic/round_end.h", "rendezvous/elastic/node_state.h"]
ALLOWED = {
    "rendezvous/base": [],
    "rendezvous/store": BASE + STORE_PUBLIC,
    "rendezvous/store/server": STORE,
    "rendezvous/etcd": STORE,
    "rendezvous/elastic": STORE,
    "lib/client": CLIENT,
    "lib/version": [],
    "lib/launcher/plan": BASE,
    "lib/launcher/command_line": PLAN + ["version/"],
    "lib/launcher/placement": PLAN,
    "lib/launcher/output": OUTPUT,
    "lib/launcher/process": PROCESS,
    "lib/launcher/stall": PROCESS,
    "lib/launcher/group": GROUP,
    "lib/launcher/net": NET,
    "lib/launcher/health": HEALTH,
    "lib/launcher/metrics": METRICS,
    "lib/launcher/static_job": METRICS + ["launcher/net/", "launcher/health/"],
    "lib/launcher/agent": METRICS + NET + ["launcher/net/", "rendezvous/", "launcher/health/"],
    "lib/launcher/driver": GROUP + NET + ["launcher/net/", "rendezvous/elastic/store_layout.h"],
    "lib/launcher/status": NET + ["launcher/net/", "rendezvous/"],
}
# The folder's own headers, as they are named from an include root.
OWN = {folder: folder.removeprefix("lib/") + "/" for folder in ALLOWED}
OWN["lib/client"] = "pltrun/"
OWN["rendezvous/base"] = "base/"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Where a quoted include is looked for (the targets' include directories), to find its file.
INCLUDE_ROOTS = ["rendezvous/base/include", "rendezvous/base/internal", "rendezvous/store/include",
                 "lib/client/include", "lib", "."]


def sources(folder):
    """The folder's sources, less those of a folder inside it that has rules of its own."""
    nested = [other for other in ALLOWED if other.startswith(folder + "/")]
    for path in sorted(pathlib.Path(folder).rglob("*")):
        if path.suffix in (".cc", ".h", ".c", ".cu") and not any(str(path).startswith(n + "/") for n in nested):
            yield path


def included_file(path, header):
    for root in [str(path.parent)] + INCLUDE_ROOTS:
        candidate = pathlib.Path(root) / header
        if candidate.is_file():
            return candidate
    return None


def upward_arrows():
    """A file under rendezvous/ that includes one under lib/, or an include found nowhere."""
    found = []
    for path in sorted(pathlib.Path("rendezvous").rglob("*")):
        if path.suffix not in (".cc", ".h", ".c", ".cu"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = included_file(path, match.group(1))
            if target is None:
                found.append(f"{path}:{number}: includes {match.group(1)}, which is in none of {INCLUDE_ROOTS}")
            elif target.parts[0] == "lib":
                found.append(f"{path}:{number}: includes {target}: rendezvous/ may not include lib/")
    return found


def breaches(folder, allowed):
    found = []
    nested_own = [OWN[other] for other in ALLOWED if other.startswith(folder + "/")]
    for path in sources(folder):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            inside = header.startswith(OWN[folder]) and not any(header.startswith(n) for n in nested_own)
            if "/" not in header or inside:
                continue  # beside it, or its own (a folder inside it is above it)
            if not any(header == rule or (rule.endswith("/") and header.startswith(rule)) for rule in allowed):
                found.append(f"{path}:{number}: includes {header}, which {folder} may not (docs/ARCHITECTURE.md)")
    return found


def main():
    found = []
    for folder, allowed in ALLOWED.items():
        found += breaches(folder, allowed)
    found += upward_arrows()
    for line in found:
        print(line)
    if found:
        print(f"check/includes: {len(found)} include(s) break the layering above", file=sys.stderr)
        return 1
    print(f"check/includes: {len(ALLOWED)} folders include only what their layer may")
    return 0


if __name__ == "__main__":
    sys.exit(main())
