"""Stopping `nb2cwl run`: the signals it honours, and everything its StreamFlow process started.

A run is everything one StreamFlow process (the engine) starts, and all of it carries the run's
token, so that it can be found again however it was started:

- local processes: the variable NB2CWL_RUN=<token> in their environment, which every process
  StreamFlow starts inherits (a step that leaves StreamFlow's process group or session, or whose
  parent exits, keeps it). Besides, the engine's descendants are listed before it is signalled.
- Docker containers: the label nb2cwl.run=<token> (added by nb2cwl.engine to every docker
  deployment), so `docker ps --filter label=...` finds them, running or only created.
- Slurm jobs: the comment nb2cwl.run=<token> (added to StreamFlow's sbatch by nb2cwl.engine),
  shown by squeue, so a job whose id StreamFlow never logged is found too; and the ids it did log.

`stop_run` stops all of it in a bounded time: SIGINT to the engine's process group (StreamFlow
cancels its steps and undeploys), SIGTERM, then SIGKILL if it has not exited; then the Slurm jobs
are cancelled, the containers removed, and the local processes of the run get SIGTERM, then
SIGKILL. Every part is repeatable, so a second stop finds nothing left to do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RUN_ENV = "NB2CWL_RUN"
TAG = "nb2cwl.run"  # Docker label and Slurm comment: nb2cwl.run=<token>
GRACE = 3.0  # seconds StreamFlow gets after SIGINT: it cancels its steps and undeploys
TERM_WAIT = 2.0  # seconds a process gets after SIGTERM before SIGKILL
TOOL_TIMEOUT = 30  # seconds for one squeue, scancel or docker command


class Stopped(KeyboardInterrupt):
    """A signal asked `nb2cwl run` to stop (a KeyboardInterrupt: `except Exception` lets it by)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        """The signal's name, e.g. SIGTERM."""
        return signal.Signals(self.signum).name

    @property
    def status(self) -> int:
        """The shell's exit status for it: 128 + the signal number (130, 143, 129)."""
        return 128 + self.signum


class _Guard:
    """Signal handler state: the first signal raises Stopped; later ones only hurry the stop."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.raised = False
        self.shielded = 0

    def handle(self, signum: int, _frame: object) -> None:
        self.received.append(signum)
        if not self.raised and not self.shielded:
            self.raised = True
            raise Stopped(signum)


_guard: _Guard | None = None


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While active, SIGINT, SIGTERM and SIGHUP raise Stopped in the main thread, once.

    A signal that is ignored on entry (SIGHUP under nohup, SIGINT in a background job of a
    script) stays ignored. Outside the main thread this does nothing: Python delivers signals
    only there.
    """
    global _guard
    if threading.current_thread() is not threading.main_thread() or _guard is not None:
        yield
        return
    guard = _Guard()
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    _guard = guard
    try:
        for sig, handler in previous.items():
            if handler is not signal.SIG_IGN:
                signal.signal(sig, guard.handle)
        yield
    finally:
        _guard = None
        for sig, handler in previous.items():
            if handler is not signal.SIG_IGN and handler is not None:
                signal.signal(sig, handler)


@contextlib.contextmanager
def shield() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP until the block ends, so that it is never left half done.

    Under `stop_on_signals` a signal that arrived meanwhile then raises Stopped; otherwise it is
    delivered again to the handler that was there before (which may end the process).
    """
    guard = _guard
    if guard is not None:
        guard.shielded += 1
        try:
            yield
        finally:
            guard.shielded -= 1
        if not guard.shielded and not guard.raised and guard.received:
            guard.raised = True
            raise Stopped(guard.received[0])
        return
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not signal.SIG_IGN and handler is not None:
                signal.signal(sig, handler)
        if pending:
            signal.raise_signal(pending[0])


def signals_received() -> int:
    """How many stop signals arrived under `stop_on_signals` so far."""
    return len(_guard.received) if _guard is not None else 0


@dataclass
class RunHandle:
    """What finds everything one StreamFlow process started."""

    pid: int  # the engine: StreamFlow's process, leader of its own process group and session
    start: int | None  # its start time (see start_time)
    token: str
    kinds: frozenset[str] = frozenset()  # deployment types of the workflow: slurm, docker, ...
    jobs: list[str] = field(default_factory=list)  # Slurm job ids StreamFlow logged


def stop_run(run: RunHandle, exited: Callable[[float], bool],
             urgent: Callable[[], bool] = lambda: False) -> None:
    """Stop the engine and everything it started; return when nothing of the run is left.

    `exited(seconds)` waits up to `seconds` for the engine to exit and says whether it has.
    When `urgent()` turns true (another signal came), the waits are cut short.
    """
    before = _run_processes(run)  # listed now: once the engine is gone they are reparented
    # its process group, only while the engine runs: the pid of one that is gone may be reused
    if run.start is not None and _alive({run.pid: run.start}):
        _signal_group(run.pid, signal.SIGINT)
        if not _wait(exited, GRACE, urgent):
            _signal_group(run.pid, signal.SIGTERM)
            if not _wait(exited, TERM_WAIT, urgent):
                _signal_group(run.pid, signal.SIGKILL)
                exited(5)
    else:
        exited(0)  # reap it, if it is ours to reap
    # StreamFlow is gone: nothing new starts now. Stop what it left behind, jobs first (so that
    # Slurm records them as cancelled), then local processes, then once more what a submission
    # under way may have left.
    for attempt in range(2):
        if "slurm" in run.kinds:
            _cancel_jobs(run.token, run.jobs)
        if "docker" in run.kinds:
            _remove_containers(run.token)
        if attempt == 0:
            _stop_processes(run, before, urgent)


def _wait(exited: Callable[[float], bool], seconds: float, urgent: Callable[[], bool]) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if exited(0.05):
            return True
        if urgent():
            return False
    return exited(0)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


# --- local processes, found in /proc --------------------------------------------------------

@dataclass(frozen=True)
class _Process:
    ppid: int
    session: int
    start: int  # clock ticks after boot: tells a process from a later one with the same pid
    state: str


def _stat(pid: int) -> _Process | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()  # after the command name, which may hold spaces
    return _Process(int(fields[1]), int(fields[3]), int(fields[19]), fields[0].decode())


def start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks after boot), None when it is gone."""
    stat = _stat(pid)
    return None if stat is None else stat.start


