"""Known costs are used: nb2cwl's own last run keeps each cell's measured seconds, and the next
compilation into the same folder uses them; a loop whose measured seconds show that a scatter
would not pay stays in one step, and explain gives the figures (issue 24, items 2 and 8)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from nb2cwl.backends.naming import TIMINGS_FILE
from nb2cwl.passes.cost_model import read_last_run, source_digest
from nb2cwl.runtime.timings import digest

QUICK = ["import numpy as np\nx = np.arange(50.0)\ny = 2 * x + 1",
         "fits = []\nfor seed in range(8):\n    g = np.random.default_rng(seed)\n"
         "    idx = g.integers(0, 50, 50)\n"
         "    fits.append(round(float(np.polyfit(x[idx], y[idx], 1)[0]), 3))\nprint(fits)"]
SLOW = ["import time\nitems = list(range(8))",
        "done = []\nfor i in items:\n    time.sleep(0.2)\n    done.append(i * i)\nprint(done)"]


def _notebook(path: Path, sources: list[str]) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(s, id=f"c{n}") for n, s in enumerate(sources)]
    nbformat.write(notebook, str(path))
    return path


def _cli(*args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "nb2cwl", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _steps(out: Path) -> list[str]:
    return sorted(p.stem for p in (out / "steps").glob("*.py"))


def _printed(out: Path, run: int) -> list[str]:
    executed = next((out / "runs" / str(run)).glob("*.executed.ipynb"))
    return ["".join(o.get("text", "") for o in c["outputs"])
            for c in json.loads(executed.read_text())["cells"]]


@pytest.mark.streamflow
def test_a_loop_measured_too_quick_to_pay_stays_in_one_step(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "quick.ipynb", QUICK)
    out = tmp_path / "wf"
    _cli("run", str(notebook), "-o", str(out), "--quiet", cwd=tmp_path)
    assert "cell_1_split" in _steps(out)  # nothing measured yet: the estimate scatters it
    measured = _measured(out)
    assert set(measured) == {"c0", "c1"} and all(0 < s < 5 for s in measured.values())
    assert "seconds" not in next((out / "runs" / "1").glob("*.executed.ipynb")).read_text()

    explained = _cli("explain", str(notebook), "--workflow", str(out), cwd=tmp_path)
    assert "a scatter would not pay: the cell takes about" in explained, explained
    assert "(measured in the last run)" in explained
    assert "split and gather steps cost about 0.6 s" in explained
    first = _cli("explain", str(notebook), cwd=tmp_path)  # nothing measured: the estimate
    assert "scatter would not pay" not in first
    assert "scattered though the code suggests only" in first or (
        "scattered on an estimate: the cell takes about" in first), first
    assert "from the next run on, its measured seconds decide" in first

    _cli("run", str(notebook), "-o", str(out), "--quiet", cwd=tmp_path)
    assert not any(s.endswith(("_split", "_map", "_gather")) for s in _steps(out))
    assert _printed(out, 2) == _printed(out, 1)

    edited = [QUICK[0], QUICK[1].replace("range(8)", "range(6)")]  # its cost is unknown again
    _notebook(notebook, edited)
    _cli("run", str(notebook), "-o", str(out), "--quiet", cwd=tmp_path)
    assert "cell_1_split" in _steps(out)


@pytest.mark.streamflow
def test_a_loop_measured_heavy_enough_stays_scattered(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "slow.ipynb", SLOW)
    out = tmp_path / "wf"
    for _ in range(2):
        _cli("run", str(notebook), "-o", str(out), "--quiet", "--chunks", "2", cwd=tmp_path)
        assert "cell_1_map" in _steps(out)
    assert _measured(out)["c1"] >= 1.6  # the eight items as in one process, not a chunk's
    explained = _cli("explain", str(notebook), "--workflow", str(out), cwd=tmp_path)
    assert "scattered, as it pays: the cell takes about" in explained, explained
    assert "(measured in the last run), so 2 chunks would save at most" in explained
    assert _printed(out, 2)[1] == "[0, 1, 4, 9, 16, 25, 36, 49]\n"


def _measured(out: Path) -> dict[str, float]:
    lines = (out / TIMINGS_FILE).read_text().splitlines()
    return {entry["cell"]: entry["seconds"] for entry in map(json.loads, lines)}


def test_only_the_cells_unchanged_since_the_run_keep_their_seconds(tmp_path: Path) -> None:
    timings = tmp_path / TIMINGS_FILE
    entries = [{"cell": "a", "digest": digest("x = 1\ny = 2"), "seconds": 1.5},
               {"cell": "b", "digest": digest("z = 3"), "seconds": 2.0},
               {"cell": "gone", "digest": digest("w = 4"), "seconds": 3.0}]
    timings.write_text("".join(json.dumps(e) + "\n" for e in entries) + '{"cell": "a", "dig')
    profile = read_last_run(str(timings), {"a": "x = 1\ny = 2", "b": "z = 30"})
    assert profile is not None and dict(profile.seconds) == {"a": 1.5}  # a half line: skipped
    assert profile.source == "last run"
    assert read_last_run(str(timings), {"b": "z = 30"}) is None
    assert read_last_run(str(tmp_path / "missing"), {"a": "x = 1\ny = 2"}) is None
    for source in ("", "x = 1\ny = 2", "print('é')"):  # the steps' digest is the compiler's
        assert digest(source) == source_digest(source)


def test_balanced_shares_give_each_chunk_about_the_same_work() -> None:
    from nb2cwl.runtime.skeleton import balanced_shares

    # dealt out like cards, every costly item would go to the first chunk
    assert balanced_shares([1, 0, 1, 0, 1, 0, 1, 0], 2) == [[0, 1, 4, 5], [2, 3, 6, 7]]
    shares = balanced_shares([5.0, 1, 1, 1, 1, 1], 2)
    assert shares == [[0], [1, 2, 3, 4, 5]]  # 5 s against 5 s
    assert balanced_shares([0.5] * 3, 8) == [[0], [1], [2]]  # never more chunks than items
    assert sorted(i for share in balanced_shares([3, 1, 4, 1, 5, 9, 2, 6], 3)
                  for i in share) == list(range(8))


UNEVEN = ["import os, time\nitems = list(range(8))",
          "where = []\nfor i in items:\n    time.sleep(0.6 if i % 2 == 0 else 0.0)\n"
          "    where.append((i, os.getpid()))"]


@pytest.mark.streamflow
def test_the_next_run_balances_chunks_by_the_items_measured_seconds(tmp_path: Path) -> None:
    """The even items are slow: dealt out like cards, one chunk gets all of them. The run
    keeps each item's seconds, and the next run's split balances the chunks by them."""
    notebook = _notebook(tmp_path / "uneven.ipynb", [*UNEVEN, "print(where)"])
    out = tmp_path / "wf"

    def slow_items_per_process(run: int) -> list[int]:
        where = eval(_printed(out, run)[2])
        slow = {pid for i, pid in where if i % 2 == 0}
        return sorted(sum(1 for i, pid in where if i % 2 == 0 and pid == p) for p in slow)

    _cli("run", str(notebook), "-o", str(out), "--quiet", "--chunks", "2", cwd=tmp_path)
    assert slow_items_per_process(1) == [4]  # every slow item in one chunk
    lines = [json.loads(line) for line in (out / TIMINGS_FILE).read_text().splitlines()]
    items = next(line["items"] for line in lines if line["cell"] == "c1")
    assert len(items) == 8 and all(items[i] > 0.5 for i in (0, 2, 4, 6)) and \
        all(items[i] < 0.3 for i in (1, 3, 5, 7))
    # a run that only reuses (the balance changed, the results did not) reruns nothing, the
    # gather included, and keeps the items' seconds for the next
    again = _cli("run", str(notebook), "-o", str(out), "--chunks", "2", cwd=tmp_path)
    # three steps: the split (with the cell before the loop), the map and the gather (with the
    # cell after it): passes/loop_joins.py
    assert again.count(" reused ") == 3 and " done " not in again.replace("assemble done", "")
    _cli("run", str(notebook), "-o", str(out), "--quiet", "--no-cache", "--chunks", "2",
         cwd=tmp_path)
    assert slow_items_per_process(3) == [2, 2]  # two slow items in each chunk
    assert _printed(out, 3)[2].count("(") == 8


HINTED = ["from nb2cwl import parallel_task\n\n@parallel_task\ndef square(v):\n    return v * v",
          "squares = [square(v) for v in range(4)]\nprint(sum(squares))"]


def test_a_scatter_the_notebook_asked_for_is_made_however_quick(tmp_path: Path) -> None:
    """`@parallel_task` asks for the scatter: measured seconds too few to pay do not undo it."""
    notebook = _notebook(tmp_path / "hinted.ipynb", HINTED)
    out = tmp_path / "wf"
    _cli(str(notebook), "-o", str(out), cwd=tmp_path)
    (out / TIMINGS_FILE).write_text("".join(
        json.dumps({"cell": f"c{n}", "digest": digest(s), "seconds": 0.001}) + "\n"
        for n, s in enumerate(HINTED)))
    _cli(str(notebook), "-o", str(out), cwd=tmp_path)
    assert "cell_1_map" in _steps(out)
    assert "would not pay" not in _cli("explain", str(notebook), "--workflow", str(out),
                                       cwd=tmp_path)
    unhinted = [HINTED[0].replace("@parallel_task\n", ""), HINTED[1]]
    _notebook(notebook, unhinted)  # the control: unasked, the same figures keep it in one step
    (out / TIMINGS_FILE).write_text("".join(
        json.dumps({"cell": f"c{n}", "digest": digest(s), "seconds": 0.001}) + "\n"
        for n, s in enumerate(unhinted)))
    explained = _cli("explain", str(notebook), "--workflow", str(out), cwd=tmp_path)
    assert "would not pay" in explained, explained
