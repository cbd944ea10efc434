# pltrun's zygote (--preload): one warm Python interpreter per node that imports the
# preloaded modules once, then starts every worker of every attempt by forking itself.
#
# pltrun starts it as `PYTHON_EXEC -u -c BOOTSTRAP` with the environment the workers share,
# its standard input a SOCK_SEQPACKET socket to pltrun. The bootstrap reads this code as the
# first message and runs it outside `__main__`, so `__main__` stays as a fresh interpreter
# has it until a worker's program runs in it. Messages, one JSON object each:
#   pltrun -> zygote  {"preload": [...], "argv": [...]}   the workers' argv (for sys.path)
#   zygote -> pltrun  {"ready": true} | {"error": "..."}   after importing the modules
#   pltrun -> zygote  a worker's start, with its stdin, stdout and stderr (and the orphan
#                     guard's pipe and the job cgroup's cgroup.procs, when there are) attached
#   zygote -> pltrun  {"pid": N} | {"error": "..."}
# A worker is forked twice (zygote -> short-lived middle -> worker): the middle exits at
# once, so the worker is reparented to pltrun, a child subreaper, and pltrun waits for it,
# signals it and reaps it exactly as it does a worker it started itself.
import json
import os
import socket
import sys

_ZYGOTE_FILE = "<pltrun zygote>"  # the bootstrap compiles this code under that name
_MAX_MESSAGE = 1 << 22
# What the interpreter's wrapper (a venv shim, a container or chroot runner) and the
# preloaded modules' imports changed in the environment pltrun gave the zygote: a cold
# worker goes through the same wrapper and imports, so each worker gets the same changes.
# {name: value, or None where removed}.
_environment_changes = {}
# The directory the zygote started in, which is where a cold worker would start (the
# interpreter's wrapper may have changed it: a chroot runner starts at / where pltrun's own
# directory does not exist). Held open: the worker returns to it even if it has no path there.
_start_directory = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
# Its umask, pltrun's (read by setting it; a preloaded module may change the zygote's).
_start_umask = os.umask(0o22)
os.umask(_start_umask)


def _send(control, **message):
    control.send(json.dumps(message).encode())


def _workers_path0(argv):
    """sys.path[0] as `python -u ...` gives it to the workers: a script's real directory,
    the working directory for -m."""
    program = argv[2:]
    if program[:1] == ["-m"]:
        return os.getcwd()
    return os.path.dirname(os.path.realpath(program[0]))


# What a module imports lazily on the first use every training job makes of it, imported
# with it: torch 2.x's DDP and optimizers import torch._dynamo (with sympy, hundreds of
# modules: most of the wait for the first step; docs/PERFORMANCE.md, restart) on first use,
# which would otherwise be paid again by every forked worker.
_COMPANIONS = {"torch": ["torch._dynamo"]}


def _preload(config):
    if not getattr(sys.flags, "safe_path", False):
        sys.path[0] = _workers_path0(config["argv"])
    import importlib
    import importlib.util

    # torch.cuda.is_available() asks NVML instead of initializing the CUDA driver, which a
    # forked process could not use; for the imports only (the workers get their own environment).
    own_choice = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        for name in config["preload"]:
            importlib.import_module(name)
            for companion in _COMPANIONS.get(name, []):
                if importlib.util.find_spec(companion) is not None:  # torch 1.x has no torch._dynamo
                    importlib.import_module(companion)
    finally:
        if own_choice is None:
            del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = own_choice


