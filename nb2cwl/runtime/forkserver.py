"""A process that starts local steps already warm: it imports the runtime and IPython once,
then forks one child per step that asks (`nb2cwl run`, steps on the local deployment only).

A step process that starts from nothing spends about 0.2 s importing IPython, ipykernel's
compiler and the runtime before its first cell; a child forked from here has them already.
The child then becomes that step process in every way a cell can observe: the step's standard
streams (passed over the socket), working directory, environment, command line and
`sys.path[0]`, default signal handlers, a process group of its own, and a normal interpreter
exit (atexit handlers, non-daemon threads joined, streams flushed).

The step's own process (forkclient) waits for the child's exit status, which this server sends
once it reaps the child, and exits with it (by the same signal, when the child was killed).
Signals the step process gets are forwarded to the child's process group; should the step
process die, the child sees its connection close and kills its group. The server exits with
the `nb2cwl run` that started it (PR_SET_PDEATHSIG), or on SIGTERM.

With libraries to preload (the notebook's own, which it imports before anything else, see
nb2cwl/analysis/preload.py), the server imports them too: each step then finds them imported.

Started before its run is known (`--preload-later`, by nb2cwl.standby), it reads the modules
from stdin once warm; should the interpreter's site folders have changed meanwhile (a package
installed or removed), it starts again (exec) so that the steps see them as a new process would.

Usage: python -m nb2cwl_runtime.forkserver SOCKET_PATH [MODULE ... | --preload-later]
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
from typing import Any

from .sources import runtime_sources

HEADER = struct.Struct("!I")  # the request's length, before its JSON
MAX_REQUEST = 16 * 1024 * 1024
_PR_SET_PDEATHSIG = 1


#: In place of the libraries: they come later, as one JSON list on stdin (a server started
#: before its run is known, by a long-lived process: nb2cwl.standby).
LATER = "--preload-later"


def serve(path: str, preload: tuple[str, ...] = ()) -> None:
    """Listen on `path`, warm up (importing the notebook's libraries `preload`), then fork a
    child for every request until SIGTERM."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # at once: steps that connect early wait in the backlog
    listener.listen(128)
    _die_with_parent()
    site_then = _site_stamp()
    _warm_up()
    if preload == (LATER,):
        preload = _libraries_sent()
        if _site_stamp() != site_then:  # installed or removed since: start as a new process
            listener.close()
            os.unlink(path)
            os.execv(sys.executable, [sys.executable, "-m", __spec__.name, path, *preload])
    before = dict(os.environ)
    if not _preload(preload):
        preload = ("?",)  # something showed: the steps run on their own (see _acceptable)
    # what the imports set in the environment (scikit-learn: KMP_INIT_AT_FORK=FALSE), which
    # a step importing them itself would have set too
    set_by_imports = {k: v for k, v in os.environ.items() if before.get(k) != v}
    # what the server imported lives as long as any child: no collection in a child scans it
    # again (IPython's reset at exit collects), and its pages stay shared
    gc.collect()
    gc.freeze()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    children: dict[int, socket.socket] = {}
    me = os.getpid()
    runtime = os.path.dirname(os.path.realpath(__file__))
    while True:
        readable, _, _ = select.select([listener, wake_read], [], [])
        if wake_read in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_read, 512)
            _reap(children)
        if listener not in readable:
            continue
        try:
            conn, _ = listener.accept()
            request, fds = _receive(conn)
        except (OSError, ValueError):
            continue
        if not _acceptable(request, runtime, preload, before):
            _close(conn, fds)  # the step runs on its own (it sees the connection close)
            continue
        pid = os.fork()
        if pid == 0:
            # the child: never returns into this loop (SystemExit ends the interpreter)
            listener.close()
            for fd in (wake_read, wake_write):
                os.close(fd)
            _become_step(conn, request, fds, set_by_imports)
        assert os.getpid() == me
        for fd in fds:
            os.close(fd)
        children[pid] = conn
        _send(conn, f"pid {pid}")


