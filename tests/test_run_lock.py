"""Concurrent runs into one output folder (issue 27, item 3): the second says which run holds
the folder and refuses, or waits with --wait; other folders never wait; a killed run leaves
no lock behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deployment_cases import write_notebook

from nb2cwl.run_lock import LOCK_FILE

pytestmark = pytest.mark.streamflow


def _start(notebook: Path, out: Path, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                             str(out), "--quiet", *options], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=notebook.parent)


def _holding(out: Path, process: subprocess.Popen[str], seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            holder = json.loads((out / LOCK_FILE).read_text() or "{}")
        except (OSError, ValueError):
            holder = {}
        if holder.get("pid") == process.pid:
            return holder
        assert process.poll() is None, process.communicate()
        time.sleep(0.1)
    raise AssertionError("the first run never took the folder")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nb2cwl", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_a_second_run_into_the_folder_refuses_naming_the_first(tmp_path: Path) -> None:
    slow = write_notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(8)\nprint('slept')")
    out = tmp_path / "wf"
    first = _start(slow, out)
    try:
        holder = _holding(out, first)
        assert holder["notebook"] == str(slow) and holder["command"] == "run"
        for args in (["run", str(slow), "-o", str(out)], [str(slow), "-o", str(out)]):
            second = _cli(*args, cwd=tmp_path)
            assert second.returncode == 1
            (line,) = second.stderr.strip().splitlines()
            assert re.fullmatch(
                rf"nb2cwl: error: an nb2cwl run of slow\.ipynb is in progress in {out} \(pid "
                rf"{first.pid}, started at \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\); wait for it "
                r"with --wait, or write into another folder \(-o\)", line), line
        # another folder does not wait for it
        quick = write_notebook(tmp_path / "quick.ipynb", "print(6 * 7)")
        other = _cli("run", str(quick), "-o", str(tmp_path / "other"), "--quiet", cwd=tmp_path)
        assert other.returncode == 0, other.stderr
        assert first.poll() is None  # ... and ran while the first was still going
    finally:
        first.wait(120)
    assert first.returncode == 0, first.stderr


def test_wait_runs_once_the_first_has_ended(tmp_path: Path) -> None:
    slow = write_notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(5)\nprint('slept')")
    out = tmp_path / "wf"
    first = _start(slow, out)
    _holding(out, first)
    second = _start(slow, out, "--wait")
    _, errors = second.communicate(timeout=300)
    assert second.returncode == 0, errors
    assert "waiting for it to end" in errors and f"(pid {first.pid}," in errors
    assert first.wait(60) == 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["1", "2"]


def test_a_killed_run_leaves_no_lock(tmp_path: Path) -> None:
    slow = write_notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(30)")
    out = tmp_path / "wf"
    first = _start(slow, out)
    _holding(out, first)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    quick = write_notebook(tmp_path / "slow.ipynb", "print('next')")  # the user edits, reruns
    done = _cli("run", str(quick), "-o", str(out), "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
