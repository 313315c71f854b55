"""Run a compiled workflow with StreamFlow: progress while it runs, a summary at the end."""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nb2cwl.backends.naming import (
    EXECUTED_SUFFIX,
    HASH_SEED,
    executed_name,
)
from nb2cwl.backends.write_request import FAILED as WRITE_FAILED
from nb2cwl.engine import NO_KUBERNETES_ENV, PARENT_ENV
from nb2cwl.errors import BackendError, RunError, RunInterrupted
from nb2cwl.ir.model import Workflow
from nb2cwl.run_display import RunDisplay, live_display_wanted
from nb2cwl.run_events import RunEvents
from nb2cwl.run_outcome import (
    disk_full_message,
    failure_in,
    failure_message,
    notebook_metadata,
    partial_notebook,
)
from nb2cwl.runtime.cache import ENV as CACHE_ENV
from nb2cwl.runtime.cache import REFRESH_ENV as CACHE_REFRESH_ENV
from nb2cwl.runtime.cache import RERUN_CELLS_ENV
from nb2cwl.runtime.forkclient import SERVER_ENV
from nb2cwl.step_cache import CACHE_DIR
from nb2cwl.stopping import (
    RUN_ENV,
    RunHandle,
    Stopped,
    deployment_kinds,
    shield,
    signals_received,
    start_time,
    stop_run,
)

if TYPE_CHECKING:
    from nb2cwl.backends.write_request import WriteRequest
    from nb2cwl.step_server import StepServer

_DISK_FULL = re.compile(r"No space left on device|database or disk is full|Disk quota exceeded")
_SCHEDULED = re.compile(r"Scheduled job \S+ with job id (\S+)")
_COMPLETED = re.compile(r"COMPLETED Step /(\S+)")
_FAILED = re.compile(r"FAILED (?:Step|Job) /(\S+)")
_RETRIED = re.compile(r"FAILED Job /(\S+?)/")


@dataclass
class RunSummary:
    """What a finished run produced."""

    results_dir: str
    executed_notebook: str
    seconds: float
    steps_done: list[str] = field(default_factory=list)
    written_files: list[str] = field(default_factory=list)
    executed_notebooks: list[str] = field(default_factory=list)  # one per sweep combination


def next_results_dir(out_dir: str) -> str:
    """A new runs/<n> folder under the output directory: earlier results are never replaced."""
    runs = Path(out_dir) / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    taken = [int(p.name) for p in runs.iterdir() if p.name.isdigit()]
    return str(runs / str(max(taken, default=0) + 1))


# nb2cwl.engine.serve: imports StreamFlow, then waits for its command line on stdin.
# Not `python -m streamflow`: that entry point drops the exit status (0.2.0rc3).
_BOOTSTRAP = "from nb2cwl.engine import serve\nserve()\n"