#: The pid of the `nb2cwl run` that started this server (set by it): a server whose parent
#: died before it could ask to die with it sees another parent, and exits.
PARENT_ENV = "NB2CWL_SERVER_PARENT"


def _die_with_parent() -> None:
    """Linux sends SIGTERM when the process that started this one dies."""
    parent = int(os.environ.pop(PARENT_ENV, "0") or 0) or os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before the request took effect
        sys.exit(0)


def _warm_up() -> None:
    """Import what every step imports (not the notebook's libraries: their import order and
    the settings made before it are the notebook's to decide)."""
    from . import assemble, cache, capture, failure, files, settings, skeleton, step, values

    del assemble, cache, capture, failure, files, settings, skeleton, step, values
    with contextlib.suppress(ImportError):
        from . import kernel_shell

        kernel_shell.warm_up()


def _libraries_sent() -> tuple[str, ...]:
    """The libraries to preload, once they are sent; exit at once on EOF (no run came). Then
    the standard input is /dev/null, as a server started with its libraries has it."""
    line = sys.stdin.readline()
    if not line.strip():
        sys.exit(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        names = json.loads(line)
    except ValueError:
        return ("?",)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return ("?",)  # not understood: the steps run on their own
    return tuple(names)


def _site_stamp() -> list[tuple[str, int]]:
    """The site folders of this interpreter and when each last changed (an install adds or
    removes entries there, and .pth files are read only when a process starts)."""
    import site

    folders = [*site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    stamp = []
    for folder in folders:
        with contextlib.suppress(OSError):
            stamp.append((folder, os.stat(folder).st_mtime_ns))
    return stamp


def _preload(modules: tuple[str, ...]) -> bool:
    """Import the notebook's libraries that may be imported early (analysis/preload.py).

    They are imported as in a step: `get_ipython()` answers as the step's shell does
    (kernel_shell.presented_as_kernel; pandas decides its display.max_columns then). False
    when an import printed, warned or failed: a step that imports the library itself would
    show that in its cell, and a child of this server would not.
    """
    if not modules:
        return True
    import importlib
    import io
    import warnings

    try:
        from .kernel_shell import presented_as_kernel
    except ImportError:  # no IPython: the steps run as plain Python, and so not from here
        return False
    class Shown(io.StringIO):
        encoding = "UTF-8"  # as a step's streams say (capture.py): pandas keeps it

    shown = Shown()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(
            shown), contextlib.redirect_stderr(shown), presented_as_kernel():
        warnings.simplefilter("always")
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the step imports it and shows what happens
                return False
    return not caught and not shown.getvalue()


#: What the preloaded libraries read from the environment when imported (thread counts,
#: their own options, warnings): a step asking with other values runs on its own.
_LIBRARY_ENVIRONMENT = ("OMP_", "OPENBLAS", "MKL_", "KMP_", "NUMEXPR_", "BLIS_", "VECLIB_",
                        "GOTO", "NPY_", "NUMPY_", "PANDAS_", "SCIPY_", "SKLEARN_",
                        "PYTHONWARNINGS", "PYTHONPATH")


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The request (JSON) and the three standard streams sent with it."""
    data, fds, _flags, _address = socket.recv_fds(conn, 65536, 3)
    while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[0]:
        if len(data) >= HEADER.size and HEADER.unpack_from(data)[0] > MAX_REQUEST:
            raise ValueError("request too large")
        more = conn.recv(65536)
        if not more:
            raise ValueError("connection closed during the request")
        data += more
    (size,) = HEADER.unpack_from(data)
    request = json.loads(data[HEADER.size:HEADER.size + size])
    if len(fds) != 3 or not isinstance(request, dict):
        for fd in fds:
            os.close(fd)
        raise ValueError("malformed request")
    return request, list(fds)


def _acceptable(request: dict[str, Any], runtime: str, preload: tuple[str, ...] = (),
                environment: dict[str, str] | None = None) -> bool:
    """Only steps of this very runtime and interpreter: anything else runs on its own. With
    libraries preloaded, only steps whose environment gives those libraries what this
    server's gave them (`environment`, as it was before), and none when their import showed
    something ("?")."""
    if environment is None:
        environment = dict(os.environ)
    if "?" in preload:
        return False
    try:
        same_runtime = _same_runtime(os.path.realpath(request["runtime"]), runtime)
        same_python = os.path.realpath(request["python"]) == os.path.realpath(sys.executable)
        # a forked child keeps the server's string hashing: only steps asking for the same
        same_hashing = request["env"].get("PYTHONHASHSEED") == os.environ.get("PYTHONHASHSEED")
        env = request["env"]
        # what the libraries read, and what their imports set here (scikit-learn's
        # setdefault of KMP_INIT_AT_FORK: a step given its own value would have kept it)
        set_here = {name for name, value in os.environ.items()
                    if environment.get(name) != value}
        same_libraries = not preload or all(
            env.get(name) == environment.get(name)
            for name in set(env) | set(environment) | set_here
            if name.startswith(_LIBRARY_ENVIRONMENT) or name in set_here)
    except (KeyError, TypeError, AttributeError):
        return False
    return same_runtime and same_python and same_hashing and same_libraries


_COMPARED: dict[str, bool] = {}
_SOURCES: dict[str, dict[str, bytes] | None] = {}


def _same_runtime(theirs: str, mine: str) -> bool:
    """The step's runtime is this server's, or a copy of it: the same Python files, byte for
    byte (the workflow's zip, when the server started from its own folder while it
    compiled)."""
    if theirs == mine:
        return True
    if mine not in _SOURCES:  # its own sources: read once
        _SOURCES[mine] = runtime_sources(mine)
    if theirs not in _COMPARED:  # one workflow's copy: compared once
        ours = _SOURCES[mine]
        _COMPARED[theirs] = ours is not None and ours == runtime_sources(theirs)
    return _COMPARED[theirs]


def _close(conn: socket.socket, fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
    conn.close()


def _send(conn: socket.socket, line: str) -> None:
    with contextlib.suppress(OSError):  # the step process is gone
        conn.sendall(line.encode() + b"\n")


def _reap(children: dict[int, socket.socket]) -> None:
    """Send each finished child's status to its step process."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        if os.WIFSIGNALED(status):
            _send(conn, f"signal {os.WTERMSIG(status)}")
        else:
            _send(conn, f"exit {os.waitstatus_to_exitcode(status)}")
        conn.close()


def _become_step(conn: socket.socket, request: dict[str, Any], fds: list[int],
                 set_by_imports: dict[str, str] | None = None) -> None:
    """Turn this fresh child into the step process that asked, run the step, exit
    (`set_by_imports`: what the preloaded libraries' imports set in the environment)."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setpgid(0, 0)  # the step process signals this group; the child's own children too
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.update(set_by_imports or {})
    import tempfile

    tempfile.tempdir = None  # found again from the step's TMPDIR
    script = request["script"]
    sys.argv = [script, *request["argv"]]
    # as `python3 SCRIPT` has it, and the launcher then adds the runtime's zip first
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runtime = os.path.abspath(request["runtime"])  # the workflow's zip (or a folder)
    sys.path.insert(0, runtime if os.path.isfile(runtime) else os.path.dirname(runtime))
    threading.Thread(target=_watch_step_process, args=(conn,), daemon=True).start()
    import runpy

    try:
        namespace = runpy.run_path(script, run_name="__nb2cwl_step__")
        status = namespace["_run"](request["argv"])
    except SystemExit as exit_:
        status = exit_.code
    _exit(status)


def _exit(status: object) -> None:
    """End as the interpreter ends (threads joined, atexit handlers, streams flushed), without
    tearing down the modules the server imported: that would cost a step about 50 ms."""
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        sys.stderr.write(f"{status}\n")
        code = 1
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]  (joins non-daemon threads)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code & 0xFF)


def _watch_step_process(conn: socket.socket) -> None:
    """The step process sends nothing more: the connection closing means it died."""
    with contextlib.suppress(OSError):
        while conn.recv(1):
            pass
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    serve(sys.argv[1], tuple(sys.argv[2:]))
