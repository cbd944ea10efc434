#!/usr/bin/env python3
"""Checks the layering docs/ARCHITECTURE.md states, over the #include lines: each folder of
sources may include its own headers and those of the folders below it, never one above,
and no mode of the launcher includes another.

A quoted include names a header by its path from an include root ("launcher/plan/x.h",
"rendezvous/store/x.h", "pltrun/x.h", "base/x.h", "version/version.h") or, for a header beside the
file, by its bare name. Angle-bracket includes (the system's and the libraries') are not
checked. Usage: scripts/check/includes.py   (from the repository root; exit 1 on a breach)
"""
import pathlib
import re
import sys

# What each folder may include besides itself, lowest layer first (docs/ARCHITECTURE.md).
# "pltrun/" is the client's public headers; "pltrun/error.h" and "base/" are lib/base, the base
# every layer may use (Error, ErrorCode; the text helpers, the stored integers), the store's
# included.
BASE = ["pltrun/error.h", "base/"]
CLIENT = BASE + ["pltrun/"]
PLAN = CLIENT + ["launcher/plan/"]
OUTPUT = PLAN + ["launcher/output/", "version/"]
PROCESS = OUTPUT + ["launcher/process/"]
GROUP = PROCESS + ["launcher/stall/", "launcher/placement/", "launcher/group/"]
NET = PLAN + ["launcher/command_line/", "rendezvous/store/", "rendezvous/etcd/"]
ALLOWED = {
    "lib/base": [],
    "lib/cxx_libraries": [],
    "lib/openssl_loader": [],
    "rendezvous/store": BASE,
    "lib/client": CLIENT + ["rendezvous/store/"],
    "rendezvous/elastic": CLIENT,
    "rendezvous/etcd": CLIENT,
    "lib/version": [],
    "lib/launcher/plan": CLIENT,
    "lib/launcher/command_line": PLAN + ["version/"],
    "lib/launcher/placement": PLAN,
    "lib/launcher/output": OUTPUT,
    "lib/launcher/process": PROCESS,
    "lib/launcher/stall": PROCESS,
    "lib/launcher/group": GROUP,
    "lib/launcher/net": NET,
    "lib/launcher/static_job": GROUP + ["launcher/net/"],
    "lib/launcher/agent": GROUP + NET + ["launcher/net/", "rendezvous/"],
    "lib/launcher/driver": GROUP + NET + ["launcher/net/", "rendezvous/elastic/store_layout.h"],
    "lib/launcher/status": NET + ["launcher/net/", "rendezvous/"],
}
# The folder's own headers, as they are named from an include root.
OWN = {folder: folder.removeprefix("lib/") + "/" for folder in ALLOWED}
OWN["lib/client"] = "pltrun/"
OWN["lib/base"] = "base/"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def breaches(folder, allowed):
    found = []
    for path in sorted(pathlib.Path(folder).rglob("*")):
        if path.suffix not in (".cc", ".h", ".c", ".cu"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            if "/" not in header or header.startswith(OWN[folder]):
                continue  # beside it, or its own
            if not any(header == rule or (rule.endswith("/") and header.startswith(rule)) for rule in allowed):
                found.append(f"{path}:{number}: includes {header}, which {folder} may not (docs/ARCHITECTURE.md)")
    return found


def main():
    found = []
    for folder, allowed in ALLOWED.items():
        found += breaches(folder, allowed)
    for line in found:
        print(line)
    if found:
        print(f"check/includes: {len(found)} include(s) break the layering above", file=sys.stderr)
        return 1
    print(f"check/includes: {len(ALLOWED)} folders include only what their layer may")
    return 0


if __name__ == "__main__":
    sys.exit(main())
