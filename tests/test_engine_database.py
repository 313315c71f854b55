"""A run killed while StreamFlow was making its database leaves an incomplete file; the next
run puts it aside, says so, and completes, reusing the steps that had finished (issue 27,
item 4)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from deployment_cases import write_notebook

from nb2cwl.engine_database import DATABASE, repair_database

pytestmark = pytest.mark.streamflow


def _run(notebook: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(out),
                           "--events", str(out.parent / "events.jsonl")],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("damage", ["empty", "half-made", "not a database"])
def test_an_incomplete_database_is_put_aside_and_the_run_completes(damage: str,
                                                                   tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 20", "print(x + 22)")
    out = tmp_path / "wf"
    assert _run(notebook, out).returncode == 0
    database = out / DATABASE
    database.unlink()
    if damage == "half-made":  # some of StreamFlow's tables, as a kill mid-way leaves them
        with sqlite3.connect(database) as made:
            made.execute("CREATE TABLE workflow (id INTEGER PRIMARY KEY)")
    else:
        database.write_bytes(b"" if damage == "empty" else b"\x00garbage" * 64)
    (tmp_path / "events.jsonl").unlink()
    again = _run(notebook, out)
    assert again.returncode == 0, again.stderr
    assert f"nb2cwl: note: StreamFlow's database {database} was incomplete" in again.stderr
    assert (out / (DATABASE + ".damaged")).exists() and database.stat().st_size > 0
    executed = json.loads(next((out / "runs" / "2").glob("*.executed.ipynb")).read_text())
    assert executed["cells"][1]["outputs"][0]["text"] == "42\n"
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    ran = {e["step"]: e["status"] for e in events if e.get("kind") == "step"
           and e.get("status") in ("done", "cached") and e["step"] != "assemble"}
    assert ran and set(ran.values()) == {"cached"}  # every finished step reused
    assert repair_database(str(out)) is None  # the new one is sound


def test_no_database_yet_is_nothing_to_repair(tmp_path: Path) -> None:
    assert repair_database(str(tmp_path)) is None


def test_the_database_keeps_only_the_last_completed_run_and_export_reads_it(
        tmp_path: Path) -> None:
    """StreamFlow adds every run's records and removes none: over hundreds of runs the file
    grew without bound. Each run now starts by removing all but the last completed run, so the
    file keeps its size from run to run; `nb2cwl export --with-run` still reads that run."""
    notebook = write_notebook(tmp_path / "nb.ipynb", "scale = 1.0", "import numpy as np\n"
                              "values = np.arange(1000) * scale", "print(float(values.sum()))",
                              "total = float(values.mean())", "print(total)")
    notebook_json = json.loads(notebook.read_text())
    notebook_json["cells"][0]["metadata"]["tags"] = ["parameters"]
    notebook.write_text(json.dumps(notebook_json))
    out = tmp_path / "wf"
    sizes = []
    for run in range(4):
        done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                               str(out), "--granularity", "cell", "-p", "scale", str(run + 2)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        sizes.append((out / DATABASE).stat().st_size)
    with sqlite3.connect(out / DATABASE) as database:
        assert database.execute("SELECT COUNT(*) FROM workflow").fetchone()[0] == 2
    assert sizes[3] <= sizes[1] * 1.1, sizes  # not a run's records more each time
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "export", str(notebook), "-o",
                           str(tmp_path / "b.zip"), "--with-run", str(out), "--granularity",
                           "cell"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "with the run of" in done.stdout
