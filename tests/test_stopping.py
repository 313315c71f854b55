"""A signal to the `nb2cwl run` process alone stops the whole run: nothing of it keeps running.

Each test starts `nb2cwl run` in a session of its own (the test's process group is never hit)
and signals that one process, as `timeout`, `kill PID` or a server cancelling a run do; a
terminal's Ctrl-C reaches no more than that either, since StreamFlow runs in its own session.
The step writes the pids of its processes, including ones that left its process group and
session, and the test lists every process under nb2cwl before signalling it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import default_stop_signals
from deployment_cases import tuned_profile, write_notebook
from engines.docker import DockerEngine
from engines.slurm import SlurmCluster

from nb2cwl import stopping
from nb2cwl.cli import main

pytestmark = pytest.mark.streamflow
SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]
STOPPED_WITHIN = 20  # seconds from the signal to nb2cwl's exit, everything stopped

# the step: its pid, a helper in a session of its own, and a daemon (forked twice, so that it
# is nobody's child in the run); then it waits while the gate file exists
SLOW_CELL = """\
import os, subprocess, sys, time
gate, pids = {gate!r}, {pids!r}
print('after', stamp)
if os.path.exists(gate):
    helper = subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(0.2)'],
                              start_new_session=True)
    subprocess.run([sys.executable, '-c', 'import os, sys, time\\nif os.fork(): os._exit(0)\\n'
                    'os.setsid()\\nopen(sys.argv[1] + ".daemon", "w").write(str(os.getpid()))\\n'
                    'while True: time.sleep(0.2)', pids])
    open(pids + '.helper', 'w').write(str(helper.pid))
    open(pids + '.job', 'w').write(str(os.environ.get('SLURM_JOB_ID')))
    open(pids + '.step', 'w').write(str(os.getpid()))
while os.path.exists(gate):
    time.sleep(0.2)
print('done')
"""


STAMP_CELL = "import time\nstamp = time.time()\nprint('stamp', stamp)"


_started: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _nothing_left_behind(tmp_path: Path) -> Iterator[None]:
    """A test that fails half way must not leave its run behind for the next tests."""
    yield
    while _started:
        process = _started.pop()
        if process.poll() is None:
            process.kill()  # nb2cwl's StreamFlow process then stops the run itself
            process.communicate(timeout=30)
    for name in ("step", "helper", "daemon"):
        pid = _read_pid(tmp_path / f"pid.{name}")
        with contextlib.suppress(OSError):
            if pid and stopping.RUN_ENV.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                os.kill(pid, signal.SIGKILL)


def _start(notebook: Path, out: Path, *options: str,
           env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = dict(env or os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    process = subprocess.Popen([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                                str(out), *options], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, preexec_fn=default_stop_signals)
    _started.append(process)
    return process


def _wait_for(check, process: subprocess.Popen[str], what: str, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while not check():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"nb2cwl exited ({process.returncode}) before {what}:\n{out}\n{err}")
        assert time.monotonic() < end, f"{what} did not happen within {seconds} s"
        time.sleep(0.1)


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    return int(text) if text.strip().isdigit() else None


def _start_time(pid: int) -> int | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2:].split()
    return None if fields[0] == b"Z" else int(fields[19])


def _tree(root: int) -> dict[int, int]:
    """pid -> start time of `root`'s descendants (not root), from /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                data = (entry / "stat").read_bytes()
            except OSError:
                continue
            parents[int(entry.name)] = int(data[data.rindex(b")") + 2:].split()[1])
    found, todo = {}, [root]
    while todo:
        parent = todo.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                start = _start_time(pid)
                if start is not None:
                    found[pid] = start
                    todo.append(pid)
    return found


def _survivors(processes: dict[int, int], grace: float = 2.0) -> list[str]:
    """The processes still running after `grace` seconds (a pid reused since does not count)."""
    end = time.monotonic() + grace
    while True:
        alive = [pid for pid, start in processes.items() if _start_time(pid) == start]
        if not alive or time.monotonic() > end:
            break
        time.sleep(0.1)
    return [Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
            for pid in alive if Path(f"/proc/{pid}").exists()]


def _assert_database_usable(out: Path) -> None:
    """StreamFlow's sqlite database: intact, and not locked by anyone."""
    database = out / ".streamflow" / "sqlite.db"
    assert database.exists()
    connection = sqlite3.connect(database, timeout=0)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        connection.execute("BEGIN IMMEDIATE")  # fails at once if a process still holds a lock
        connection.rollback()
    finally:
        connection.close()


def _stop(process: subprocess.Popen[str], sig: int, again: bool = False) -> str:
    """Signal nb2cwl alone; its stderr once it exited, within STOPPED_WITHIN seconds."""
    os.kill(process.pid, sig)
    if again:  # a second signal while it stops
        time.sleep(0.3)
        os.kill(process.pid, sig)
    try:
        _, err = process.communicate(timeout=STOPPED_WITHIN)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"nb2cwl still running {STOPPED_WITHIN} s after {signal.Signals(sig).name}")
    return err