class Engine:
    """A StreamFlow process started early, so its start-up overlaps with compiling.

    It runs in its own session, and everything it starts carries a token that finds it again:
    `stop` stops all of it (see nb2cwl.stopping). Should nb2cwl die without calling `stop`,
    the engine stops the run itself (nb2cwl.engine).
    """

    def __init__(self, cache_dir: str | None = None, step_server: StepServer | None = None,
                 kubernetes: bool = True, refresh: bool = False,
                 extra_env: dict[str, str] | None = None,
                 rerun_cells: tuple[str, ...] = (), warm: bool = False) -> None:
        """`warm`: started before its run is known (nb2cwl.standby); `for_run` gives it the
        run's settings, which the other arguments give here otherwise."""
        token = secrets.token_hex(8)
        env = dict(os.environ, **{RUN_ENV: token, PARENT_ENV: str(os.getpid())},
                   PYTHONHASHSEED=HASH_SEED)  # as the steps (and so the step server) hash
        if not kubernetes or warm:  # StreamFlow loads its Kubernetes client only if a run
            env[NO_KUBERNETES_ENV] = "1"  # uses it (nb2cwl.engine)
        # steps run `python3` from PATH: make it this environment's interpreter
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        self._run_env: dict[str, str] = {}
        if not warm:
            env.update(_run_env(cache_dir, step_server, refresh, extra_env, rerun_cells))
        self.env = env
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace", env=env,
            start_new_session=True)
        self.run = RunHandle(self.process.pid, start_time(self.process.pid), token)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._ended = False  # the reader saw the end of StreamFlow's output
        self._stopped = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """StreamFlow's log, line by line, to the queue; the Slurm jobs it submits, to the run."""
        assert self.process.stdout is not None
        try:
            for line in self.process.stdout:
                scheduled = _SCHEDULED.search(line)
                if scheduled:
                    self.run.jobs.append(scheduled.group(1))
                self._lines.put(line)
        finally:
            self._lines.put(None)

    def for_run(self, cache_dir: str | None, step_server: StepServer | None, refresh: bool,
                extra_env: dict[str, str] | None, rerun_cells: tuple[str, ...]) -> Engine:
        """A warm engine, made this run's: its settings, sent with the command line."""
        self._run_env = _run_env(cache_dir, step_server, refresh, extra_env, rerun_cells)
        self.env = {**self.env, **self._run_env}
        return self

    def start(self, arguments: list[str], kinds: frozenset[str] = frozenset(),
              write: str | None = None) -> None:
        """Hand StreamFlow its command line; it starts running the workflow on `kinds`,
        after writing the compiled workflow kept at `write` (backends/write_request.py)."""
        assert self.process.stdin is not None
        self.run.kinds = kinds
        request: list[str] | dict[str, object] = arguments
        if self._run_env or write:
            request = {"argv": arguments, "env": self._run_env, "write": write}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.close()

    def lines(self) -> list[str]:
        """The output lines StreamFlow wrote since the last call (without waiting)."""
        found: list[str] = []
        while not self._ended:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                self._ended = True
            else:
                found.append(line)
        return found

    def finished(self) -> bool:
        """True once StreamFlow exited and every line it wrote was read."""
        return self._ended and self.process.poll() is not None

    def stop(self) -> None:
        """Stop StreamFlow and everything it started, in a bounded time; do it once.

        Signals that arrive meanwhile cut the waits short instead of interrupting the stop.
        """
        if self._stopped:
            return
        with shield():
            first = signals_received()
            stop_run(self.run, self._exited, lambda: signals_received() > first)
            self._stopped = True

    def cancel(self) -> None:
        """Compilation failed: stop the waiting process."""
        self.stop()

    def _exited(self, seconds: float) -> bool:
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True


def _run_env(cache_dir: str | None, step_server: StepServer | None, refresh: bool,
             extra_env: dict[str, str] | None, rerun_cells: tuple[str, ...]) -> dict[str, str]:
    """The environment variables of one run, for StreamFlow and every step it starts."""
    env = dict(extra_env or {})
    if step_server is not None:  # local steps start from its warm children
        env[SERVER_ENV] = step_server.path
    if cache_dir:  # steps reuse outputs of earlier runs whose code and inputs match
        env[CACHE_ENV] = os.path.abspath(cache_dir)
        if refresh:  # ... or run again, and keep their outputs for the next run
            env[CACHE_REFRESH_ENV] = "1"
        if rerun_cells:  # the steps of these cells run again (--cells)
            env[RERUN_CELLS_ENV] = ",".join(rerun_cells)
    return env


#: An engine started before its run was asked for (nb2cwl.standby), for the next run here.
_warm: list[Engine] = []


def keep_warm(engine: Engine) -> None:
    """`engine` (started with warm=True) serves this process's next run."""
    _warm[:] = [engine]


def take_engine(cache_dir: str | None, step_server: StepServer | None, kubernetes: bool,
                refresh: bool, extra_env: dict[str, str] | None,
                rerun_cells: tuple[str, ...]) -> Engine:
    """The warm engine, made this run's, if one waits and is alive; else a new one."""
    while _warm:
        engine = _warm.pop()
        if engine.process.poll() is None:
            return engine.for_run(cache_dir, step_server, refresh, extra_env, rerun_cells)
    return Engine(cache_dir, step_server, kubernetes, refresh, extra_env, rerun_cells)


_KUBERNETES_WORDS = re.compile(rb"\b(helm[34]?|kubernetes)\b", re.IGNORECASE)


