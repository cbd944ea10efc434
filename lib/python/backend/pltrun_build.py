"""pltrun's PEP 517 build backend: the sdist is the source tree that CMake needs, and the
wheel is what `cmake --install` puts out of it, with the Python package beside.

Standard backends (setuptools, scikit-build-core) either are not in every Debian suite the
wheel is built on or bring more than this needs; this one is the standard library only and
runs on Python 3.8 (the build chroot's is 3.9). docs/PACKAGING.md says how the wheel is
made and why it is tagged as it is.

    python3 lib/python/backend/pltrun_build.py sdist OUTDIR   # from a git checkout
    pip wheel --no-build-isolation --no-deps pltrun-VERSION.tar.gz   # where the deps are

The wheel's build (build_wheel) needs what the wheel compiles in: a prefix holding bookworm's
headers and static OpenSSL (PLTRUN_WHEEL_DEPS, default /opt/pltrun-deps, as
scripts/package/wheel-chroot.sh makes it), a C++17 compiler and CMake 3.18.
"""

import base64
import csv
import gzip
import hashlib
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

NAME = "pltrun"
# The wheel's platform tag: linux_x86_64 (this machine's kind, no promise beyond it) unless
# PLTRUN_WHEEL_PLATFORM_TAG names another. scripts/package/wheel.sh builds in its bullseye
# chroot and names manylinux_2_28_x86_64, which scripts/check/wheel_tag.py then proves of
# every ELF file; a wheel built elsewhere needs what that system's glibc has.
DEFAULT_PLATFORM_TAG = "linux_x86_64"
# What the sdist holds: what CMake reads when BUILD_TESTING and PLTRUN_FUZZ are off.
SDIST_TOP_LEVEL = ("CMakeLists.txt", "LICENSE", "README.md", "apps", "lib", "rendezvous")
# A file of the sdist naming the commit it was made from, which `pltrun --version` shows.
COMMIT_FILE = ".pltrun-commit"


def _source_root():
    # This file is SOURCE/lib/python/backend/pltrun_build.py, in a checkout and in an sdist.
    return Path(__file__).resolve().parents[3]


def _version(root):
    text = (root / "CMakeLists.txt").read_text()
    match = re.search(r"project\(pltrun\s+VERSION\s+([0-9.]+)", text)
    if not match:
        raise RuntimeError("no 'project(pltrun VERSION x.y.z' in %s/CMakeLists.txt" % root)
    return match.group(1)


def _git_commit(root):
    """The commit `pltrun --version` names: git's HEAD in a checkout, the sdist's file in an
    sdist, "" where neither says (git refusing a checkout of another user's, say), as
    lib/version/write_version.cmake does."""
    if not (root / ".git").exists():
        commit_file = root / COMMIT_FILE
        return commit_file.read_text().strip() if commit_file.exists() else ""
    result = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    return result.stdout.strip() if result.returncode == 0 else ""


def _sdist_files(root):
    """The files of the sdist, relative to root: git's tracked files in a checkout (nothing
    ignored, nothing untracked), every file under SDIST_TOP_LEVEL in an unpacked sdist."""
    if (root / ".git").exists():
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", *SDIST_TOP_LEVEL],
                                stdout=subprocess.PIPE, check=True).stdout
        names = [name for name in listed.decode().split("\0") if name]
    else:
        names = []
        for top in SDIST_TOP_LEVEL:
            path = root / top
            candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            names += [str(p.relative_to(root)) for p in candidates if "__pycache__" not in p.parts]
    return sorted(name for name in names if (root / name).is_file())


def _metadata(root, version):
    readme = (root / "README.md").read_text()
    return "\n".join([
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + version,
        "Summary: Launch and supervise distributed training jobs: torchrun's flags and environment, "
        "elastic restarts, hang detection",
        "Home-page: https://github.com/pltrun/pltrun",
        "License: Apache-2.0",
        "License-File: LICENSE",
        "Requires-Python: >=3.8",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Programming Language :: C++",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: License :: OSI Approved :: Apache Software License",
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ])


def _pyproject(version):
    # The sdist's own pyproject.toml: the backend is this file, at its place in the sdist.
    return ("[build-system]\nrequires = []\nbuild-backend = \"pltrun_build\"\n"
            "backend-path = [\"lib/python/backend\"]\n\n"
            "[project]\nname = \"%s\"\nversion = \"%s\"\nrequires-python = \">=3.8\"\n" % (NAME, version))


def _tar_add_bytes(archive, name, data, mtime):
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), mtime, 0o644
    archive.addfile(info, io.BytesIO(data))


