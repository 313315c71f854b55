"""The step process's side of the step server (forkserver.py): hand the step to a warm child.

Kept small and stdlib-only: it runs before anything else in a step. When no server is
reachable, or it declines the step, `run_on_server` returns None and the step runs in this
process as it always can.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

SERVER_ENV = "NB2CWL_STEP_SERVER"  # the server's socket path, set by `nb2cwl run`
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run_on_server(script: str, argv: list[str]) -> int | None:
    """Run this step in a child of the step server; its exit status, or None to run here."""
    path = os.environ.get(SERVER_ENV)
    if not path:
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    env = {k: v for k, v in os.environ.items() if k != SERVER_ENV}
    runtime = os.path.abspath(argv[argv.index("--runtime") + 1]) if "--runtime" in argv else ""
    request = json.dumps({"script": os.path.abspath(script), "argv": argv, "cwd": os.getcwd(),
                          "env": env, "runtime": runtime, "python": sys.executable}).encode()
    child: list[int] = []
    pending: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if child:
            with contextlib.suppress(OSError):
                os.killpg(child[0], signum)
        else:
            pending.append(signum)

    try:
        socket.send_fds(conn, [len(request).to_bytes(4, "big") + request], [0, 1, 2])
        for signum in _FORWARDED:
            signal.signal(signum, forward)
        reader = conn.makefile("r", encoding="ascii")
        first = reader.readline().split()
    except OSError:
        first = []
    if len(first) != 2 or first[0] != "pid":
        conn.close()  # declined (another runtime or interpreter): run here
        for signum in _FORWARDED:
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT
                          else signal.default_int_handler)
        return None
    child.append(int(first[1]))
    for signum in pending:
        forward(signum, None)
    try:
        last = reader.readline().split()
    except OSError:
        last = []
    if len(last) == 2 and last[0] == "exit":
        return int(last[1])
    if len(last) == 2 and last[0] == "signal":  # end as the step's process would have
        signum = int(last[1])
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    # the server went away before the child's end: take the child down with it
    with contextlib.suppress(OSError):
        os.killpg(child[0], signal.SIGKILL)
    sys.stderr.write("nb2cwl: the step server stopped while the step ran\n")
    return 1
