"""A step's progress as it happens: step and cell events, one JSON object per line.

`nb2cwl run --events FILE` points NB2CWL_EVENTS at a folder; each step process appends its
events to a file of its own there, which `nb2cwl run` reads while the workflow runs (the
Jupyter integration shows them). Where the variable is unset, or the folder is not reachable
from where the step runs (a container, a node without the shared file system), nothing is
written and the step runs as always: the executed notebook stays the record of the outputs.

A cell's outputs are sent as the whole list so far, at most every OUTPUTS_INTERVAL seconds
while it runs and once when it ends, laid out as the executed notebook will have them.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any

ENV = "NB2CWL_EVENTS"
OUTPUTS_INTERVAL = 0.25


class _Sink:
    """The step's events file (opened on the first event)."""

    def __init__(self, folder: str, step: str) -> None:
        self.path = os.path.join(folder, f"{step}.{os.getpid()}.{time.time_ns()}.jsonl")
        self.lock = threading.Lock()

    def write(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, default=str) + "\n"
        with self.lock:
            try:
                with open(self.path, "a", encoding="utf-8") as handle:
                    handle.write(line)
            except OSError:  # the folder went away: progress is only a help
                pass


_sink: _Sink | None = None
_step = ""


def begin(step: str, **fields: Any) -> None:
    """The step started here (its process is running); opens the events file."""
    global _sink, _step
    folder = os.environ.get(ENV)
    _step = step
    if not folder or not os.path.isdir(folder) or not _chief():
        _sink = None
        return
    _sink = _Sink(folder, step)
    step_event("running", host=socket.gethostname(), pid=os.getpid(), **fields)


def _chief() -> bool:
    """False in the other workers of a training step (the first worker speaks for the step)."""
    if not os.environ.get("NB2CWL_WORKER"):
        return True
    if os.environ.get("SLURM_PROCID", "0") not in ("", "0"):
        return False
    try:
        task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
        return int(task.get("index", 0) or 0) == 0
    except (ValueError, AttributeError, TypeError):
        return True


def active() -> bool:
    """True when events are being written."""
    return _sink is not None


def step_event(status: str, **fields: Any) -> None:
    """The step's status: running, done, cached, failed or skipped."""
    emit({"kind": "step", "step": _step, "status": status, **fields})


def cell_event(cell: dict[str, Any], status: str, **fields: Any) -> None:
    """A cell's status: running, done, failed, cached or skipped."""
    emit({"kind": "cell", "step": _step, "cell": cell["id"], "index": cell["index"],
          "status": status, **fields})


def cell_outputs(cell: dict[str, Any], outputs: list[dict[str, Any]]) -> None:
    """The cell's outputs so far (the whole list)."""
    from .capture import shown

    emit({"kind": "outputs", "step": _step, "cell": cell["id"], "index": cell["index"],
          "outputs": shown(outputs)})


def emit(event: dict[str, Any]) -> None:
    """Write one event, stamped with the time."""
    if _sink is not None:
        _sink.write({"time": time.time(), **{k: v for k, v in event.items() if v is not None}})


class CellOutputs:
    """Sends a running cell's outputs while they grow: called by the output capture after
    each change, it sends the list at once when it last sent OUTPUTS_INTERVAL ago, else once
    that much time has passed (a timer), so a print before a long computation shows."""

    def __init__(self, cell: dict[str, Any], outputs: Any) -> None:
        self.cell = cell
        self.outputs = outputs  # () -> the outputs so far
        self.last = 0.0
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()

    def changed(self) -> None:
        with self.lock:
            wait = self.last + OUTPUTS_INTERVAL - time.monotonic()
            if wait <= 0:
                self._send()
            elif self.timer is None:
                self.timer = threading.Timer(wait, self._later)
                self.timer.daemon = True
                self.timer.start()

    def _later(self) -> None:
        with self.lock:
            self.timer = None
            self._send()

    def _send(self) -> None:
        self.last = time.monotonic()
        try:
            outputs = self.outputs()
        except Exception:  # a half-written event list: the next change sends it
            return
        cell_outputs(self.cell, outputs)

    def close(self) -> None:
        """The cell ended: no more sends from the timer (the final outputs follow)."""
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