def build_sdist(sdist_directory, config_settings=None):
    root = _source_root()
    version = _version(root)
    base = "%s-%s" % (NAME, version)
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or 315532800
    path = Path(sdist_directory) / (base + ".tar.gz")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=mtime) as zipped, \
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in _sdist_files(root):
            info = archive.gettarinfo(str(root / name), arcname=base + "/" + name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = mtime, 0, 0, "", ""
            with open(root / name, "rb") as source:
                archive.addfile(info, source)
        _tar_add_bytes(archive, base + "/pyproject.toml", _pyproject(version).encode(), mtime)
        _tar_add_bytes(archive, base + "/PKG-INFO", _metadata(root, version).encode(), mtime)
        _tar_add_bytes(archive, base + "/" + COMMIT_FILE, (_git_commit(root) + "\n").encode(), mtime)
    return path.name


def _build_dir(root):
    return Path(os.environ.get("PLTRUN_WHEEL_BUILD_DIR", str(root / "build-wheel")))


def _cmake_install(root, build, staging):
    """Configures, builds and installs (stripped) the wheel's programs and library."""
    deps = os.environ.get("PLTRUN_WHEEL_DEPS", "/opt/pltrun-deps")
    configure = ["cmake", "-S", str(root), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 "-DBUILD_TESTING=OFF", "-DPLTRUN_WHEEL=ON", "-DPLTRUN_WHEEL_DEPS=" + deps,
                 "-DCMAKE_PREFIX_PATH=" + deps, "-DCMAKE_INSTALL_LIBDIR=lib",
                 "-DCMAKE_INSTALL_INCLUDEDIR=include", "-DPLTRUN_GIT_COMMIT=" + _git_commit(root)]
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    for command in (configure, ["cmake", "--build", str(build), "-j", jobs],
                    ["cmake", "--install", str(build), "--strip", "--prefix", str(staging)]):
        subprocess.run(command, check=True, stdout=sys.stderr)


def _license_entries(root, dist_info):
    """pltrun's LICENSE, and the Debian copyright file of each library compiled in (the
    -dev packages under PLTRUN_WHEEL_DEPS: OpenSSL, spdlog, fmt, toml++, Boost, CLI11,
    nlohmann/json), whose licenses ask that their notices go with the programs."""
    entries = [(dist_info + "/licenses/LICENSE", root / "LICENSE")]
    docs = Path(os.environ.get("PLTRUN_WHEEL_DEPS", "/opt/pltrun-deps")) / "share" / "doc"
    for copyright_file in sorted(docs.glob("*/copyright")):
        entries.append(("%s/licenses/third-party/%s" % (dist_info, copyright_file.parent.name), copyright_file))
    return entries


def _wheel_entries(root, staging, version):
    """(name in the wheel, file on disk) of everything but .dist-info: the Python package,
    the library, headers and CMake/pkg-config files under pltrun/, the two programs as the
    environment's scripts (its bin/)."""
    entries = []
    package = root / "lib" / "python" / NAME
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            entries.append((NAME + "/" + str(path.relative_to(package)), path))
    for top in ("lib", "include"):
        for path in sorted((staging / top).rglob("*")):
            if path.is_file():
                entries.append((NAME + "/" + str(path.relative_to(staging)), path))
    for path in sorted((staging / "bin").iterdir()):
        entries.append(("%s-%s.data/scripts/%s" % (NAME, version, path.name), path))
    return entries


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, "sha256=" + digest, str(len(data))]


def _zip_write(archive, name, data, executable):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    # A regular file's type bits with its mode: pip gives an entry its executable bit only
    # when the entry says it is a regular file.
    info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def _write_wheel(path, entries, dist_info, metadata, tag):
    wheel_file = "Wheel-Version: 1.0\nGenerator: pltrun_build\nRoot-Is-Purelib: false\nTag: %s\n" % tag
    files = [(name, source.read_bytes(), os.access(str(source), os.X_OK)) for name, source in entries]
    files += [(dist_info + "/METADATA", metadata.encode(), False), (dist_info + "/WHEEL", wheel_file.encode(), False)]
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(str(path), "w") as archive:
        for name, data, executable in files:
            _zip_write(archive, name, data, executable)
            writer.writerow(_record_line(name, data))
        writer.writerow([dist_info + "/RECORD", "", ""])
        _zip_write(archive, dist_info + "/RECORD", record.getvalue().encode(), False)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    root = _source_root()
    version = _version(root)
    build = _build_dir(root)
    staging = build / "install"
    shutil.rmtree(str(staging), ignore_errors=True)
    _cmake_install(root, build, staging)
    tag = "py3-none-" + os.environ.get("PLTRUN_WHEEL_PLATFORM_TAG", DEFAULT_PLATFORM_TAG)
    name = "%s-%s-%s.whl" % (NAME, version, tag)
    dist_info = "%s-%s.dist-info" % (NAME, version)
    entries = _wheel_entries(root, staging, version) + _license_entries(root, dist_info)
    _write_wheel(Path(wheel_directory) / name, entries, dist_info, _metadata(root, version), tag)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("sdist", "wheel"):
        sys.exit("usage: pltrun_build.py sdist|wheel OUTDIR")
    built = (build_sdist if sys.argv[1] == "sdist" else build_wheel)(sys.argv[2])
    print(Path(sys.argv[2]) / built)
