"""Runs started from Jupyter: each is an `nb2cwl run` process of its own, with a record on disk.

A run's record is a folder under the runs folder (NB2CWL_RUNS_DIR, by default
`<Jupyter data dir>/nb2cwl/runs`): `run.json` (what was asked: notebook, deployment, mode,
the process), `events.jsonl` (the run's progress, written by `nb2cwl run --events`),
`log.txt` (its output, StreamFlow's log included), and `notebook.ipynb` (the content the
editor sent, when it sent one: unsaved edits run, the notebook file is never written). The
server and the IPython magics share the folder, so a run started one way is listed the other
way too, and a restarted server finds every earlier run again.

A run goes `running` → `done`, `failed` or `cancelled`; a run whose process ended without
telling (killed with SIGKILL, a crash of the machine) is `lost`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nb2cwl.backends.naming import EXECUTED_SUFFIX, default_output_dir
from nb2cwl.integrations.standby_pool import StandbyPool
from nb2cwl.options import CompileOptions
from nb2cwl.stopping import start_time

RUNS_ENV = "NB2CWL_RUNS_DIR"
MODES = ("all", "changed", "selected")
GRANULARITIES = ("auto", "cell")  # nb2cwl run --granularity
ENDED = ("done", "failed", "cancelled", "lost")


def default_runs_dir() -> str:
    """Where run records live: $NB2CWL_RUNS_DIR, else the Jupyter data folder's nb2cwl/runs."""
    if os.environ.get(RUNS_ENV):
        return os.environ[RUNS_ENV]
    from jupyter_core.paths import jupyter_data_dir

    return os.path.join(jupyter_data_dir(), "nb2cwl", "runs")


@dataclass(frozen=True)
class RunRequest:
    """What to run: a notebook (absolute path), shown as `path`, on a deployment.

    `mode`: "all" runs every step again, "changed" reuses the steps whose code and inputs are
    unchanged since an earlier run, "selected" runs `cells` (ids) and the cells they need.
    `content`: the notebook as nbformat JSON, run instead of the file's own content.
    """

    notebook: str
    path: str
    deployment: str | None = None
    mode: str = "all"
    cells: tuple[str, ...] = ()
    content: dict[str, Any] | None = None
    granularity: str = "auto"  # or "cell": one step per cell (nb2cwl run --granularity)
    output: str | None = None  # the workflow directory (default: NOTEBOOK-wf beside it)


@dataclass
class RunState:
    """What a run's events say so far: its status, each step's and each cell's."""

    status: str = "running"
    message: str | None = None
    results: str | None = None
    executed_notebook: str | None = None
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # the steps, in the workflow's order
    ended: bool = False

    def apply(self, event: dict[str, Any]) -> None:
        """Take one event into account."""
        kind = event.get("kind")
        if kind == "run":
            if event.get("status") == "running":
                self.results = event.get("results") or self.results
                self.order = list(event.get("steps") or self.order)
            else:
                self.status = str(event.get("status"))
                self.message = event.get("message")
                self.executed_notebook = event.get("executed_notebook")
                self.ended = True
        elif kind == "step":
            name = str(event.get("step"))
            step = self.steps.setdefault(name, {"status": "queued"})
            step.update({k: v for k, v in event.items() if k not in ("kind", "time")})
            if event.get("status") == "running":
                step["started"] = event.get("time")
        elif kind == "cell":
            cell = self.cells.setdefault(str(event.get("cell")), {})
            cell.update({k: event[k] for k in ("status", "step", "index", "execution_count")
                         if k in event})

    @property
    def steps_done(self) -> int:
        """Steps that finished: done, cached, failed or skipped."""
        return sum(1 for s in self.steps.values()
                   if s.get("status") in ("done", "cached", "failed", "skipped"))


