#!/usr/bin/env python3
"""Proves that a wheel keeps the promise of its platform tag: every ELF file in it needs only
libraries and symbol versions that every system of that manylinux tag has.

    /usr/bin/python3 scripts/check/wheel_tag.py dist/pltrun-0.1.0-py3-none-manylinux_2_28_x86_64.whl

The rules are auditwheel's policy (PEP 600) for x86_64, written down below for the tags
this project may claim: the libraries a program may need from the system (the rest must be
inside the wheel), and the newest version of each symbol namespace (GLIBC_2.28, ...). Each
ELF file is read with binutils' readelf: its NEEDED entries, the versions it needs
(.gnu.version_r) and the symbols it takes from libc. The wheel's RECORD is checked too, and
that its programs are regular files with the executable bit (else pip installs them 0644).
Prints, for each ELF file, the newest version it needs of each namespace; exits 1 with a
line per broken rule. Also says when the ELF files would allow an older tag than claimed.
"""

import base64
import csv
import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# The newest version of each namespace a tag allows (auditwheel's manylinux-policy.json,
# x86_64; versions between two allowed ones that glibc never had do not occur).
NEWEST_VERSIONS = {
    "manylinux_2_17_x86_64": {"GLIBC": "2.17", "GLIBCXX": "3.4.19", "CXXABI": "1.3.7", "GCC": "4.8.0"},
    "manylinux_2_24_x86_64": {"GLIBC": "2.24", "GLIBCXX": "3.4.22", "CXXABI": "1.3.10", "GCC": "4.8.0"},
    "manylinux_2_28_x86_64": {"GLIBC": "2.28", "GLIBCXX": "3.4.24", "CXXABI": "1.3.11", "GCC": "7.0.0"},
}
# Versions outside the numbered sequence that the policies allow as well.
OTHER_ALLOWED_VERSIONS = {"CXXABI_TM_1", "CXXABI_FLOAT128"}
# The libraries a manylinux system provides (the policy's lib_whitelist), and the dynamic
# loader itself, which every program names and which auditwheel leaves out of the check.
SYSTEM_LIBRARIES = {
    "libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libc.so.6",
    "libnsl.so.1", "libutil.so.1", "libpthread.so.0", "libresolv.so.2", "libz.so.1",
    "libexpat.so.1", "libatomic.so.1", "ld-linux-x86-64.so.2",
}
# Symbols of libc that a manylinux system may lack although their version is old enough.
FORBIDDEN_SYMBOLS = {"__cxa_thread_atexit_impl", "__issignaling", "__issignalingf", "__issignalingl",
                     "pthread_getattr_default_np", "pthread_setattr_default_np"}


def version_key(text):
    return tuple(int(part) for part in text.split("."))


def readelf(option, path):
    return subprocess.run(["readelf", option, "--wide", str(path)], stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout


def needed_versions(path):
    """{namespace: newest version} of what the file needs, and the versions themselves."""
    names = re.findall(r"Name: (\S+)\s+Flags", readelf("-V", path))
    newest = {}
    for name in names:
        namespace, _, number = name.rpartition("_")
        if re.fullmatch(r"[0-9.]+", number) and (namespace not in newest or version_key(number) > version_key(newest[namespace])):
            newest[namespace] = number
    return newest, set(names)


def problems_of(path, tag):
    allowed = NEWEST_VERSIONS[tag]
    problems = []
    for library in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf("-d", path)):
        if library not in SYSTEM_LIBRARIES:
            problems.append("needs %s, which %s does not promise (put it inside the wheel)" % (library, tag))
    newest, names = needed_versions(path)
    for name in sorted(names):
        namespace, _, number = name.rpartition("_")
        if name in OTHER_ALLOWED_VERSIONS:
            continue
        if namespace not in allowed or not re.fullmatch(r"[0-9.]+", number):
            problems.append("needs symbol version %s, which %s does not list" % (name, tag))
        elif version_key(number) > version_key(allowed[namespace]):
            problems.append("needs %s, newer than %s's %s_%s" % (name, tag, namespace, allowed[namespace]))
    for line in readelf("--dyn-syms", path).splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[6] == "UND" and fields[7].split("@")[0] in FORBIDDEN_SYMBOLS:
            problems.append("takes %s from libc, which %s does not promise" % (fields[7], tag))
    return problems, newest


def oldest_tag_allowing(newest_by_file):
    for tag in sorted(NEWEST_VERSIONS, key=lambda t: version_key(NEWEST_VERSIONS[t]["GLIBC"])):
        allowed = NEWEST_VERSIONS[tag]
        if all(namespace in allowed and version_key(number) <= version_key(allowed[namespace])
               for newest in newest_by_file for namespace, number in newest.items()):
            return tag
    return None


def record_problems(archive):
    record_name = next((n for n in archive.namelist() if n.endswith(".dist-info/RECORD")), None)
    if record_name is None:
        return ["no .dist-info/RECORD"]
    problems, listed = [], set()
    for name, digest, size in csv.reader(archive.read(record_name).decode().splitlines()):
        listed.add(name)
        if name == record_name:
            continue
        if name not in archive.namelist():
            problems.append("RECORD lists %s, which the wheel does not hold" % name)
            continue
        data = archive.read(name)
        actual = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if digest != actual or size != str(len(data)):
            problems.append("RECORD's hash or size of %s is wrong" % name)
    problems += ["%s is not in RECORD" % name for name in archive.namelist() if name not in listed]
    return problems


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: wheel_tag.py WHEEL")
    wheel = Path(argv[1])
    tag = wheel.stem.split("-")[-1]
    if tag not in NEWEST_VERSIONS:
        sys.exit("wheel_tag: %s: platform tag %s is none this check knows (%s)" % (wheel.name, tag, ", ".join(NEWEST_VERSIONS)))
    problems, newest_by_file = [], []
    with zipfile.ZipFile(str(wheel)) as archive, tempfile.TemporaryDirectory() as scratch:
        wheel_file = next(n for n in archive.namelist() if n.endswith(".dist-info/WHEEL"))
        if "Tag: py3-none-%s" % tag not in archive.read(wheel_file).decode():
            problems.append("%s does not say Tag: py3-none-%s" % (wheel_file, tag))
        problems += record_problems(archive)
        problems += ["%s: not a regular file with the executable bit, so pip installs a program that cannot run" % info.filename
                     for info in archive.infolist()
                     if ".data/scripts/" in info.filename and (info.external_attr >> 16) & 0o170111 != 0o100111]
        for name in archive.namelist():
            if archive.read(name)[:4] != b"\x7fELF":
                continue
            path = Path(archive.extract(name, scratch))
            file_problems, newest = problems_of(path, tag)
            newest_by_file.append(newest)
            print("%s: %s" % (name, ", ".join("%s_%s" % item for item in sorted(newest.items()))))
            problems += ["%s: %s" % (name, problem) for problem in file_problems]
    if not newest_by_file:
        problems.append("no ELF file in the wheel")
    oldest = oldest_tag_allowing(newest_by_file)
    if not problems and oldest and oldest != tag:
        print("note: the ELF files would allow %s, older than the claimed %s" % (oldest, tag))
    for problem in problems:
        print("wheel_tag: " + problem, file=sys.stderr)
    print("wheel_tag: %s: %s" % (wheel.name, "FAILS its tag" if problems else "keeps to " + tag))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
