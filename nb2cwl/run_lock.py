"""One run at a time in an output folder: `nb2cwl run`, `check` and compiling write the same
workflow files and read the same cache, so a second one waits (`--wait`) or refuses, saying
which run holds the folder.

The lock is an advisory lock (flock) on `OUT/.nb2cwl-run.lock`, which also holds who took it
(the notebook, the process id, the time); where nothing of nb2cwl's was written (a notebook
that does not compile, a folder nb2cwl refused), the file goes again. The kernel releases the
lock when its process ends, however it ends (SIGKILL included): a lock is never left behind.
Runs into different folders never wait for each other.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from types import TracebackType

from nb2cwl.backends.naming import MANIFEST
from nb2cwl.backends.naming import RUN_LOCK as LOCK_FILE
from nb2cwl.errors import OutputExistsError


class RunInProgress(OutputExistsError):
    """Another nb2cwl process is running into the same output folder."""

    code = "run-in-progress"


class RunLock:
    """The output folder's lock, held while compiling and running into it."""

    def __init__(self, out_dir: str, notebook: str, command: str, wait: bool = False) -> None:
        self.path = os.path.join(out_dir, LOCK_FILE)
        self.out_dir = out_dir
        self.notebook = os.path.abspath(notebook)
        self.command = command
        self.wait = wait
        self._handle: int | None = None
        self._made_folder = False

    def __enter__(self) -> RunLock:
        self._made_folder = not os.path.isdir(self.out_dir)
        os.makedirs(self.out_dir, exist_ok=True)
        handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(handle)
            if not self.wait:
                os.close(handle)
                raise RunInProgress(f"{holder}; wait for it with --wait, or write into another "
                                    "folder (-o)") from None
            print(f"nb2cwl: {holder}: waiting for it to end", file=sys.stderr, flush=True)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX)  # a signal stops the wait (stop_on_signals)
            except BaseException:
                os.close(handle)
                raise
        os.ftruncate(handle, 0)
        os.pwrite(handle, json.dumps({"notebook": self.notebook, "pid": os.getpid(),
                                      "command": self.command,
                                      "started": time.time()}).encode(), 0)
        self._handle = handle
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._handle is None:
            return
        os.ftruncate(self._handle, 0)
        if not os.path.exists(os.path.join(self.out_dir, MANIFEST)):
            # nothing of nb2cwl's is here (the notebook did not compile, or the folder holds
            # only the user's files): leave no lock file, nor a folder made for it
            os.unlink(self.path)
            if self._made_folder and not os.listdir(self.out_dir):
                os.rmdir(self.out_dir)
        fcntl.flock(self._handle, fcntl.LOCK_UN)
        os.close(self._handle)
        self._handle = None

    def _holder(self, handle: int) -> str:
        """Who holds the folder, in words."""
        try:
            data = json.loads(os.pread(handle, 4096, 0).decode() or "{}")
        except (OSError, ValueError):
            data = {}
        started = data.get("started")
        when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
                if isinstance(started, (int, float)) else "a moment ago")
        what = data.get("command", "run")
        whose = os.path.basename(str(data.get("notebook") or "a notebook"))
        return (f"an nb2cwl {what} of {whose} is in progress in {self.out_dir} (pid "
                f"{data.get('pid', '?')}, started at {when})")