class Run:
    """One run's record (see the module's docstring)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        with open(os.path.join(folder, "run.json"), encoding="utf-8") as handle:
            self.meta: dict[str, Any] = json.load(handle)
        self.state = RunState()
        self.history: list[dict[str, Any]] = []  # every event read so far, in order
        self._offset = 0
        self._partial = ""
        self.process: subprocess.Popen[bytes] | None = None  # when this process started it

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @property
    def notebook(self) -> str:
        return str(self.meta["notebook"])

    @property
    def events_path(self) -> str:
        return os.path.join(self.folder, "events.jsonl")

    @property
    def log_path(self) -> str:
        return os.path.join(self.folder, "log.txt")

    def read_events(self) -> list[dict[str, Any]]:
        """The events written since the last call (the state takes them into account)."""
        try:
            with open(self.events_path, encoding="utf-8") as handle:
                handle.seek(self._offset)
                text = handle.read()
                self._offset = handle.tell()
        except OSError:
            return []
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        found = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self.state.apply(event)
            found.append(event)
        self.history += found
        return found

    def compile_options(self) -> CompileOptions:
        """The options the run compiled the notebook with (see RunStore.start)."""
        deployment = self.meta.get("deployment")
        return CompileOptions(
            content=os.path.join(self.folder, "notebook.ipynb"), keep_values=True,
            only_cells=tuple(self.meta.get("cells") or ()),
            granularity=self.meta.get("granularity") or "auto",
            deployment=deployment if deployment and deployment != "local" else None)

    def alive(self) -> bool:
        """True while the run's process runs (the same process: a pid can be reused)."""
        if self.process is not None:
            return self.process.poll() is None
        pid = self.meta.get("pid")
        return bool(pid) and start_time(int(pid)) == self.meta.get("pid_start")

    @property
    def status(self) -> str:
        """running, done, failed, cancelled or lost."""
        if self.state.ended:
            return self.state.status
        if self.alive():
            return "running"
        self.read_events()  # it may have ended since the last look
        if self.state.ended:
            return self.state.status
        if self.meta.get("cancel_requested"):
            return "cancelled"
        if self.process is not None and self.process.returncode not in (None, 0):
            return "failed"
        return "lost"

    def finished_at(self) -> float | None:
        """When the run ended (its events file was last written), or None while it runs."""
        if self.status not in ENDED:
            return None
        try:
            return os.path.getmtime(self.events_path)
        except OSError:
            return self.meta.get("started")

    def executed_notebook(self) -> str | None:
        """The executed notebook of this run, once it exists."""
        if self.state.executed_notebook and os.path.isfile(self.state.executed_notebook):
            return self.state.executed_notebook
        if self.state.results and os.path.isdir(self.state.results):
            found = sorted(Path(self.state.results).glob(f"*{EXECUTED_SUFFIX}"))
            if found:
                return str(found[0])
        return None

    def message(self) -> str | None:
        """The run's error, if it failed (the log's last lines when it said nothing)."""
        if self.state.message:
            return self.state.message
        if self.status in ("failed", "lost"):
            try:
                with open(self.log_path, encoding="utf-8", errors="replace") as handle:
                    tail = handle.read()[-2000:].strip().splitlines()
            except OSError:
                tail = []
            return tail[-1] if tail else f"the run's process ended without a word ({self.status})"
        return None

    def to_json(self, detail: bool = False) -> dict[str, Any]:
        """The run as the server's API shows it (with `detail`: every step's and cell's state)."""
        self.read_events()
        status = self.status
        finished = self.finished_at()
        started = float(self.meta["started"])
        data: dict[str, Any] = {
            "id": self.id, "path": self.meta["path"], "notebook": self.notebook,
            "deployment": self.meta.get("deployment") or "local", "mode": self.meta["mode"],
            "granularity": self.meta.get("granularity") or "auto",
            "cells_selected": self.meta.get("cells", []), "status": status,
            "started": started, "finished": finished,
            "duration": None if finished is None else max(0.0, finished - started),
            "steps_total": len(self.state.order), "steps_done": self.state.steps_done,
            "error": self.message() if status in ("failed", "lost") else None,
            "output": self.meta["output"], "results": self.state.results,
            "files": {"cwl": os.path.isfile(os.path.join(self.meta["output"], "workflow.cwl")),
                      "crate": status == "done",
                      "notebook": self.executed_notebook() is not None,
                      "logs": os.path.isfile(self.log_path)},
        }
        if detail:
            data["steps"] = {name: self.state.steps.get(name, {"status": "queued"})
                             for name in self.state.order} or dict(self.state.steps)
            data["cells"] = self.state.cells
        return data


def _stop_with_parent() -> None:
    """In the run's process, before it starts: SIGTERM when its parent dies (Linux)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _document(notebook: str) -> dict[str, Any]:
    """The notebook file's content as nbformat JSON (a script read as nb2cwl reads it)."""
    from nb2cwl.frontend.reader import read_document

    return dict(read_document(notebook))


