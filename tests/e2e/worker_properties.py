# A worker that reports what it sees of its own process, as JSON, so that a test can compare
# a worker forked from pltrun's zygote (--preload) with a cold-started one (issue 43, item 2).
#
#   worker_properties.py OUT_DIR [--multiprocessing] [--cuda] [--dataloader] [--environment-after-preload]
#
# writes OUT_DIR/rank<RANK>.attempt<TORCHELASTIC_RESTART_COUNT>.json and prints one line to
# stdout and one to stderr (the test looks for them in pltrun's prefixed output). Runs as a
# script, as `-m worker_properties` and through --run-path; needs nothing beyond the standard
# library (torch only for --dataloader).

# Taken first, before this file imports anything: what the interpreter held when the
# program began (threads; modules a zygote imported, which a cold start has not).
import sys

_PRELOAD_CANDIDATES = ("json", "decimal", "torch", "numpy")
_PRELOADED_AT_START = [name for name in _PRELOAD_CANDIDATES if name in sys.modules]


def _status_fields():
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


_STATUS_AT_START = _status_fields()

import ctypes  # noqa: E402
import faulthandler  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import stat  # noqa: E402

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.getenv.restype = ctypes.c_char_p
_LIBC.getenv.argtypes = [ctypes.c_char_p]
PR_GET_PDEATHSIG = 2


def environment_disagreements():
    """Keys where os.environ and C's environ (getenv, the environ array) differ."""
    problems = []
    for key, value in os.environ.items():
        seen = _LIBC.getenv(key.encode())
        if seen is None or seen.decode(errors="replace") != value:
            problems.append(key)
    c_environ = ctypes.POINTER(ctypes.c_char_p).in_dll(_LIBC, "environ")
    index = 0
    while c_environ[index] is not None:
        key = c_environ[index].split(b"=", 1)[0].decode(errors="replace")
        if key not in os.environ:
            problems.append(key)
        index += 1
    return sorted(problems)


def proc_environ():
    """The environment the kernel shows for this process (/proc/PID/environ: ps e, tools)."""
    with open("/proc/self/environ", "rb") as source:
        entries = [entry for entry in source.read().split(b"\0") if entry]
    return dict(entry.decode(errors="replace").split("=", 1) for entry in entries if b"=" in entry)


def command_line():
    """What ps, pgrep -f and profilers show: /proc/PID/cmdline and comm."""
    with open("/proc/self/cmdline", "rb") as source:
        arguments = [argument.decode(errors="replace") for argument in source.read().split(b"\0")]
    while arguments and arguments[-1] == "":  # the kernel returns the whole argv area, padding included
        arguments.pop()
    return {"cmdline": arguments, "comm": read_text("/proc/self/comm")}


def descriptor_kind(target):
    # pipe:[123] -> pipe: the inode differs from run to run, the kind must not.
    for kind in ("pipe", "socket", "anon_inode"):
        if target.startswith(kind + ":"):
            return target.split("[")[0] if kind != "anon_inode" else target
    return target


def open_descriptors():
    directory = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    try:
        found = {}
        for name in os.listdir(directory):
            if int(name) == directory:
                continue
            try:
                found[name] = descriptor_kind(os.readlink(name, dir_fd=directory))
            except OSError:
                pass
        return found
    finally:
        os.close(directory)


def standard_stream(fd):
    info = os.fstat(fd)
    kind = "pipe" if stat.S_ISFIFO(info.st_mode) else "char" if stat.S_ISCHR(info.st_mode) else \
        "file" if stat.S_ISREG(info.st_mode) else "socket" if stat.S_ISSOCK(info.st_mode) else "other"
    return {"kind": kind, "rdev": [os.major(info.st_rdev), os.minor(info.st_rdev)] if kind == "char" else None,
            "flags_append": bool(_fcntl_flags(fd) & os.O_APPEND)}


def _fcntl_flags(fd):
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_GETFL)


def signal_dispositions():
    """Python's view of every signal's handler: SIG_DFL, SIG_IGN, a Python function, or None
    (a handler Python did not install, e.g. faulthandler's)."""
    seen = {}
    for number in sorted(signal.valid_signals()):
        try:
            handler = signal.getsignal(number)
        except (OSError, ValueError):
            continue
        if handler is signal.SIG_DFL:
            text = "SIG_DFL"
        elif handler is signal.SIG_IGN:
            text = "SIG_IGN"
        elif handler is None:
            text = "not Python's"
        else:
            text = getattr(handler, "__qualname__", repr(handler))
        seen[str(int(number))] = text
    return seen