def _slow_run(tmp_path: Path, *options: str,
              env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], Path, Path]:
    """nb2cwl run of the slow step; returns once the step and its helpers run."""
    gate, pids = tmp_path / "gate", tmp_path / "pid"
    gate.touch()
    notebook = write_notebook(tmp_path / "slow.ipynb", STAMP_CELL,
                              SLOW_CELL.format(gate=str(gate), pids=str(pids)))
    process = _start(notebook, tmp_path / "wf", *options, env=env)
    _wait_for(lambda: all(_read_pid(Path(f"{pids}.{n}")) for n in ("step", "helper", "daemon")),
              process, "the step started")
    return process, notebook, gate


def _run_processes(process: subprocess.Popen[str], tmp_path: Path) -> dict[int, int]:
    """Every process of the run: nb2cwl's descendants, and what the step says it started."""
    processes = _tree(process.pid)
    for name in ("step", "helper", "daemon"):
        pid = _read_pid(tmp_path / f"pid.{name}")
        if pid is not None and pid not in processes and pid != process.pid:
            start = _start_time(pid)
            if start is not None:
                processes[pid] = start
    return processes


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signal_to_nb2cwl_alone_stops_every_process(sig: int, tmp_path: Path) -> None:
    process, notebook, gate = _slow_run(tmp_path, "--granularity", "cell")
    processes = _run_processes(process, tmp_path)
    assert len(processes) >= 5  # StreamFlow, the step's shell and python, helper, daemon
    err = _stop(process, sig)
    assert process.returncode == 128 + sig, err
    errors = [line for line in err.splitlines() if line.startswith("nb2cwl: error:")]
    assert errors == [err.strip().splitlines()[-1]], err  # one line, the last
    assert errors[0].startswith(f"nb2cwl: error: interrupted by {signal.Signals(sig).name}:")
    assert not _survivors(processes), "processes of the stopped run still run"
    out = tmp_path / "wf"
    _assert_database_usable(out)
    assert (out / ".nb2cwl-manifest.json").exists() and (out / "workflow.cwl").exists()
    # what the stopped run had done: the executed notebook so far, as Jupyter shows it
    partial = out / "runs" / "1" / "slow.executed.ipynb"
    assert errors[0].endswith(f"the executed notebook so far (the cells that finished, their "
                              f"outputs) is {partial}")
    shown = json.loads(partial.read_text())
    assert shown["metadata"]["nb2cwl"] == {"partial": f"stopped by {signal.Signals(sig).name}"}
    first, running = shown["cells"]
    assert first["execution_count"] == 1 and "stamp" in "".join(first["outputs"][0]["text"])
    assert running["execution_count"] == 2
    assert "after" in "".join(running["outputs"][0]["text"])  # its output so far
    assert running["outputs"][-1]["ename"] == "KeyboardInterrupt"
    # the same output directory works at once, and the step that finished is reused
    gate.unlink()
    again = time.time()
    assert main(["run", str(notebook), "-o", str(out), "--quiet", "--granularity", "cell"]) == 0
    executed = json.loads((out / "runs" / "2" / "slow.executed.ipynb").read_text())
    printed = "".join(executed["cells"][0]["outputs"][0]["text"])
    assert float(printed.split()[1]) < again  # the first step's output, from the stopped run


def test_second_signal_while_stopping_still_stops_everything(tmp_path: Path) -> None:
    process, _, _ = _slow_run(tmp_path)
    processes = _run_processes(process, tmp_path)
    err = _stop(process, signal.SIGTERM, again=True)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert not _survivors(processes)
    _assert_database_usable(tmp_path / "wf")


