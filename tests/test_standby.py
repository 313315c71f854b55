"""Runs from long-lived processes (the Jupyter server, a kernel's magics) start from a standby:
an `nb2cwl run` process with nb2cwl imported and StreamFlow started before the run is asked for
(issue 24, item 9). It gives the same run as a cold start, another is made ready once the run
has ended, and closing the store leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import nbformat
import pytest

from nb2cwl.integrations.runs import RunRequest, RunStore

pytestmark = pytest.mark.streamflow

SOURCES = ["import math\nitems = list(range(5))",
           "print([math.factorial(i) for i in items])"]


def _notebook(path: Path) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(s, id=f"c{n}") for n, s in enumerate(SOURCES)]
    nbformat.write(notebook, str(path))
    return path


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def _until(condition, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def test_a_run_becomes_the_standby_and_another_is_made_ready(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "nb.ipynb")
    store = RunStore(str(tmp_path / "runs"))
    try:
        store.prepare()
        standby = store.standby
        assert standby is not None
        assert _until(lambda: len(_children(standby.pid)) == 2)  # engine and step server
        run = store.start(RunRequest(str(notebook), "nb.ipynb"))
        assert run.meta["standby"] is True and run.meta["pid"] == standby.pid
        assert store.wait(run, 180) == "done", Path(run.log_path).read_text()[-3000:]
        executed = json.loads(Path(run.executed_notebook()).read_text())
        assert executed["cells"][1]["outputs"][0]["text"] == "[1, 1, 2, 6, 24]\n"
        assert "compiled nb.ipynb" in Path(run.log_path).read_text()  # its output, in the log
        assert _until(lambda: store.standby is not None and store.standby.poll() is None)
        assert store.standby.pid != standby.pid  # the next one, for the next run
        again = store.start(RunRequest(str(notebook), "nb.ipynb", mode="changed"))
        assert again.meta["standby"] is True
        assert store.wait(again, 180) == "done"
    finally:
        store.close()


def _step_server(pid: int) -> int:
    (server,) = [child for child in _children(pid)
                 if b"forkserver" in Path(f"/proc/{child}/cmdline").read_bytes()]
    return server


def test_the_standby_runs_the_steps_from_its_warm_step_server(tmp_path: Path) -> None:
    """The step server the standby started before the run (the runtime and IPython imported)
    is given the notebook's libraries and forks the run's steps: a cell's parent is that
    server."""
    notebook = tmp_path / "nb.ipynb"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import os\nimport numpy as np"),
        nbformat.v4.new_code_cell("import sys\n"
                                  "print(os.getppid(), np.arange(3).sum(), sys.stdin.closed)")])
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                 "display_name": "Python 3"}
    nbformat.write(nb, str(notebook))
    store = RunStore(str(tmp_path / "runs"))
    try:
        store.prepare()
        standby = store.standby
        assert standby is not None and _until(lambda: len(_children(standby.pid)) == 2)
        server = _step_server(standby.pid)
        run = store.start(RunRequest(str(notebook), "nb.ipynb", granularity="cell"))
        assert store.wait(run, 180) == "done", Path(run.log_path).read_text()[-3000:]
        cells = json.loads(Path(run.executed_notebook()).read_text())["cells"]
        assert cells[1]["outputs"][0]["text"] == f"{server} 3 False\n"
        assert _until(lambda: not _alive(server), 30)  # stopped with its run
    finally:
        store.close()


def test_closing_the_store_leaves_no_process(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs"))
    store.prepare()
    standby = store.standby
    assert standby is not None and _until(lambda: len(_children(standby.pid)) == 2)
    children = _children(standby.pid)
    store.close()
    assert standby.poll() is not None
    assert _until(lambda: not any(_alive(child) for child in children), 30)
    store.prepare()  # a closed store makes no other
    assert store.standby is None


def test_a_killed_standby_takes_its_engine_and_step_server_along(tmp_path: Path) -> None:
    store = RunStore(str(tmp_path / "runs"))
    try:
        store.prepare()
        standby = store.standby
        assert standby is not None and _until(lambda: len(_children(standby.pid)) == 2)
        children = _children(standby.pid)  # its engine and its step server
        os.kill(standby.pid, signal.SIGKILL)
        standby.wait()
        assert _until(lambda: not any(_alive(child) for child in children), 30)
        notebook = _notebook(tmp_path / "nb.ipynb")  # the next run starts cold instead
        run = store.start(RunRequest(str(notebook), "nb.ipynb"))
        assert "standby" not in run.meta
        assert store.wait(run, 180) == "done"
    finally:
        store.close()


def test_a_warm_step_server_starts_anew_when_packages_changed_meanwhile() -> None:
    """A package installed (or removed) after the standby's step server started: given its
    libraries, the server starts again (exec), so the steps see the site as a new process
    would (.pth files are read only at a start)."""
    import site
    import sys

    from nb2cwl.step_server import StepServer

    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    server = StepServer()
    server.start_warm("python3", env)
    folder = site.getsitepackages()[0]  # the steps' interpreter is this one
    before = os.stat(folder)
    try:
        assert server.process is not None
        pid = server.process.pid
        assert _until(lambda: os.path.exists(server.path))
        time.sleep(0.5)  # its site folders are noted right after it listens
        os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        server.start("python3", env, ("json",))

        def arguments() -> list[bytes]:
            return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")

        # (in the middle of the exec, for a moment, its command line reads empty)
        assert _until(lambda: b"json" in arguments(), 30), arguments()
        assert b"--preload-later" not in arguments() and _alive(pid)
        assert _until(lambda: os.path.exists(server.path), 30)  # listening again
    finally:
        os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
        server.stop()
