"""Output written to file descriptors 1 and 2 goes to the running cell, as the kernel sends it.

ipykernel shows what a cell's subprocesses (`os.system`, `subprocess.run` without capture), C
libraries (`printf`, TensorFlow's logging) and `sys.__stdout__` write, not only what Python's
`sys.stdout` gets: it points descriptors 1 and 2 at pipes and forwards what arrives. A step
does the same: a reader thread per pipe passes the text to the running cell's capture, and
echoes it to the step's own output (its log). Python's `sys.stdout` and `sys.stderr` echo to
that log directly, so nothing is captured twice.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import fcntl
import io
import os
import select
import sys
import termios
import threading
import time
from typing import Any

_DRAIN_WAIT = 0.5  # seconds a cell's end waits at most for its descriptors' last bytes


class _Pipe:
    """One descriptor pointed at a pipe, read by a thread."""

    def __init__(self, fd: int, name: str, deliver: Any) -> None:
        self.fd = fd
        self.name = name
        self.deliver = deliver  # (stream name, text) -> None
        self.saved = os.dup(fd)  # where the step's own output (its log) goes
        self.read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.busy = threading.Lock()  # held while a chunk is being passed on
        self.thread = threading.Thread(target=self._run, name=f"nb2cwl-fd{fd}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.read_end], [], [], 0.2)
            except (OSError, ValueError):
                return
            if not ready:
                continue
            with self.busy:
                try:
                    data = os.read(self.read_end, 65536)
                except OSError:
                    return
                if not data:
                    return
                with contextlib.suppress(OSError):
                    os.write(self.saved, data)
                text = self.decoder.decode(data)
                if text:
                    self.deliver(self.name, text)

    def pending(self) -> int:
        """Bytes in the pipe not read yet."""
        size = ctypes.c_int(0)
        try:
            fcntl.ioctl(self.read_end, termios.FIONREAD, size)
        except OSError:
            return 0
        return size.value

    def drain(self, deadline: float) -> None:
        """Wait until what was written so far has been passed on."""
        while self.pending() and time.monotonic() < deadline:
            time.sleep(0.001)
        with self.busy:  # a chunk being passed on now is passed on
            pass


_pipes: list[_Pipe] = []


def forward(deliver: Any) -> tuple[io.TextIOBase, io.TextIOBase] | None:
    """Point descriptors 1 and 2 at pipes whose text goes to `deliver(name, text)`; return
    text files writing to where they went before (for the step's own log), or None when they
    are already forwarded (once per process)."""
    if _pipes:
        return None
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()
    out = _Pipe(1, "stdout", deliver)
    err = _Pipe(2, "stderr", deliver)
    _pipes.extend((out, err))
    return (io.TextIOWrapper(os.fdopen(out.saved, "wb", buffering=0, closefd=False),
                             encoding="utf-8", errors="replace", line_buffering=True),
            io.TextIOWrapper(os.fdopen(err.saved, "wb", buffering=0, closefd=False),
                             encoding="utf-8", errors="replace", line_buffering=True))


def catch_up() -> None:
    """Before Python's own print: what the descriptors got earlier comes first, as it was
    written first (a quick look: no waiting when nothing is pending)."""
    for pipe in _pipes:
        if pipe.pending() or pipe.busy.locked():
            pipe.drain(time.monotonic() + 0.05)


def drain() -> None:
    """Pass on everything written to the descriptors so far (at the end of a cell): C's own
    buffers are flushed first, as a process that ends its line does."""
    if not _pipes:
        return
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)
    deadline = time.monotonic() + _DRAIN_WAIT
    for pipe in _pipes:
        pipe.drain(deadline)
