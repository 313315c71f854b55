"""The progress of `nb2cwl run` as JSON lines (`--events FILE`), for the Jupyter integration.

One object per line, in the order things happen:

- `{"kind": "run", "status": "running", "steps": [...], "results": DIR}` once the workflow
  starts, then `{"kind": "step", "status": "queued", "step": NAME, "cells": [ids]}` for each
  step;
- `{"kind": "step", "status": "running", "where": ..., "shard": k, "shards": n}`, then
  `done`, `cached`, `failed` or `skipped` with `elapsed` seconds, per step (per job of a
  scattered loop);
- `{"kind": "cell", "status": "running" | "done" | "failed" | "cached" | "skipped",
  "cell": ID, "index": N, "execution_count": C}` per cell;
- `{"kind": "output", "cell": ID, "output": {...}}`: one nbformat output more for the cell;
  or `{"kind": "output", "cell": ID, "reset": true, "outputs": [...]}`: the cell's outputs
  are now these (a clear_output or a display update changed earlier ones);
- `{"kind": "run", "status": "done" | "failed" | "cancelled", "message": ...,
  "executed_notebook": PATH}` at the end.

The steps write their own events (runtime/live.py) into a folder beside FILE, which is read
here while StreamFlow runs; a step that cannot reach that folder (a container) is reported
from StreamFlow's log instead, without its cells' outputs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import time
from typing import Any

from nb2cwl.ir.model import Workflow
from nb2cwl.runtime.live import ENV as STEP_EVENTS_ENV

ASSEMBLE_STEP = "assemble"


class RunEvents:
    """Writes the run's events to `path`, merging in those the steps write."""

    def __init__(self, path: str, private: bool = False) -> None:
        """`private`: kept only for this run's own progress (`nb2cwl run` without --events):
        the file and its folder go when the run ends."""
        self.path = os.path.abspath(path)
        self.private = private
        self.folder = self.path + ".steps"
        shutil.rmtree(self.folder, ignore_errors=True)
        os.makedirs(self.folder, exist_ok=True)
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in end()
        self._offsets: dict[str, int] = {}
        self._partial: dict[str, str] = {}
        self._sent: dict[str, list[dict[str, Any]]] = {}  # outputs already sent, per cell
        self._reported: set[str] = set()  # steps whose end the steps' own events told
        self._shards: dict[str, int] = {}  # scattered loops: jobs per map step
        self._targets: dict[str, str] = {}
        self._map_of: dict[str, str] = {}  # split step -> its map step
        self.ended = False
        self.ends: dict[str, list[str]] = {}  # each step's ends: done, cached, failed, skipped
        self.running: dict[str, tuple[str, float, int]] = {}  # step -> where, since, jobs
        self.cells: dict[int, dict[str, Any]] = {}  # each cell's last status, by its index
        self._cell_ids: dict[int, str] = {}

    @property
    def environment(self) -> dict[str, str]:
        """What the StreamFlow process passes on to the steps."""
        return {STEP_EVENTS_ENV: self.folder}

    def write(self, event: dict[str, Any]) -> None:
        """One event, as a line (with the time it is written, unless it has one)."""
        event = {"time": time.time(), **{k: v for k, v in event.items() if v is not None}}
        self._handle.write(json.dumps(event, default=str) + "\n")
        self._handle.flush()

    def begin(self, workflow: Workflow, results: str) -> None:
        """The workflow starts: every step is queued."""
        steps = [step.name for step in workflow.steps] + [ASSEMBLE_STEP]
        self.write({"kind": "run", "status": "running", "steps": steps, "results": results})
        for step in workflow.steps:
            self._targets[step.name] = step.target or "local"
            if step.role == "map":
                split = step.name.removesuffix("_map") + "_split"
                self._map_of[split] = step.name
            self.write({"kind": "step", "status": "queued", "step": step.name,
                        "cells": [cell.cell_id for cell in step.cells], "role": step.role,
                        "deployment": self._targets[step.name]})
        self.write({"kind": "step", "status": "queued", "step": ASSEMBLE_STEP, "cells": [],
                    "role": "assemble"})

    def poll(self) -> None:
        """Pass on what the steps wrote since the last call."""
        try:
            names = sorted(os.listdir(self.folder))
        except OSError:
            return
        for name in names:
            for event in self._read(os.path.join(self.folder, name)):
                self._step_event(event)

    def streamflow_line(self, step: str, status: str) -> None:
        """StreamFlow logged that `step` completed or failed: told only when the step's own
        events did not (it ran where it could not write them)."""
        self.poll()  # the step's own events were written before StreamFlow saw it end
        if step in self._reported:
            return
        self._reported.add(step)
        self.ends.setdefault(step, []).append(status)
        self.running.pop(step, None)
        self.write({"kind": "step", "status": status, "step": step})

    def end(self, status: str, message: str | None = None,
            executed_notebook: str | None = None) -> None:
        """The run ended: done, failed or cancelled (after a last poll); told once."""
        if self.ended:
            return
        self.ended = True
        self.poll()
        self.write({"kind": "run", "status": status, "message": message,
                    "executed_notebook": executed_notebook})
        self._handle.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.private:
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def outcome(self, step: str) -> str:
        """What happened to `step`, in a word: reused (every job taken from the cache),
        failed (a cell raised, or the engine failed it), skipped (after an earlier failure),
        or done."""
        self.poll()
        ends = self.ends.get(step, [])
        if "failed" in ends:
            return "failed"
        if ends and all(end == "cached" for end in ends):
            return "reused"
        if ends and all(end == "skipped" for end in ends):
            return "skipped"
        return "done"

    def outputs_of(self, index: int) -> list[dict[str, Any]]:
        """The outputs the cell at `index` has shown so far."""
        return list(self._sent.get(self._cell_ids.get(index, ""), []))

    def _read(self, path: str) -> list[dict[str, Any]]:
        offset = self._offsets.get(path, 0)
        try:
            with open(path, encoding="utf-8") as handle:
                handle.seek(offset)
                text = handle.read()
                self._offsets[path] = handle.tell()
        except OSError:
            return []
        text = self._partial.pop(path, "") + text
        lines = text.split("\n")
        if lines[-1]:  # a line still being written
            self._partial[path] = lines[-1]
        events = []
        for line in lines[:-1]:
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return events

    def _step_event(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        step = str(event.get("step", ""))
        if kind == "step":
            status = event.get("status")
            if status == "running":
                host = event.get("host") or socket.gethostname()
                event["where"] = f"{self._targets.get(step, 'local')} ({host})"
                _, since, jobs = self.running.get(step, ("", time.time(), 0))
                self.running[step] = (event["where"], since, jobs + 1)
            if status in ("done", "cached", "failed", "skipped"):
                self._reported.add(step)
                self.ends.setdefault(step, []).append(str(status))
                where, since, jobs = self.running.get(step, ("", 0.0, 1))
                if jobs <= 1:
                    self.running.pop(step, None)
                else:
                    self.running[step] = (where, since, jobs - 1)
            if step in self._map_of and event.get("shards"):
                self._shards[self._map_of[step]] = int(event["shards"])
            if "shard" in event and step in self._shards:
                event["shards"] = self._shards[step]
            self.write(event)
        elif kind == "cell":
            if isinstance(event.get("index"), int):
                self.cells[event["index"]] = event
                self._cell_ids[event["index"]] = str(event.get("cell"))
            self.write(event)
        elif kind == "outputs":
            self._outputs(event)

    def _outputs(self, event: dict[str, Any]) -> None:
        """The whole list of a cell's outputs so far, sent as what changed."""
        cell = str(event.get("cell"))
        new = event.get("outputs") or []
        old = self._sent.get(cell, [])
        self._sent[cell] = new
        common = dict(cell=cell, index=event.get("index"), step=event.get("step"),
                      time=event.get("time"))
        added = _appended(old, new)
        if added is None:
            self.write({"kind": "output", "reset": True, "outputs": new, **common})
            return
        for output in added:
            self.write({"kind": "output", "output": output, **common})


def _appended(old: list[dict[str, Any]], new: list[dict[str, Any]]
              ) -> list[dict[str, Any]] | None:
    """The outputs that turn `old` into `new` when appended (a stream's text that grew comes
    as a stream output of the added text, which Jupyter merges); None when `new` is no such
    continuation (earlier outputs were cleared or replaced)."""
    if len(new) < len(old) or new[:max(len(old) - 1, 0)] != old[:max(len(old) - 1, 0)]:
        return None
    if not old:
        return list(new)
    last_old, last_new = old[-1], new[len(old) - 1]
    added: list[dict[str, Any]] = []
    if last_old != last_new:
        same_stream = (last_old.get("output_type") == "stream" == last_new.get("output_type")
                       and last_old.get("name") == last_new.get("name"))
        before, after = _text(last_old), _text(last_new)
        if not same_stream or not after.startswith(before):
            return None
        added.append({**last_new, "text": after[len(before):]})
    return added + list(new[len(old):])


def _text(output: dict[str, Any]) -> str:
    text = output.get("text", "")
    return "".join(text) if isinstance(text, list) else str(text)
