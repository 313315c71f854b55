"""The step process's side of the step server (forkserver.py): hand the step to a warm child.

It runs before anything else in a step, so it imports only the standard library's C modules
beneath `socket`, `signal` and `json` (`_socket`, `_signal`, `_json`; and `os`, `sys`): the
Python modules themselves bring `re`, `enum`, `selectors` and `collections` with them, about
15 ms of every step's start on these machines. When no server is reachable, or it declines the step,
`run_on_server` returns None and the step runs in this process as it always can.
"""

from __future__ import annotations

import _json
import _signal
import _socket
import os
import sys

SERVER_ENV = "NB2CWL_STEP_SERVER"  # the server's socket path, set by `nb2cwl run`
_FORWARDED = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
_STREAMS = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))  # C ints, for SCM_RIGHTS


def run_on_server(script: str, argv: list[str]) -> int | None:
    """Run this step in a child of the step server; its exit status, or None to run here."""
    path = os.environ.get(SERVER_ENV)
    if not path:
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    env = {k: v for k, v in os.environ.items() if k != SERVER_ENV}
    runtime = os.path.abspath(argv[argv.index("--runtime") + 1]) if "--runtime" in argv else ""
    request = _as_json({"script": os.path.abspath(script), "argv": argv, "cwd": os.getcwd(),
                        "env": env, "runtime": runtime, "python": sys.executable}).encode()
    child: list[int] = []
    pending: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if child:
            _quietly(os.killpg, child[0], signum)
        else:
            pending.append(signum)

    lines = _Lines(conn)
    try:
        conn.sendmsg([len(request).to_bytes(4, "big") + request],
                     [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _STREAMS)])
        for signum in _FORWARDED:
            _signal.signal(signum, forward)
        first = lines.next()
    except OSError:
        first = []
    if len(first) != 2 or first[0] != "pid":
        conn.close()  # declined (another runtime or interpreter): run here
        for signum in _FORWARDED:
            _signal.signal(signum, _signal.SIG_DFL if signum != _signal.SIGINT
                           else _signal.default_int_handler)
        return None
    child.append(int(first[1]))
    for signum in pending:
        forward(signum, None)
    try:
        last = lines.next()
    except OSError:
        last = []
    if len(last) == 2 and last[0] == "exit":
        return int(last[1])
    if len(last) == 2 and last[0] == "signal":  # end as the step's process would have
        signum = int(last[1])
        _quietly(_signal.signal, signum, _signal.SIG_DFL)  # SIGKILL, SIGSTOP: no handler
        os.kill(os.getpid(), signum)
        return 128 + signum
    # the server went away before the child's end: take the child down with it
    _quietly(os.killpg, child[0], _signal.SIGKILL)
    sys.stderr.write("nb2cwl: the step server stopped while the step ran\n")
    return 1


def _quietly(call: object, *args: object) -> None:
    """`call(*args)`, where failing (the process gone, a signal without a handler) is fine:
    contextlib.suppress, without importing contextlib."""
    try:  # noqa: SIM105 (no contextlib here: see the module's doc)
        call(*args)  # type: ignore[operator]
    except (OSError, ValueError):
        pass


def _as_json(value: object) -> str:
    """`value` (strings, lists of strings, dicts of them) as json.dumps writes it."""
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_as_json(k)}: {_as_json(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_as_json(item) for item in value) + "]"  # type: ignore[attr-defined]


class _Lines:
    """The server's replies, one line of words at a time (a step waits on the second)."""

    def __init__(self, conn: _socket.socket) -> None:
        self._conn = conn
        self._buffer = b""

    def next(self) -> list[str]:
        while b"\n" not in self._buffer:
            data = self._conn.recv(4096)
            if not data:
                return []
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("ascii", "replace").split()