def parent_death_signal():
    value = ctypes.c_int(-1)
    if _LIBC.prctl(PR_GET_PDEATHSIG, ctypes.byref(value), 0, 0, 0) != 0:
        return -1
    return value.value


def read_text(path):
    try:
        with open(path) as source:
            return source.read().strip()
    except OSError as error:
        return "unreadable: " + error.strerror


def cgroup_relation(own, parent, parent_pid):
    """How this process's cgroup relates to pltrun's: the same, pltrun's job cgroup
    (pltrun-PID-N under pltrun's, job_cgroup.h), or another."""
    if own == parent:
        return "same as pltrun's"
    own_path, parent_path = own.rpartition(":")[2], parent.rpartition(":")[2]
    prefix = parent_path.rstrip("/") + "/pltrun-" + str(parent_pid) + "-"
    return "pltrun's job cgroup" if own_path.startswith(prefix) else "other"


def resource_limits():
    return {name: list(resource.getrlimit(getattr(resource, name)))
            for name in sorted(dir(resource)) if name.startswith("RLIMIT_")}


def stdio_objects():
    def describe(stream):
        return {"encoding": stream.encoding, "errors": stream.errors, "line_buffering": stream.line_buffering,
                "write_through": getattr(stream, "write_through", None),
                "buffer": type(getattr(stream, "buffer", None)).__name__, "fileno": stream.fileno()}
    return {"stdin": describe(sys.stdin), "stdout": describe(sys.stdout), "stderr": describe(sys.stderr)}


def main_module():
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    return {"__name__": __name__, "is_this_module": main is sys.modules.get(__name__),
            "__file__": globals().get("__file__"), "__spec__": None if spec is None else spec.name,
            "__package__": globals().get("__package__"), "__loader__": type(globals().get("__loader__")).__name__,
            "__builtins__": type(globals().get("__builtins__")).__name__,
            "main_globals_are_these": main.__dict__ is globals()}


def hook_state():
    """pltrun's Python hook (sitecustomize: faulthandler on PLTRUN_STACK_SIGNAL, writing to
    PLTRUN_STACK_FILE): registered for this worker's own file?"""
    stream = getattr(sys, "_pltrun_stack_file", None)
    return {"faulthandler_enabled": faulthandler.is_enabled(),
            "stack_file": None if stream is None else stream.name,
            "stack_file_is_mine": stream is not None and stream.name == os.environ.get("PLTRUN_STACK_FILE"),
            "stack_fd_open": stream is not None and not stream.closed}


def numpy_random():
    try:
        import numpy
    except ImportError:
        return None
    return float(numpy.random.random())


def process_properties():
    parent = os.getppid()
    return {
        "pid": os.getpid(), "ppid": parent, "parent_comm": read_text("/proc/%d/comm" % parent),
        "pgid_is_pid": os.getpgid(0) == os.getpid(), "sid": os.getsid(0),
        "sid_is_parents": os.getsid(0) == os.getsid(parent), "sid_is_pid": os.getsid(0) == os.getpid(),
        "parent_death_signal": parent_death_signal(),
        "cgroup_relation": cgroup_relation(read_text("/proc/self/cgroup"), read_text("/proc/%d/cgroup" % parent),
                                           parent),
        "affinity": sorted(os.sched_getaffinity(0)), "nice": os.nice(0), "scheduler": os.sched_getscheduler(0),
        "rlimits": resource_limits(), "cwd": os.getcwd(), "umask": current_umask(),
    }


def current_umask():
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def interpreter_properties():
    import gc
    return {
        "argv": sys.argv, "orig_argv": getattr(sys, "orig_argv", None), "executable": sys.executable,
        "path0": sys.path[0], "flags": {name: getattr(sys.flags, name) for name in dir(sys.flags)
                                        if not name.startswith("_") and not callable(getattr(sys.flags, name))},
        "main": main_module(), "hash_pltrun": hash("pltrun"), "hash_seed_env": os.environ.get("PYTHONHASHSEED"),
        "random": random.random(), "numpy_random": numpy_random(),
        "recursion_limit": sys.getrecursionlimit(), "switch_interval": sys.getswitchinterval(),
        "gc_enabled": gc.isenabled(), "gc_threshold": list(gc.get_threshold()),
        "stdio_objects": stdio_objects(), "hook": hook_state(),
        "preloaded_at_start": _PRELOADED_AT_START,
    }