def _why_not_fork(after_preload=False):
    """Why forking now would not give a worker a sound interpreter; None when it would.
    The driver's libraries are looked for once, after the preload: between forks the
    zygote runs nothing that could load them (and its maps take milliseconds to read)."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        return f"the preloaded modules left {threads - 1} threads running in it (a fork keeps only one)"
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        return "a preloaded module initialized CUDA, which a forked process cannot use"
    if not after_preload:
        return None
    with open("/proc/self/maps") as maps:  # the driver is loaded when something initialized it
        if any("/libcuda.so" in line for line in maps):
            return "a preloaded module loaded the CUDA driver (libcuda), which a forked process cannot use"
    return None


# ---- the worker, from the second fork until its program runs ----------------------------


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _wait_for_launcher(launcher, middle):
    """The middle process is exiting: once it has, this process is pltrun's child. Then it
    dies with pltrun, as a worker pltrun started itself does."""
    import time

    while os.getppid() == middle:
        time.sleep(0.0002)
    _libc().prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != launcher:
        os._exit(128 + 9)  # pltrun died meanwhile


def _join_supervision(request, fds):
    """What pltrun's own start of a worker does before exec (child_spawn.cc)."""
    os.setpgid(0, 0)
    if "guard" in fds:
        os.write(fds["guard"], os.getpid().to_bytes(4, sys.byteorder, signed=True))
    if "cgroup" in fds:
        os.write(fds["cgroup"], b"0")
    if request.get("cpus"):
        os.sched_setaffinity(0, request["cpus"])
    if request.get("open_file_limit"):
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        limit = request["open_file_limit"]
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit if hard < 0 else min(limit, hard), hard))


def _become_worker(request, fds, control):
    for stream, name in enumerate(("stdin", "stdout", "stderr")):
        os.dup2(fds[name], stream)
    for fd in set(fds.values()) | {control.fileno()}:
        os.close(fd)
    control.detach()
    os.umask(_start_umask)
    os.fchdir(_start_directory)
    os.close(_start_directory)
    os.environ.clear()  # unsetenv too
    _libc().clearenv()  # and what C code set behind os.environ's back (ncurses' LINES, COLUMNS)
    os.environ.update(_with_environment_changes(request["env"]))  # putenv: C getenv agrees
    import signal

    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    _fresh_per_process_state()
    register_stack_dump = getattr(sys, "_pltrun_register_stack_dump", None)
    if register_stack_dump is not None:
        register_stack_dump()  # pltrun's hook ran in the zygote, whose environment names no stack file


def _environment_of(entries):
    return dict(entry.split("=", 1) for entry in entries)


def _note_environment_changes(given):
    given = _environment_of(given)
    for name in set(given) | set(os.environ):
        if given.get(name) != os.environ.get(name):
            _environment_changes[name] = (given.get(name), os.environ.get(name))


def _with_environment_changes(entries):
    """The worker's environment as its own start through the wrapper would have made it:
    each change applied where the worker has what the zygote was given."""
    environment = _environment_of(entries)
    for name, (given, changed) in _environment_changes.items():
        if environment.get(name) != given:
            continue  # the worker's own value: pltrun set it for this worker
        if changed is None:
            del environment[name]
        else:
            environment[name] = changed
    return environment


def _show_command_line(argv):
    """/proc/self/cmdline (what ps, pgrep -f and monitors read) becomes the worker's command,
    written over the zygote's (setproctitle's way; the bootstrap is padded to leave room)."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (stat's 48th, 49th)
        with open("/proc/self/cmdline", "rb") as command:
            interpreter = command.read().split(b"\0", 1)[0]  # argv[0] as the interpreter received it
    except (OSError, IndexError, ValueError):
        return
    size = end - start
    text = b"\0".join([interpreter] + [os.fsencode(word) for word in argv[1:]]) + b"\0"
    if size <= 0:
        return
    text = text[: size - 1] + b"\0" if len(text) > size else text.ljust(size, b"\0")
    import ctypes

    ctypes.memmove(start, text, size)


def _fresh_per_process_state():
    """State a fresh interpreter draws anew and a fork would copy: numpy's global random
    state, multiprocessing's authentication key. (random reseeds itself after a fork.)"""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()
    process = sys.modules.get("multiprocessing.process")
    if process is not None:
        process.current_process().authkey = os.urandom(32)


def _prepare_worker(control, request, fds, middle):
    try:
        _join_supervision(request, fds)
        _wait_for_launcher(request["launcher"], middle)
        _become_worker(request, fds, control)
    except BaseException as error:  # noqa: B036  never back into the zygote's loop
        os.write(2, f"pltrun zygote: cannot prepare the worker: {type(error).__name__}: {error}\n".encode())
        os._exit(127)


