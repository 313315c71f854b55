"""The standby a long-lived process keeps for its next run (nb2cwl.standby): an `nb2cwl run`
process that has imported nb2cwl and started StreamFlow already, which the next run becomes.
After that run ends (not beside it, on its cores), another is made ready; `close()` stops the
one waiting, which has run nothing and leaves nothing behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable


class StandbyPool:
    """At most one standby, made ready on `prepare()`, handed over to a run once."""

    def __init__(self, with_parent_hook: Callable[[], None]) -> None:
        self._hook = with_parent_hook  # in the child: end with the process that started it
        self._standby: subprocess.Popen[bytes] | None = None
        self._keep: bool | None = None  # prepare()'s with_parent: standbys are kept
        self._closed = False
        self._lock = threading.Lock()

    @property
    def waiting(self) -> subprocess.Popen[bytes] | None:
        """The standby made ready and not handed over yet (it may still be starting)."""
        return self._standby

    def prepare(self, with_parent: bool = False) -> None:
        """Start a standby for the next run, unless one waits already."""
        with self._lock:
            if self._closed or (self._standby is not None and self._standby.poll() is None):
                return
            self._keep = with_parent
            self._standby = subprocess.Popen(
                [sys.executable, "-m", "nb2cwl.standby"], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=self._hook if with_parent else None)

    def close(self) -> None:
        """Stop the standby waiting (it has run nothing); no other will be made ready."""
        with self._lock:
            self._closed = True
            standby, self._standby = self._standby, None
        if standby is not None and standby.poll() is None:
            assert standby.stdin is not None
            with contextlib.suppress(OSError):
                standby.stdin.close()  # EOF: it stops its engine and exits
            try:
                standby.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(standby.pid, signal.SIGKILL)
                standby.wait()

    def hand_over(self, argv: list[str], cwd: str, log: str, python: str | None,
                  with_parent: bool) -> subprocess.Popen[bytes] | None:
        """The standby, now running `nb2cwl ARGV` in `cwd` with its output in `log`; None
        when none waits alive for such a run (another interpreter, another lifetime)."""
        with self._lock:
            standby, self._standby = self._standby, None
        if standby is None or standby.poll() is not None or (
                python not in (None, sys.executable)) or with_parent != self._keep:
            if standby is not None and standby.poll() is None:
                self._standby = standby  # kept for a run it suits
            return None
        assert standby.stdin is not None
        request = {"argv": argv, "log": log, "cwd": cwd}
        standby.stdin.write(json.dumps(request).encode() + b"\n")
        standby.stdin.close()
        return standby

    def after(self, process: subprocess.Popen[bytes], with_parent: bool) -> None:
        """Once `process` (a run) has ended, make the next standby ready, if standbys of its
        kind are kept here."""
        if self._keep != with_parent:
            return

        def wait_then_prepare() -> None:
            process.wait()
            self.prepare(with_parent)

        threading.Thread(target=wait_then_prepare, daemon=True).start()