def signal_properties():
    return {"dispositions": signal_dispositions(),
            "blocked": sorted(int(number) for number in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
            "kernel_blocked": _STATUS_AT_START.get("SigBlk"), "kernel_ignored": _STATUS_AT_START.get("SigIgn"),
            "kernel_caught": _STATUS_AT_START.get("SigCgt")}


def report():
    environment = dict(os.environ)
    return {
        "environ": environment, "environ_disagreements": environment_disagreements(),
        "proc_environ_is_environ": proc_environ() == environment, "proc_environ_has_rank": "RANK" in proc_environ(),
        "proc": command_line(),
        "threads_at_start": int(_STATUS_AT_START["Threads"]),
        "stdio": {str(fd): standard_stream(fd) for fd in (0, 1, 2)}, "descriptors": open_descriptors(),
        "process": process_properties(), "interpreter": interpreter_properties(), "signals": signal_properties(),
    }


def square(number):
    return number * number


def multiprocessing_results():
    """A child of each start method runs square(7) and hands back the result."""
    import multiprocessing
    results = {}
    for method in ("fork", "spawn", "forkserver"):
        try:
            context = multiprocessing.get_context(method)
            with context.Pool(1) as pool:
                results[method] = pool.apply(square, (7,))
        except Exception as error:  # reported, so the test shows what broke
            results[method] = "%s: %s" % (type(error).__name__, error)
    return results


class _Squares:
    def __len__(self):
        return 4

    def __getitem__(self, index):
        return index * index


def dataloader_result():
    try:
        import torch.utils.data
    except ImportError:
        return None
    try:
        loader = torch.utils.data.DataLoader(_Squares(), batch_size=2, num_workers=2)
        return [int(value) for batch in loader for value in batch]
    except Exception as error:
        return "%s: %s" % (type(error).__name__, error)


def cuda_state():
    """Whether CUDA was initialized before this worker ran (a zygote must never do that:
    a forked child cannot use the parent's CUDA context)."""
    try:
        import torch
    except ImportError:
        return None
    bad_fork = getattr(torch.cuda, "_is_in_bad_fork", lambda: None)()
    return {"initialized": torch.cuda.is_initialized(), "in_bad_fork": bad_fork,
            "available": torch.cuda.is_available()}


def environment_after_preload():
    """os.environ once this process has imported what `--preload torch` imports (torch, and
    torch._dynamo where it exists): a forked worker starts with those imports' environment
    changes (docs/USAGE.md, "Fast starts and restarts")."""
    import importlib
    import importlib.util
    importlib.import_module("torch")
    if importlib.util.find_spec("torch._dynamo") is not None:
        importlib.import_module("torch._dynamo")
    return dict(os.environ)


def write_report(out_dir, data):
    import json
    name = "rank%s.attempt%s.json" % (os.environ.get("RANK", "x"), os.environ.get("TORCHELASTIC_RESTART_COUNT", "x"))
    with open(os.path.join(out_dir, name + ".tmp"), "w") as target:
        json.dump(data, target, indent=1, sort_keys=True)
    os.rename(os.path.join(out_dir, name + ".tmp"), os.path.join(out_dir, name))


def main(arguments):
    data = report()  # before any child process opens descriptors or starts threads
    data["main_guard_ran"] = True
    if "--multiprocessing" in arguments:
        data["multiprocessing"] = multiprocessing_results()
    if "--environment-after-preload" in arguments:
        data["environ_after_preload"] = environment_after_preload()
    if "--cuda" in arguments:
        data["cuda"] = cuda_state()
    if "--dataloader" in arguments:
        data["dataloader"] = dataloader_result()
    write_report(arguments[0], data)
    print("properties on stdout from rank", os.environ.get("RANK"))
    print("properties on stderr from rank", os.environ.get("RANK"), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
