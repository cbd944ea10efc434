"""``python -m pltrun``: the pltrun program with the given arguments, or, with one of
``--cmake-dir``, ``--pkgconfig-dir``, ``--include-dir`` or ``--lib-dir`` alone, the
directory of the wheel's C++ library to give a build (as ``python -m pybind11
--cmakedir`` does)."""

import os
import sys
from typing import List, Optional

from pltrun import _binary


def _fail(message: str) -> int:
    print(f"python -m pltrun: {message}", file=sys.stderr)
    return 2


def _print_directory(flag: str) -> int:
    directory = _binary.DIRECTORIES[flag]
    if not os.path.isdir(directory):
        return _fail(
            f"{flag}: {directory} does not exist: this pltrun package has no C++ library beside "
            "it (a source tree?); install the wheel, or use the build's install prefix"
        )
    print(directory)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Runs ``python -m pltrun ARGS``; returns the exit status where it does not exec."""
    args = sys.argv[1:] if argv is None else argv
    # Only as the first argument: a job's own arguments may hold the same words
    # (python -m pltrun train.py --lib-dir /data).
    if args[:1] and args[0] in _binary.DIRECTORIES:
        if len(args) != 1:
            return _fail(f"{args[0]} takes no other argument (got: {' '.join(args)})")
        return _print_directory(args[0])
    try:
        program = _binary.find("pltrun")
    except FileNotFoundError as error:
        return _fail(str(error))
    if args[:1] in (["--help"], ["-h"]):
        print("python -m pltrun --cmake-dir | --pkgconfig-dir | --include-dir | --lib-dir: the directory of the "
              "wheel's libpltrun for a C/C++ build; any other arguments run pltrun:\n", flush=True)
    if not os.environ.get("PYTHON_EXEC"):
        # This interpreter runs the job's .py files, as torchrun runs its sys.executable.
        os.environ["PYTHON_EXEC"] = sys.executable
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        # exec, not a child: signals, the exit status and the terminal are the program's own.
        os.execv(program, ["pltrun", *args])
    except OSError as error:
        return _fail(f"cannot run {program}: {error.strerror}")
    return 0  # not reached: execv returns only by raising


if __name__ == "__main__":
    sys.exit(main())
