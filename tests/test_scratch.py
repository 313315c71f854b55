"""A run's scratch folders (nb2cwl/scratch.py): StreamFlow's working folders of the local
steps, the step server's and the events', all gone when the run ends; those of a killed run
removed by the next one. Through the CLI, with a private TMPDIR."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from deployment_cases import write_notebook

pytestmark = pytest.mark.streamflow


def _dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    return gone.pid


def test_a_run_leaves_no_scratch_and_removes_what_killed_runs_left(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    dead = _dead_pid()
    stale = [temporary / f"nb2cwl-work-{dead}-abc", temporary / f"nb2cwl-steps-{dead}-def"]
    for folder in stale:
        (folder / "job").mkdir(parents=True)
        (folder / "job" / "values.pkl").write_bytes(b"x" * 1000)
    kept = [temporary / f"nb2cwl-work-{os.getpid()}-live", temporary / "nb2cwl-mine"]
    for folder in kept:
        folder.mkdir()
    notebook = write_notebook(tmp_path / "two.ipynb", "x = 41\nwith open('a.txt', 'w') as f:\n"
                              "    f.write('a')", "print(x + 1)")
    env = dict(os.environ, TMPDIR=str(temporary),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    for _ in range(2):  # the second run reuses both steps
        done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                               str(tmp_path / "wf"), "--granularity", "cell"], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        left = sorted(p.relative_to(temporary).as_posix() for p in temporary.rglob("*"))
        # StreamFlow's own folder stays, empty: every step worked in the run's folder
        assert left == sorted(["streamflow", *(p.name for p in kept)]), left
    assert "reused" in done.stdout
    executed = tmp_path / "wf" / "runs" / "2" / "two.executed.ipynb"
    assert '"42\\n"' in executed.read_text()