def may_use_kubernetes(deployments: list[str | None], files: list[str | None]) -> bool:
    """Whether a run may bind a step to Kubernetes or Helm: a deployment named so, or a word
    naming them in the deployment file or the notebook (its own deployments). In doubt, yes."""
    if any(name and _KUBERNETES_WORDS.fullmatch(name.encode()) for name in deployments):
        return True
    for path in files:
        if not path:
            continue
        try:
            with open(path, "rb") as handle:
                if _KUBERNETES_WORDS.search(handle.read()):
                    return True
        except OSError:
            return True
    return False


def run_workflow(workflow: Workflow, out_dir: str, quiet: bool = False,
                 debug: bool = False, engine: Engine | None = None,
                 cache: bool = True, configs: list[str] | None = None,
                 new_engine: Callable[[], Engine] | None = None,
                 at_once: int = 0, events: RunEvents | None = None,
                 retries: int = 0, compiled: WriteRequest | None = None,
                 scratch: str | None = None) -> RunSummary:
    """Run `out_dir/streamflow.yml`, or the StreamFlow configs `configs` (a sweep: one per
    combination, each its own StreamFlow process from `new_engine`, `at_once` of them at a
    time, 0: all), into one new runs/<n>; raise RunError with the failing cell when a step
    fails.

    A signal (Stopped) or KeyboardInterrupt stops every StreamFlow process and everything it
    started, then raises RunInterrupted; so does any other exception, which is then raised
    again. `events` gets the run's progress (steps queued, running, done; cells' outputs),
    and tells each step's outcome (reused, failed, ...) in the lines printed as steps end.
    `retries`: the workflow's StreamFlow retries a job whose process died that many times
    (--retries); a job's failure is then told as a retry, not as the step's end.
    `compiled`: the workflow is not written yet; StreamFlow's process writes it first (kept
    in the private folder `scratch`), and a failure to write raises BackendError.
    """
    if compiled is not None and scratch is None:
        raise ValueError("a workflow to write needs the run's private folder (scratch)")
    configs = configs or [os.path.join(out_dir, "streamflow.yml")]
    total = len(workflow.steps) + 1
    retrying: set[str] = set()  # the jobs StreamFlow's failure manager runs again
    done: list[str] = []
    logs: dict[int, list[str]] = {}
    engines: list[Engine] = []
    start = time.monotonic()
    display = RunDisplay(total, live_display_wanted(quiet) and len(configs) == 1)
    results = None
    try:
        results = next_results_dir(out_dir)
        if events is not None:
            events.begin(workflow, results)
        pending = list(enumerate(configs))
        running: dict[int, Engine] = {}
        statuses: dict[int, int] = {}
        while pending or running:
            while pending and (not at_once or len(running) < at_once):
                number, config = pending.pop(0)
                if engine is None or engine in engines:
                    engine = (new_engine or (lambda: Engine(
                        os.path.join(out_dir, CACHE_DIR) if cache else None)))()
                engines.append(engine)
                if compiled is not None and scratch is not None:  # the first engine writes it
                    engine.start(["run", "--outdir", results, config],
                                 compiled.deployment_kinds(), compiled.save(scratch))
                    compiled = None
                else:
                    engine.start(["run", "--outdir", results, config], deployment_kinds(config))
                running[number] = engine
                logs[number] = []
            for number, current in list(running.items()):
                for line in current.lines():
                    logs[number].append(line)
                    if debug:
                        sys.stderr.write(line)
                    if line.startswith(WRITE_FAILED):  # nothing ran: a compile error
                        raise BackendError(f"cannot write the compiled workflow into "
                                           f"{out_dir}: {line[len(WRITE_FAILED):].strip()}")
                    if _DISK_FULL.search(line):  # StreamFlow would wait on, forever
                        raise RunError(disk_full_message(line, out_dir, results))
                    again = _RETRIED.search(line) if retries else None
                    if again and "Execution aborted" not in line:  # StreamFlow runs it again
                        if again.group(1) not in retrying and not quiet:
                            display.line(f"      {again.group(1)} failed; StreamFlow runs it "
                                         f"again (--retries {retries})")
                        retrying.add(again.group(1))
                        continue
                    if events is not None:
                        _tell_events(events, line)
                    match = _COMPLETED.search(line) or _FAILED.search(line)
                    name = match.group(1).split("/")[0] if match else ""
                    if match and len(configs) == 1 and name not in done:
                        done.append(name)
                        if not quiet:
                            word = ("failed" if _FAILED.search(line) else
                                    events.outcome(name) if events is not None else "done")
                            display.line(f"[{len(done)}/{total}] {name} {word}"
                                         f"{_cells_of(workflow, name)}")
                if current.finished():
                    statuses[number] = current.process.wait()
                    del running[number]
                    if len(configs) > 1 and not quiet:
                        print(f"[{len(statuses)}/{len(configs)}] combination {number + 1} "
                              f"{'done' if statuses[number] == 0 else 'failed'}", flush=True)
            if events is not None:
                events.poll()
                display.update(len(done), events.running)
            if running:
                time.sleep(0.02)
    except BaseException as stop:
        display.close()
        for started in engines or ([engine] if engine is not None else []):
            started.stop()  # whatever went wrong here, StreamFlow must not run on without us
        if not isinstance(stop, KeyboardInterrupt):
            raise
        runs = os.path.join(out_dir, "runs")
        kept = (f"the next run reuses the steps that finished (earlier runs in {runs} are "
                "unchanged)" if cache else f"earlier runs in {runs} are unchanged")
        from nb2cwl.partial_notebook import interrupted_error

        partial = partial_notebook(workflow, out_dir, results, events, f"stopped by "
                           f"{_signal_name(stop)}", interrupted_error(_signal_name(stop)))
        shown = (f"; the executed notebook so far (the cells that finished, their outputs) is "
                 f"{partial}" if partial else "")
        raise RunInterrupted(f"interrupted by {_signal_name(stop)}: stopped the workflow and every "
                             f"step, job and container it started; {kept}{shown}",
                             _signum(stop)) from None
    display.close()
    seconds = time.monotonic() - start
    for number, status in sorted(statuses.items()):
        if status != 0:
            for started in engines:
                started.stop()  # a failed run leaves no job, container or process behind
            failure = failure_message(logs[number], status)
            partial = None
            if len(configs) == 1:  # the assembler ran without the failed step's cells
                from nb2cwl.partial_notebook import step_failed_error

                partial = partial_notebook(workflow, out_dir, results, events, failure,
                                           step_failed_error(failure))
            raise RunError(failure + (f"\nthe executed notebook so far (the cells that "
                                      f"finished, their outputs) is {partial}"
                                      if partial else ""))
    notebooks = sorted(str(p) for p in Path(results).glob(f"*{EXECUTED_SUFFIX}"))
    notebook = os.path.join(results, executed_name(workflow))
    for executed in notebooks:
        for note in notebook_metadata(executed).get("notes", []):  # not carried exactly
            print(f"nb2cwl: note: {note}", file=sys.stderr)
        failure = failure_in(executed)
        if failure:
            raise RunError(f"{failure.removeprefix('nb2cwl: ')}\nthe executed notebook, up to "
                           f"that cell, is {executed}")
    written_root = os.path.join(results, "written-files")
    written = sorted(
        os.path.relpath(os.path.join(d, f), written_root)
        for d, _, fs in os.walk(written_root) for f in fs
    )
    return RunSummary(results, notebook if notebook in notebooks else notebooks[0], seconds,
                      done, written, notebooks)




def _tell_events(events: RunEvents, line: str) -> None:
    """A step StreamFlow saw complete or fail (for steps that could not tell themselves)."""
    for pattern, status in ((_COMPLETED, "done"), (_FAILED, "failed")):
        match = pattern.search(line)
        if match:
            events.streamflow_line(match.group(1).split("/")[0], status)


def _signum(stop: KeyboardInterrupt) -> int:
    return stop.signum if isinstance(stop, Stopped) else int(signal.SIGINT)


def _signal_name(stop: KeyboardInterrupt) -> str:
    return signal.Signals(_signum(stop)).name








def _cells_of(workflow: Workflow, name: str) -> str:
    for step in workflow.steps:
        if step.name == name:
            return f" ({workflow.shown_cells(c.index for c in step.cells)})"
    return ""