def test_sigkill_to_nb2cwl_alone_leaves_nothing_running(tmp_path: Path) -> None:
    """nb2cwl cannot act on SIGKILL: StreamFlow's process notices and stops the run itself."""
    process, notebook, gate = _slow_run(tmp_path)
    processes = _run_processes(process, tmp_path)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=10)
    assert not _survivors(processes, grace=STOPPED_WITHIN)
    gate.unlink()
    assert main(["run", str(notebook), "-o", str(tmp_path / "wf"), "--quiet"]) == 0


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signal_while_compiling_stops_the_started_engine(
        sig: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import nb2cwl.api
    import nb2cwl.launch

    engines = []

    class Recorded(nb2cwl.launch.Engine):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            engines.append(self)

    def compiling(*_args: object, **_kwargs: object) -> None:
        os.kill(os.getpid(), sig)  # arrives while the notebook compiles
        time.sleep(30)
        pytest.fail("the signal did not interrupt compiling")

    monkeypatch.setattr(nb2cwl.launch, "Engine", Recorded)
    monkeypatch.setattr(nb2cwl.api, "compile_for_directory", compiling)
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 1")
    outer = signal.signal(sig, signal.SIG_DFL)  # as a terminal gives it (not nohup's SIG_IGN)
    try:
        handler = signal.getsignal(sig)
        status = main(["run", str(notebook), "-o", str(tmp_path / "wf")])
    finally:
        after = signal.signal(sig, outer)
    err = capsys.readouterr().err
    assert status == 128 + sig and "while compiling" in err
    (engine,) = engines
    assert engine.process.poll() is not None, "the pre-started StreamFlow outlived the stop"
    assert after == handler  # the handler is given back


def test_signal_while_writing_waits_until_the_workflow_is_complete(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`nb2cwl compile` writes in its own process; `nb2cwl run` has its StreamFlow process write
    (nb2cwl.engine): in both, a signal waits until the folder is complete."""
    import nb2cwl.backends.writer
    from nb2cwl.api import compile_for_directory
    from nb2cwl.backends.write_request import write_saved
    from nb2cwl.stopping import shield

    write = nb2cwl.backends.writer.write_workflow

    def interrupted_write(*args: object, **kwargs: object) -> list[str]:
        os.kill(os.getpid(), signal.SIGTERM)
        return write(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(nb2cwl.backends.writer, "write_workflow", interrupted_write)
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 1", "print(x)")
    received: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, _frame: received.append(signum))
    try:
        out = tmp_path / "wf"
        assert main(["compile", str(notebook), "-o", str(out)]) == 0
        assert received == [signal.SIGTERM]  # given on once the folder was complete
        listed = json.loads((out / ".nb2cwl-manifest.json").read_text())["files"]
        assert "streamflow.yml" in listed and all((out / rel).is_file() for rel in listed)

        ran = tmp_path / "ran"  # the StreamFlow process's side, as nb2cwl.engine does it
        saved = compile_for_directory(str(notebook), str(ran)).save(str(tmp_path))
        with shield():
            assert write_saved(saved) is None
            assert received == [signal.SIGTERM]  # the second one held until complete
        assert received == [signal.SIGTERM] * 2
    finally:
        signal.signal(signal.SIGTERM, before)
    listed = json.loads((ran / ".nb2cwl-manifest.json").read_text())["files"]
    assert "streamflow.yml" in listed and all((ran / rel).is_file() for rel in listed)
    capsys.readouterr()


def _sleeper(env: dict[str, str] | None = None, session: bool = True) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.2)"],
                            env=env, start_new_session=session)


def test_stop_finds_processes_by_the_run_token_and_spares_others(tmp_path: Path) -> None:
    engine = _sleeper()  # stands for StreamFlow: leader of its own session
    token = "t0k3n"
    ours = _sleeper(dict(os.environ, **{stopping.RUN_ENV: token}))
    other_run = _sleeper(dict(os.environ, **{stopping.RUN_ENV: "another"}))
    bystander = _sleeper()
    try:
        run = stopping.RunHandle(engine.pid, stopping.start_time(engine.pid), token)

        def exited(seconds: float) -> bool:
            try:
                engine.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                return False
            return True

        stopping.stop_run(run, exited)
        assert engine.poll() is not None and ours.wait(timeout=5) is not None
        assert other_run.poll() is None and bystander.poll() is None
    finally:
        for process in (engine, ours, other_run, bystander):
            process.kill()
            process.wait()


# --- Slurm: the jobs of the run are cancelled ------------------------------------------------

def _slurm_profile(tmp_path: Path) -> Path:
    return tuned_profile("slurm", tmp_path / "slurm.yml", pollingInterval=1,
                         maxConcurrentJobs=4)


def _job_state(cluster: SlurmCluster, job: str) -> str:
    """The job's state once it has settled: a cancelled job that was running is COMPLETING
    for a moment, while slurmd ends its processes."""
    deadline = time.monotonic() + 30
    while True:
        out = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True,
                             env=cluster.env, check=False).stdout
        state = next((p.split("=", 1)[1] for p in out.split() if p.startswith("JobState=")),
                     "")
        if state != "COMPLETING" or time.monotonic() > deadline:
            return state
        time.sleep(0.2)


@pytest.mark.slurm
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signal_cancels_the_slurm_job(sig: int, slurm_cluster: SlurmCluster,
                                      tmp_path: Path) -> None:
    process, notebook, gate = _slow_run(
        tmp_path, "--deployment", "slurm", "--deployment-file", str(_slurm_profile(tmp_path)),
        "--no-cache", env=slurm_cluster.env)
    job = (tmp_path / "pid.job").read_text()  # the step's own SLURM_JOB_ID
    assert job in slurm_cluster.queued_jobs()
    comment = subprocess.run(["squeue", "-h", "-j", job, "-o", "%k"], capture_output=True,
                             text=True, env=slurm_cluster.env, check=False).stdout.strip()
    processes = _run_processes(process, tmp_path)
    err = _stop(process, sig)
    assert process.returncode == 128 + sig, err
    assert job not in slurm_cluster.queued_jobs(), "the Slurm job outlived the stopped run"
    assert _job_state(slurm_cluster, job) == "CANCELLED"
    assert not _survivors(processes)
    _assert_database_usable(tmp_path / "wf")
    gate.unlink()  # and the output directory works at once (the run itself is local here)
    assert main(["run", str(notebook), "-o", str(tmp_path / "wf"), "--quiet"]) == 0
    assert comment.startswith(f"{stopping.TAG}=")  # how a job StreamFlow never logged is found


@pytest.mark.slurm
def test_a_job_streamflow_never_logged_is_cancelled_and_others_are_not(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """A job submitted just before the signal: found by its comment, not by StreamFlow's log."""
    def submit(*options: str) -> str:
        return subprocess.run(["sbatch", "--parsable", *options, "--wrap", "sleep 300"],
                              capture_output=True, text=True, env=slurm_cluster.env,
                              cwd=tmp_path, check=True).stdout.strip()

    token = "late0submission"
    ours = submit(f"--comment={stopping.TAG}={token}")
    other = submit(f"--comment={stopping.TAG}=another")
    try:
        engine = _sleeper()
        run = stopping.RunHandle(engine.pid, stopping.start_time(engine.pid), token,
                                 frozenset({"slurm"}))
        stopping.stop_run(run, lambda s: engine.poll() is not None or _waited(engine, s))
        assert _job_state(slurm_cluster, ours) == "CANCELLED"
        assert _job_state(slurm_cluster, other) in ("PENDING", "RUNNING")
    finally:
        subprocess.run(["scancel", ours, other], env=slurm_cluster.env, check=False)


def _waited(process: subprocess.Popen[bytes], seconds: float) -> bool:
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


# --- Docker: the containers of the run are removed -------------------------------------------

@pytest.mark.docker
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signal_removes_the_container(sig: int, docker_engine: DockerEngine,
                                      tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "boxed.ipynb", "x = 1",
                              "import time\nopen('/tmp/step-running', 'w').close()\n"
                              "while True:\n    time.sleep(0.2)")
    process = _start(notebook, tmp_path / "wf", "--deployment", "docker", "--image",
                     docker_engine.image, "--no-cache")

    def step_running() -> bool:
        return any(_docker(docker_engine, "exec", c, "test", "-e", "/tmp/step-running")
                   .returncode == 0 for c in docker_engine.docker("ps", "-q").stdout.split())

    _wait_for(step_running, process, "the step started in its container")
    (container,) = docker_engine.docker("ps", "-q").stdout.split()
    labels = docker_engine.docker("inspect", "-f", "{{json .Config.Labels}}", container).stdout
    processes = _tree(process.pid)
    err = _stop(process, sig)
    assert process.returncode == 128 + sig, err
    assert docker_engine.docker("ps", "-aq").stdout.split() == [], "a container outlived the run"
    assert not _survivors(processes)
    _assert_database_usable(tmp_path / "wf")
    # the same output directory works at once, for the notebook edited (as a user reruns it)
    quick = write_notebook(tmp_path / "boxed.ipynb", "print('again')")
    assert main(["run", str(quick), "-o", str(tmp_path / "wf"), "--quiet"]) == 0
    assert f'"{stopping.TAG}"' in labels  # how the stop finds the run's containers


@pytest.mark.docker
def test_only_the_runs_containers_are_removed(docker_engine: DockerEngine) -> None:
    token = "late0container"
    ours = docker_engine.docker("create", "--label", f"{stopping.TAG}={token}",
                                docker_engine.image, "sleep", "300").stdout.strip()
    other = docker_engine.docker("create", docker_engine.image, "sleep", "300").stdout.strip()
    try:
        engine = _sleeper()
        run = stopping.RunHandle(engine.pid, stopping.start_time(engine.pid), token,
                                 frozenset({"docker"}))
        stopping.stop_run(run, lambda s: _waited(engine, s))
        remaining = docker_engine.docker("ps", "-aq", "--no-trunc").stdout.split()
        assert ours not in remaining and other in remaining
    finally:
        _docker(docker_engine, "rm", "-f", ours, other)


def _docker(engine: DockerEngine, *args: str) -> subprocess.CompletedProcess[str]:
    """The docker client on the test engine, whatever its exit status."""
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False,
                          env=dict(os.environ, DOCKER_HOST=engine.host), timeout=60)
