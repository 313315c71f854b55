"""A run that did not finish still leaves the executed notebook so far, as Jupyter's Run All
shows it (nb2cwl/partial_notebook.py). Stopped by a signal: tests/test_stopping.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest


@pytest.mark.streamflow
def test_a_step_killed_outside_its_code_leaves_the_notebook_up_to_its_cell(
        tmp_path: Path) -> None:
    cells = ["print('one')",
             "import os, signal\nprint('dying', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)",
             "print('three')"]
    path = tmp_path / "killed.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]),
                   path)
    out = tmp_path / "wf"
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(path), "-o", str(out),
                           "--granularity", "cell", "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    executed = out / "runs" / "1" / "killed.executed.ipynb"
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("nb2cwl: error: ") and "cell_1" in lines[0]
    assert lines[-1] == ("the executed notebook so far (the cells that finished, their "
                         f"outputs) is {executed}")
    shown = json.loads(executed.read_text())
    first, killed, after = shown["cells"]
    assert (first["execution_count"], "".join(first["outputs"][0]["text"])) == (1, "one\n")
    assert killed["execution_count"] == 2
    assert "".join(killed["outputs"][0]["text"]).startswith("dying")  # what it printed before
    assert killed["outputs"][-1]["ename"] == "StepFailed"
    # cell 2 needs nothing and ran beside cell 1; Jupyter would not have run it yet
    assert (after["execution_count"], after["outputs"]) == (None, [])
    assert "partial" in shown["metadata"]["nb2cwl"]