def _run_processes(run: RunHandle) -> dict[int, int]:
    """pid -> start time of each live process of the run: the engine's descendants and the
    members of its session (a pid in use as a session id is never reused), and every process
    whose environment holds the run's token."""
    if not os.path.isdir("/proc"):
        return {}
    marker = f"{RUN_ENV}={run.token}".encode()
    table: dict[int, _Process] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat.state != "Z":
                table[int(entry.name)] = stat
    found = {pid for pid, stat in table.items() if stat.session == run.pid}
    root = table.get(run.pid)
    if root is not None and root.start == run.start:  # the engine itself, not a reused pid
        children: dict[int, list[int]] = {}
        for pid, stat in table.items():
            children.setdefault(stat.ppid, []).append(pid)
        todo, seen = [run.pid], set()
        while todo:
            pid = todo.pop()
            if pid not in seen:
                seen.add(pid)
                todo.extend(children.get(pid, ()))
        found |= seen
    for pid in table.keys() - found if run.token else ():
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    found.add(pid)
        except OSError:  # gone, or another user's
            continue
    found.discard(os.getpid())
    return {pid: table[pid].start for pid in found if pid in table}


def _alive(processes: dict[int, int]) -> dict[int, int]:
    """The ones still running: the same pid and start time (not reused), and not a zombie."""
    alive = {}
    for pid, start in processes.items():
        stat = _stat(pid)
        if stat is not None and stat.start == start and stat.state != "Z":
            alive[pid] = start
    return alive


def _stop_processes(run: RunHandle, before: dict[int, int], urgent: Callable[[], bool]) -> None:
    """SIGTERM to the run's local processes, SIGKILL to those left after TERM_WAIT seconds."""
    processes = _alive({**before, **_run_processes(run)})
    for sig, wait in ((signal.SIGTERM, TERM_WAIT), (signal.SIGKILL, 5.0)):
        for pid in processes:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        end = time.monotonic() + wait
        while processes and time.monotonic() < end and not (sig == signal.SIGTERM and urgent()):
            time.sleep(0.05)
            processes = _alive(processes)
        processes = _alive({**processes, **_run_processes(run)})
        if not processes:
            return


# --- Slurm jobs and Docker containers --------------------------------------------------------

def _tool(*command: str) -> str:
    """Run a batch-system or container client; its output, "" when it fails."""
    try:
        result = subprocess.run(list(command), capture_output=True, text=True, check=False,
                                timeout=TOOL_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout if result.returncode == 0 else ""


def _cancel_jobs(token: str, known: list[str]) -> None:
    """Cancel the run's Slurm jobs: those StreamFlow logged, and those squeue shows tagged."""
    scancel, squeue = shutil.which("scancel"), shutil.which("squeue")
    if scancel is None:
        return
    jobs = set(known)
    if squeue is not None:
        listing = _tool(squeue, "-h", "-u", str(os.getuid()), "-o", "%i|%k")
        for line in listing.splitlines():
            job, _, comment = line.partition("|")
            if comment.strip() == f"{TAG}={token}":
                jobs.add(job.strip())
    if jobs:
        _tool(scancel, *sorted(jobs))


def _remove_containers(token: str) -> None:
    """Kill and remove the run's Docker containers (running or only created)."""
    docker = shutil.which("docker")
    if docker is None:
        return
    for _ in range(10):  # rm -f fails on a container Docker is already removing: look again
        containers = _tool(docker, "ps", "-aq", "--filter", f"label={TAG}={token}").split()
        if not containers:
            return
        _tool(docker, "rm", "-f", *containers)
        time.sleep(0.1)


def deployment_kinds(config: str) -> frozenset[str]:
    """The deployment types a streamflow.yml uses (slurm, docker, ...); all when unreadable."""
    try:
        from ruamel.yaml import YAML

        with open(config, encoding="utf-8") as handle:
            deployments = YAML(typ="safe").load(handle).get("deployments") or {}
        return frozenset(str(d.get("type")) for d in deployments.values())
    except Exception:  # any doubt: look everywhere
        return frozenset({"slurm", "docker"})


def main(argv: list[str]) -> int:
    """`python -m nb2cwl.stopping PID TOKEN STREAMFLOW_YML`: stop the run of engine PID.

    The engine starts this when the nb2cwl process that should have stopped it is gone.
    """
    pid, token, config = int(argv[0]), argv[1], argv[2]
    start = start_time(pid)
    run = RunHandle(pid, start, token, deployment_kinds(config))

    def exited(seconds: float) -> bool:
        end = time.monotonic() + seconds
        while start is not None and _alive({pid: start}):
            if time.monotonic() >= end:
                return False
            time.sleep(0.05)
        return True

    stop_run(run, exited)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