class RunStore:
    """The run records in one folder: start, find, list and cancel runs; `prepare()` keeps a
    standby ready for the next run started here (integrations/standby_pool.py)."""

    def __init__(self, folder: str | None = None) -> None:
        self.folder = os.path.abspath(folder or default_runs_dir())
        self._runs: dict[str, Run] = {}
        self._standbys = StandbyPool(_stop_with_parent)

    def prepare(self, with_parent: bool = False) -> None:
        """Keep a standby ready for the next run started here (see StandbyPool)."""
        self._standbys.prepare(with_parent)

    def close(self) -> None:
        """Stop the standby waiting; no other will be made ready."""
        self._standbys.close()

    @property
    def standby(self) -> subprocess.Popen[bytes] | None:
        """The standby ready for the next run, if any."""
        return self._standbys.waiting

    def start(self, request: RunRequest, python: str | None = None,
              with_parent: bool = False) -> Run:
        """Start `nb2cwl run` for `request` in a process (and session) of its own.

        `with_parent`: the run stops (as on SIGTERM) when this process dies (a kernel that
        started it); otherwise it goes on, and a restarted server follows it again."""
        if request.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {request.mode!r}")
        if request.mode == "selected" and not request.cells:
            raise ValueError("mode 'selected' needs the cells to run")
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        folder = os.path.join(self.folder, run_id)
        os.makedirs(folder)
        output = request.output or default_output_dir(request.notebook)
        # the compile options here are those of Run.compile_options
        command = [python or sys.executable, "-m", "nb2cwl", "run", request.notebook,
                   "-o", output, "--events", os.path.join(folder, "events.jsonl"), "--debug",
                   "--keep-values"]  # %nb2cwl pull loads any variable of the run
        # what runs is what the editor showed, or the file as it was now: the record keeps it
        # (the plan of a later run compares with it), and the notebook file is never written
        snapshot = os.path.join(folder, "notebook.ipynb")
        content = request.content if request.content is not None else _document(request.notebook)
        with open(snapshot, "w", encoding="utf-8") as handle:
            json.dump(content, handle)
        command += ["--content", snapshot]
        if request.deployment and request.deployment != "local":
            command += ["--deployment", request.deployment]
        if request.granularity != "auto":
            command += ["--granularity", request.granularity]
        if request.mode == "all":
            command.append("--refresh")
        if request.cells:
            command += ["--cells", ",".join(request.cells)]
        meta = {"id": run_id, "path": request.path, "notebook": request.notebook,
                "deployment": request.deployment or "local", "mode": request.mode,
                "cells": list(request.cells), "granularity": request.granularity,
                "output": output, "started": time.time(),
                "command": command, "content": request.content is not None}
        self._write_meta(folder, meta)
        log_path = os.path.join(folder, "log.txt")
        process = self._standbys.hand_over(command[3:], os.path.dirname(request.notebook),
                                           log_path, python, with_parent)
        if process is not None:  # it became this run (nb2cwl.standby)
            meta["standby"] = True
        else:
            with open(log_path, "wb") as log:
                process = subprocess.Popen(command, cwd=os.path.dirname(request.notebook),
                                           stdin=subprocess.DEVNULL, stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True,
                                           preexec_fn=_stop_with_parent if with_parent
                                           else None)
        self._standbys.after(process, with_parent)
        meta.update(pid=process.pid, pid_start=start_time(process.pid))
        self._write_meta(folder, meta)
        run = Run(folder)
        run.process = process
        self._runs[run_id] = run
        return run

    def get(self, run_id: str) -> Run | None:
        """The run with this id, or None."""
        if run_id in self._runs:
            return self._runs[run_id]
        if not run_id or "/" in run_id or run_id.startswith("."):
            return None
        folder = os.path.join(self.folder, run_id)
        if not os.path.isfile(os.path.join(folder, "run.json")):
            return None
        try:
            run = Run(folder)
        except (OSError, ValueError):
            return None
        self._runs[run_id] = run
        return run

    def runs(self, notebook: str | None = None) -> list[Run]:
        """Every run, newest first; only those of `notebook` (absolute path) when given."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        found = [run for run in (self.get(name) for name in names) if run is not None]
        if notebook is not None:
            found = [run for run in found if run.notebook == os.path.abspath(notebook)]
        return sorted(found, key=lambda run: (run.meta["started"], run.id), reverse=True)

    def active(self, notebook: str) -> Run | None:
        """The run of `notebook` that is still running, if any."""
        for run in self.runs(notebook):
            if run.status == "running":
                return run
        return None

    def last_finished(self, notebook: str) -> Run | None:
        """The notebook's latest run that ended with every cell run (done)."""
        for run in self.runs(notebook):
            if run.status == "done":
                return run
        return None

    def cancel(self, run: Run) -> None:
        """Ask the run's process to stop (it stops everything it started, then exits)."""
        run.meta["cancel_requested"] = True
        self._write_meta(run.folder, run.meta)
        if run.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(run.meta["pid"]), signal.SIGTERM)

    def follow(self, run: Run, interval: float = 0.1) -> Iterator[dict[str, Any]]:
        """The run's events as they are written, until it ends."""
        while True:
            alive = run.alive()
            yield from run.read_events()
            if not alive:
                yield from run.read_events()
                return
            time.sleep(interval)

    def wait(self, run: Run, timeout: float | None = None) -> str:
        """Wait until the run ends; its status (None timeout: as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while run.alive() and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.05)
        if run.process is not None and run.process.poll() is None and timeout is not None:
            return "running"
        return run.status

    def remove(self, run: Run) -> None:
        """Forget an ended run (its record; the workflow's outputs stay)."""
        self._runs.pop(run.id, None)
        shutil.rmtree(run.folder, ignore_errors=True)

    @staticmethod
    def _write_meta(folder: str, meta: dict[str, Any]) -> None:
        temporary = os.path.join(folder, ".run.json.tmp")
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(meta, handle, indent=1)
        os.replace(temporary, os.path.join(folder, "run.json"))
