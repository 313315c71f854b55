"""A kept step is reused only when its files are what was kept: a value file cut short (a
crash, a full disk) or changed is found, the entry discarded with one line, the step run
again, and the run gives what Jupyter gives (through the CLI, as a user meets it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest


def _run(path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep
           + os.environ.get("PATH", "")}
    return subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(path), "-o", str(out),
                           "--granularity", "cell"], capture_output=True, text=True, env=env,
                          timeout=300)


def _printed(out: Path, run: int) -> list[str]:
    executed = nbformat.read(out / "runs" / str(run) / "kept.executed.ipynb", as_version=4)
    return ["".join(o.get("text", "") for o in c.outputs) for c in executed.cells]


@pytest.mark.streamflow
@pytest.mark.parametrize("damage", ["truncate", "change", "remove", "no_record"])
def test_a_damaged_cache_entry_is_discarded_and_its_step_runs_again(
        tmp_path: Path, damage: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = list(range(5))"),
                                         nbformat.v4.new_code_cell("print(sum(x))")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "kept.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "wf"
    assert _run(path, out).returncode == 0
    (entry,) = [e for e in (out / ".nb2cwl-cache").iterdir()
                if (e / "out" / "values" / "x.pkl").is_file()]
    value = entry / "out" / "values" / "x.pkl"
    if damage == "truncate":  # as a crash or a full disk leaves it
        value.write_bytes(b"")
    elif damage == "change":
        value.write_bytes(value.read_bytes()[:-1] + b"\x00")
    elif damage == "remove":
        value.unlink()
    else:  # an entry of an older nb2cwl, or a record cut short
        (entry / "complete").write_text("")
    again = _run(path, out)
    assert again.returncode == 0, again.stderr
    notes = [line for line in again.stderr.splitlines() if "were damaged" in line]
    assert len(notes) == 1 and "cell_0" in notes[0], again.stderr
    assert _printed(out, 2) == _printed(out, 1) == ["", "10\n"]
    third = _run(path, out)  # the entry kept again is whole: reused, and nothing said
    assert third.returncode == 0 and "damaged" not in third.stderr
    assert _printed(out, 3) == ["", "10\n"]
