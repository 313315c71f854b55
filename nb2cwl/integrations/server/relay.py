"""Passes the events of running runs on to Jupyter Server's event bus, as they are written.

Every run the server started, and every run still going that it finds when it starts (a
server restarted while a run went on), is followed: its events file is read every
INTERVAL seconds and each new event is emitted with the run's id and notebook path. When a
run's process ends without a last event (killed), the relay emits the end itself.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import Any

from tornado.ioloop import IOLoop, PeriodicCallback

from nb2cwl.integrations.runs import Run, RunStore
from nb2cwl.integrations.server.events import SCHEMA, SCHEMA_ID

INTERVAL = 0.1  # seconds
_FIELDS = set(SCHEMA["properties"])


class Relay:
    """Follows runs and emits their events."""

    def __init__(self, store: RunStore, event_logger: Any, log: logging.Logger) -> None:
        self.store = store
        self.events = event_logger
        self.log = log
        self.following: dict[str, Run] = {}
        self.sent: dict[str, int] = {}  # per run: how many of its events are on the bus
        self.started: set[str] = set()  # runs this server started
        self.packed: set[str] = set()  # runs whose workflow is kept (keep_cwl)
        self._timer: PeriodicCallback | None = None

    def start(self) -> None:
        """Follow the runs still going, then every INTERVAL seconds."""
        for run in self.store.runs():
            if run.status == "running":
                run.read_events()  # what happened before: the state, not re-emitted
                self.following[run.id] = run
                self.sent[run.id] = len(run.history)
        self._timer = PeriodicCallback(self.tick, INTERVAL * 1000)
        self._timer.start()

    def stop(self) -> None:
        """Stop following."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def follow(self, run: Run, started_here: bool = True) -> None:
        """Follow a run from its first event on."""
        self.following[run.id] = run
        self.sent.setdefault(run.id, 0)
        if started_here:
            self.started.add(run.id)

    def cancel_started(self) -> None:
        """Cancel the runs this server started that still run, and wait a little for them."""
        going = [run for run in self.following.values()
                 if run.id in self.started and run.alive()]
        for run in going:
            self.store.cancel(run)
        deadline = time.monotonic() + 15
        while any(run.alive() for run in going) and time.monotonic() < deadline:
            time.sleep(0.1)

    def tick(self) -> None:
        """Emit what the followed runs wrote since the last tick."""
        for run in list(self.following.values()):
            try:
                self._pass_on(run)
            except Exception:  # one run's bad record must not stop the others' progress
                self.log.exception("nb2cwl: following run %s failed", run.id)
                self.following.pop(run.id, None)

    def _pass_on(self, run: Run) -> None:
        alive = run.alive()
        run.read_events()  # (others read them too: the history keeps them all)
        self._send_new(run)
        if alive:
            return
        run.read_events()  # the last ones, written as it exited
        self._send_new(run)
        if not run.state.ended:  # it ended without saying so
            self.emit(run, {"kind": "run", "status": run.status, "message": run.message()})
        self.following.pop(run.id, None)
        self.packed.discard(run.id)

    def _send_new(self, run: Run) -> None:
        start = self.sent.get(run.id, 0)
        for event in run.history[start:]:
            self.emit(run, event)
        self.sent[run.id] = len(run.history)

    def emit(self, run: Run, event: dict[str, Any]) -> None:
        """One event of `run` on the bus."""
        data = {k: v for k, v in event.items() if k in _FIELDS and v is not None}
        data.update(run=run.id, path=str(run.meta["path"]))
        self.events.emit(schema_id=SCHEMA_ID, data=data)
        # its first step's news: the workflow is written (nb2cwl run's StreamFlow process
        # writes it after the run's "running", before any step starts)
        if data.get("kind") == "step" and data.get("status") != "queued" and \
                run.id not in self.packed:
            self.packed.add(run.id)
            IOLoop.current().run_in_executor(None, keep_cwl, run)


def keep_cwl(run: Run) -> None:
    """Keep the workflow `run` runs, packed in one file (its output folder is compiled into
    again by later runs)."""
    from nb2cwl.backends.bundle import write_packed

    source = Path(run.meta["output"]) / "workflow.cwl"
    target = Path(run.folder) / "workflow.packed.cwl"
    if source.is_file() and not target.exists():
        with contextlib.suppress(Exception):  # the download then packs it when asked
            write_packed(source, target)
