"""scripts/check/wheel_tag.py keeps the wheel to its tag (CTest: "wheel: wheel_tag.py ..."):
it passes the real wheel, and fails the same wheel whose pltrun program is replaced by this
machine's build (linked against the system's spdlog, fmt, toml++ and OpenSSL, and glibc's
newest symbol versions), with RECORD made right for the new file, so that the ELF file is
the only thing wrong with it.

    wheel_tag_test.py SOURCE_DIR HOST_PLTRUN

The wheel: tests/wheel/wheel_file.py's ($PLTRUN_WHEEL_FILE, else the newest
SOURCE_DIR/build-wheel/dist/pltrun-*.whl); without one the test fails saying how to build it.
"""

import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

import wheel_file  # beside this file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from run_python_test import check, failures  # noqa: E402  (tests/python's one-line checks)


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def replace_program(wheel: str, program: str, replacement: str, out: str) -> None:
    """Writes to `out` the wheel with the file `program` holding `replacement`'s bytes, and
    RECORD's line for it made to match."""
    with open(replacement, "rb") as file:
        data = file.read()
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info.filename)
            if info.filename == program:
                content = data
            elif info.filename.endswith(".dist-info/RECORD"):
                lines = [record_line(program, data) if line.startswith(program + ",") else line
                         for line in content.decode().splitlines()]
                content = ("\n".join(lines) + "\n").encode()
            target.writestr(info, content)


def wheel_tag(source_dir: str, wheel: str) -> "subprocess.CompletedProcess[str]":
    done = subprocess.run([sys.executable, os.path.join(source_dir, "scripts", "check", "wheel_tag.py"), wheel],
                          capture_output=True, text=True, timeout=120)
    print(f"$ wheel_tag.py {wheel}\n  exit {done.returncode}\n{done.stdout}{done.stderr}", flush=True)
    return done


def main() -> int:
    source_dir, host_pltrun = sys.argv[1:3]
    wheel = wheel_file.find(source_dir)
    if not wheel:
        return 1
    real = wheel_tag(source_dir, wheel)
    check(real.returncode == 0 and "keeps to manylinux_" in real.stdout, "wheel_tag.py passes the real wheel",
          real.stderr)
    with zipfile.ZipFile(wheel) as archive:
        program = next((name for name in archive.namelist() if name.endswith(".data/scripts/pltrun")), "")
    check(program != "", "the wheel has a .data/scripts/pltrun")
    with tempfile.TemporaryDirectory(prefix="pltrun-wheel-tag-") as directory:
        doctored = os.path.join(directory, os.path.basename(wheel))  # the same name: the same tag claimed
        replace_program(wheel, program, host_pltrun, doctored)
        bad = wheel_tag(source_dir, doctored)
    problems = bad.stderr
    check(bad.returncode == 1 and "FAILS its tag" in bad.stdout, "wheel_tag.py fails the wheel with the host's pltrun",
          bad.stdout + problems)
    check(f"{program}: needs libspdlog.so" in problems and f"{program}: needs libssl.so" in problems,
          "it names the system libraries the host's pltrun needs (spdlog, OpenSSL)", problems)
    check(f"{program}: needs GLIBC_2.3" in problems and "newer than manylinux_" in problems,
          "it names the glibc symbol versions newer than the tag's", problems)
    check("RECORD" not in problems and all(line.startswith(f"wheel_tag: {program}: ") for line in problems.splitlines()),
          "every problem it names is the replaced program's (RECORD matches)", problems)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
