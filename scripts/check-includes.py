#!/usr/bin/env python3
"""Checks the layering docs/ARCHITECTURE.md states, over the #include lines: each folder of
sources may include its own headers and those of the folders below it, never one above,
and no mode of the launcher includes another.

A quoted include names a header by its path from an include root ("launcher/plan/x.h",
"rendezvous/store/x.h", "pltrun/x.h", "version/version.h") or, for a header beside the
file, by its bare name. Angle-bracket includes (the system's and the libraries') are not
checked. Usage: scripts/check-includes.py   (from the repository root; exit 1 on a breach)
"""
import pathlib
import re
import sys

# What each folder may include besides itself, lowest layer first (docs/ARCHITECTURE.md).
# "pltrun/" is the client's public headers; "pltrun/error.h" alone is lib/base, the base every
# layer may use (Error, ErrorCode), the store's included.
BASE = ["pltrun/error.h"]
ALLOWED = {
    "rendezvous/store": BASE,
    "lib/client": ["pltrun/", "rendezvous/store/"],
    "rendezvous/elastic": ["pltrun/", "rendezvous/store/"],
    "rendezvous/etcd": ["pltrun/", "rendezvous/store/"],
    "lib/version": [],
    "lib/launcher/plan": ["pltrun/", "rendezvous/store/", "version/"],
    "lib/launcher/process": ["launcher/plan/", "pltrun/", "rendezvous/store/", "version/"],
    "lib/launcher/net": ["launcher/plan/", "pltrun/", "rendezvous/store/", "rendezvous/etcd/"],
    "lib/launcher/single_node": ["launcher/plan/", "launcher/process/", "pltrun/"],
    "lib/launcher/agent": ["launcher/plan/", "launcher/process/", "launcher/net/", "pltrun/", "rendezvous/"],
    "lib/launcher/driver": ["launcher/plan/", "launcher/process/", "launcher/net/", "pltrun/", "rendezvous/store/",
                            "rendezvous/elastic/store_layout.h"],
    "lib/launcher/status": ["launcher/plan/", "launcher/net/", "pltrun/", "rendezvous/"],
}
# The folder's own headers, as they are named from an include root.
OWN = {folder: folder.removeprefix("lib/") + "/" for folder in ALLOWED}
OWN["lib/client"] = "pltrun/"
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
        print(f"check-includes: {len(found)} include(s) break the layering above", file=sys.stderr)
        return 1
    print(f"check-includes: {len(ALLOWED)} folders include only what their layer may")
    return 0


if __name__ == "__main__":
    sys.exit(main())
