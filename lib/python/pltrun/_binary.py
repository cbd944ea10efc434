"""Where the wheel's programs are: ``pltrun`` and ``pltrun-store``, real ELF binaries
installed into the environment's scripts directory (a venv's ``bin/``), and, for C++
users, the library's directories inside this package."""

import os
import shutil
import sys
import sysconfig
from typing import List, Optional

_PACKAGE = os.path.dirname(os.path.abspath(__file__))

#: ``python -m pltrun`` flags, each naming a directory of the wheel's C++ library.
DIRECTORIES = {
    "--cmake-dir": os.path.join(_PACKAGE, "lib", "cmake", "pltrun"),
    "--pkgconfig-dir": os.path.join(_PACKAGE, "lib", "pkgconfig"),
    "--include-dir": os.path.join(_PACKAGE, "include"),
    "--lib-dir": os.path.join(_PACKAGE, "lib"),
}


def _scripts_dir(scheme: Optional[str] = None) -> Optional[str]:
    try:
        return sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
    except KeyError:  # a scheme this interpreter does not know
        return None


def _user_scheme() -> str:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    return "nt_user" if os.name == "nt" else "posix_user"


def _candidate_dirs() -> List[str]:
    """Where pip puts the programs, as ruff's find_bin looks: ``bin/`` beside the package's
    root first (``pip install --target``: it belongs to this very package, and a venv has
    none), this interpreter's scripts directory (a venv's bin/, a system install's), the
    user scheme's (``pip install --user``), then beside the interpreter (an environment
    whose scheme is unusual)."""
    found = [
        os.path.join(os.path.dirname(_PACKAGE), "bin"),
        _scripts_dir(),
        _scripts_dir(_user_scheme()),
        os.path.dirname(sys.executable) if sys.executable else None,
    ]
    return [directory for directory in found if directory]


def find(name: str) -> str:
    """The path of the program ``name`` (``"pltrun"`` or ``"pltrun-store"``): the first
    executable file of that name in the environment's scripts directories, beside the
    interpreter, then on PATH. Raises FileNotFoundError, with one line saying where it
    looked and what to do, when there is none."""
    for directory in _candidate_dirs():
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    on_path = shutil.which(name)
    if on_path:
        return on_path
    looked = ", ".join(dict.fromkeys(_candidate_dirs()))
    raise FileNotFoundError(
        f"no {name} program in {looked} or on PATH: install the pltrun wheel into this "
        f"environment (pip install pltrun), or put a build's {name} on PATH"
    )