def _run_program(argv):
    """Runs the worker's program in `__main__` as `python -u ...` does; returns its exit."""
    if hasattr(sys, "orig_argv"):
        # argv[0] as the interpreter itself received it (after a wrapper's exec), as a cold worker's
        sys.orig_argv[:] = sys.orig_argv[:1] + argv[1:]
    _show_command_line(argv)
    program = argv[2:]
    try:
        if program[:1] == ["-m"]:
            import runpy

            sys.argv[:] = ["-m"] + program[2:]
            runpy._run_module_as_main(program[1], alter_argv=True)
        else:
            sys.argv[:] = program
            _run_script(os.path.abspath(program[0]))
    except SystemExit:
        raise
    except BaseException as error:  # noqa: B036  reported as the interpreter reports it
        _report_uncaught(error)
    raise SystemExit(0)


def _run_script(path):
    from importlib.machinery import SourceFileLoader

    main = sys.modules["__main__"]
    main.__file__ = path
    main.__cached__ = None
    main.__loader__ = SourceFileLoader("__main__", path)
    with open(path, "rb") as source:
        code = compile(source.read(), path, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def _report_uncaught(error):
    """The traceback without the zygote's frames, then the interpreter's exit for it."""
    trace = error.__traceback__
    while trace is not None and trace.tb_frame.f_code.co_filename == _ZYGOTE_FILE:
        trace = trace.tb_next
    sys.excepthook(type(error), error.with_traceback(trace), trace)  # the display reads __traceback__
    if isinstance(error, KeyboardInterrupt):
        import signal

        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    raise SystemExit(1)


# ---- the zygote's side of a start ---------------------------------------------------------


def _start_worker(control, request, fds):
    """Forks the middle process, which forks the worker; returns the worker's pid to the
    zygote, and in the worker runs the program (never returns there)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(read_end)
        middle = os.getpid()
        try:
            worker = os.fork()
        except OSError as error:
            os.write(write_end, ("error " + str(error)).encode())
            os._exit(1)
        if worker == 0:
            os.close(write_end)
            _prepare_worker(control, request, fds, middle)
            _run_program(request["argv"])  # raises SystemExit: the interpreter ends as after a script
        try:
            os.setpgid(worker, worker)  # also the worker's first step: whichever comes first
        except OSError:
            pass
        os.write(write_end, str(worker).encode())
        os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 4096).decode()
    os.close(read_end)
    os.waitpid(middle, 0)
    return answer


def _receive(control):
    """One message and the descriptors attached to it (socket.recv_fds, which Python before
    3.9 lacks)."""
    import array

    fds = array.array("i")
    message, ancillary, _, _ = control.recvmsg(_MAX_MESSAGE, socket.CMSG_SPACE(8 * fds.itemsize))
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return message, list(fds)


def _serve(control):
    while True:
        message, fd_list = _receive(control)
        if not message:
            os._exit(0)  # pltrun closed its end: at once, nothing to finalize (a wrapper waits for it)
        request = json.loads(message)
        fds = dict(zip(request["fds"], fd_list))
        why_not = _why_not_fork()
        answer = ("error " + why_not) if why_not else _start_worker(control, request, fds)
        for fd in fd_list:
            os.close(fd)
        if answer.isdigit():
            _send(control, pid=int(answer))
        else:
            _send(control, error=answer[len("error ") :] or "the fork ended without a worker")


def _main():
    control = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    config = json.loads(control.recv(_MAX_MESSAGE))
    try:
        _preload(config)
        _note_environment_changes(config["env"])
    except BaseException as error:  # noqa: B036  any failure of a module's import, said in one line
        _send(control, error=f"cannot import the preloaded modules: {type(error).__name__}: {error}")
        return
    why_not = _why_not_fork(after_preload=True)
    if why_not:
        _send(control, error=why_not)
        return
    _send(control, ready=True)
    _serve(control)


_main()
