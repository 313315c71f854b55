"""Run a compiled workflow with StreamFlow: progress while it runs, a summary at the end."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from nb2cwl.backends.naming import executed_name
from nb2cwl.errors import RunError
from nb2cwl.ir.model import Workflow

CACHE_DIR = ".nb2cwl-cache"
_SCHEDULED = re.compile(r"Scheduled job \S+ with job id (\S+)")
_COMPLETED = re.compile(r"COMPLETED Step /(\S+)")
_FAILED = re.compile(r"FAILED (?:Step|Job) /(\S+)")


@dataclass
class RunSummary:
    """What a finished run produced."""

    results_dir: str
    executed_notebook: str
    seconds: float
    steps_done: list[str] = field(default_factory=list)
    written_files: list[str] = field(default_factory=list)


def next_results_dir(out_dir: str) -> str:
    """A new runs/<n> folder under the output directory: earlier results are never replaced."""
    runs = Path(out_dir) / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    taken = [int(p.name) for p in runs.iterdir() if p.name.isdigit()]
    return str(runs / str(max(taken, default=0) + 1))


# Imports StreamFlow (most of its start-up time), then waits for its command line on stdin.
# Not `python -m streamflow`: that entry point drops the exit status (0.2.0rc3).
_BOOTSTRAP = (
    "import json, sys\n"
    "from streamflow.main import run\n"
    "line = sys.stdin.readline()\n"
    "if not line.strip():\n"
    "    sys.exit(0)\n"
    "sys.argv = ['streamflow', *json.loads(line)]\n"
    "status = run()\n"
    "import gc\n"
    "gc.freeze()\n"  # no final collection of StreamFlow's objects: exits about 0.3 s sooner
    "sys.exit(status)\n"
)


class Engine:
    """A StreamFlow process started early, so its start-up overlaps with compiling."""

    def __init__(self, cache_dir: str | None = None) -> None:
        env = dict(os.environ)
        if cache_dir:  # steps reuse outputs of earlier runs whose code and inputs match
            env["NB2CWL_CACHE_DIR"] = os.path.abspath(cache_dir)
        # steps run `python3` from PATH: make it this environment's interpreter
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)

    def start(self, arguments: list[str]) -> subprocess.Popen[str]:
        """Hand StreamFlow its command line; it starts running the workflow."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(arguments) + "\n")
        self.process.stdin.close()
        return self.process

    def cancel(self) -> None:
        """Compilation failed: let the waiting process go."""
        if self.process.poll() is None:
            _stop(self.process)


def run_workflow(workflow: Workflow, out_dir: str, quiet: bool = False,
                 debug: bool = False, engine: Engine | None = None,
                 cache: bool = True) -> RunSummary:
    """Run `out_dir/streamflow.yml`; raise RunError with the failing cell when a step fails."""
    results = next_results_dir(out_dir)
    total = len(workflow.steps) + 1
    done: list[str] = []
    log: list[str] = []
    batch_jobs: list[str] = []  # queue jobs StreamFlow submitted for this run
    start = time.monotonic()
    engine = engine or Engine(os.path.join(out_dir, CACHE_DIR) if cache else None)
    process = engine.start(
        ["run", "--outdir", results, os.path.join(out_dir, "streamflow.yml")])
    try:
        assert process.stdout is not None
        for line in process.stdout:
            log.append(line)
            scheduled = _SCHEDULED.search(line)
            if scheduled:
                batch_jobs.append(scheduled.group(1))
            if debug:
                sys.stderr.write(line)
            match = _COMPLETED.search(line)
            if match and match.group(1) not in done:
                done.append(match.group(1))
                if not quiet:
                    cells = _cells_of(workflow, match.group(1))
                    print(f"[{len(done)}/{total}] {match.group(1)} done{cells}", flush=True)
        status = process.wait()
    except KeyboardInterrupt:
        _stop(process)
        _cancel(batch_jobs)
        raise RunError("interrupted: the workflow was stopped; finished steps' results are "
                       f"in {results}") from None
    seconds = time.monotonic() - start
    if status != 0:
        raise RunError(_failure(log, status))
    notebook = os.path.join(results, executed_name(workflow))
    failure = _failure_in(notebook)
    if failure:
        raise RunError(f"{failure.removeprefix('nb2cwl: ')}\nthe executed notebook, up to that "
                       f"cell, is {notebook}")
    written_root = os.path.join(results, "written-files")
    written = sorted(
        os.path.relpath(os.path.join(d, f), written_root)
        for d, _, fs in os.walk(written_root) for f in fs
    )
    return RunSummary(results, notebook, seconds, done, written)


def _failure_in(notebook: str) -> str | None:
    try:
        with open(notebook, encoding="utf-8") as handle:
            metadata = json.load(handle).get("metadata", {})
    except (OSError, ValueError):
        return None
    failure = metadata.get("nb2cwl", {})
    return failure.get("error") or None if "failed_cell" in failure else None


def _cells_of(workflow: Workflow, name: str) -> str:
    for step in workflow.steps:
        if step.name == name:
            return " (cell " + ", ".join(str(c.index) for c in step.cells) + ")"
    return ""


def _stop(process: subprocess.Popen[str]) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def _cancel(jobs: list[str]) -> None:
    """Cancel the Slurm jobs this run submitted (StreamFlow does not when interrupted)."""
    scancel = shutil.which("scancel")
    if jobs and scancel:
        subprocess.run([scancel, *jobs], capture_output=True, check=False, timeout=60)


def _failure(log: list[str], status: int) -> str:
    text = "".join(log)
    found = re.search(r"nb2cwl: step \S+ failed at .*?(?=\n\S*\d{4}-\d\d-\d\d |\Z)", text,
                      re.S)
    if found:
        return found.group(0).strip().removeprefix("nb2cwl: ")
    transfer = re.search(r"nb2cwl: .*", text)
    if transfer:
        return transfer.group(0).strip().removeprefix("nb2cwl: ")
    tail = "".join(log[-15:]).strip()
    return f"StreamFlow exited with status {status}:\n{tail}"
