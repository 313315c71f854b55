"""Each project notebook gives the same text outputs, cell by cell, in Jupyter and as a workflow."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import NOTEBOOKS
from equivalence import run_with_nbclient, run_with_workflow

# the case study needs its data files and prints timings: tests/test_training.py runs it
CASES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if p.name != "fashion_mnist.ipynb")


@pytest.mark.streamflow
@pytest.mark.parametrize("granularity", ["auto", "cell"])
@pytest.mark.parametrize("name", CASES)
def test_workflow_matches_top_to_bottom_run(name: str, granularity: str, tmp_path: Path) -> None:
    """Fused or one step per cell, the outputs are Jupyter's."""
    jupyter = run_with_nbclient(NOTEBOOKS / name, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(NOTEBOOKS / name, tmp_path / "workflow",
                                    "--granularity", granularity)
    assert set(workflow) == set(jupyter)
    for index in sorted(jupyter):
        assert workflow[index] == jupyter[index], f"{name}: cell {index} differs"


@pytest.mark.streamflow
def test_independent_branches_run_concurrently(tmp_path: Path) -> None:
    run_with_workflow(NOTEBOOKS / "independent_branches.ipynb", tmp_path)
    # StreamFlow records when it started and finished each step's job
    spans = _step_spans(tmp_path / "wf")
    branches = [spans[name] for name in ("cell_4", "cell_5", "cell_6")]
    overlapping = sum(
        1
        for i, (start, end) in enumerate(branches)
        for other_start, other_end in branches[i + 1:]
        if start < other_end and other_start < end
    )
    assert overlapping >= 1, f"no two branch steps overlapped in time: {branches}"
    sequential = sum(end - start for start, end in branches)
    assert sequential >= 4.4  # each branch sleeps 1.5 s


def _step_spans(out_dir: Path) -> dict[str, tuple[float, float]]:
    import sqlite3

    database = out_dir / ".streamflow" / "sqlite.db"
    assert database.exists(), "StreamFlow kept no database in the output directory"
    spans: dict[str, tuple[float, float]] = {}
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT name, start_time, end_time FROM execution "
                                  "JOIN step ON execution.step = step.id").fetchall()
    for name, start, end in rows:
        spans[name.strip("/")] = (start / 1e9, end / 1e9)
    return spans


@pytest.mark.streamflow
@pytest.mark.parametrize("granularity", ["auto", "cell"])
def test_a_blank_cell_gets_no_number_and_later_counts_are_jupyters(
        granularity: str, tmp_path: Path) -> None:
    """nbclient (and JupyterLab's Run All) do not run a blank code cell: it keeps no
    execution count, and the cells after it are numbered from where the count stood. A cell of
    comments or definitions runs, and is numbered, even where no step runs it. Out[n] and
    In [n] are the same as in Jupyter."""
    import subprocess
    import sys

    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in
                      ["%matplotlib inline\nimport pandas as pd\nimport matplotlib.pyplot as plt",
                       "", "   \n", "# per-city sales",
                       "def total(frame):\n    return frame.groupby('city').sales.sum()",
                       "df = pd.DataFrame({'city': ['a', 'b', 'a'], 'sales': [3, 5, 4]})\n"
                       "total(df)",
                       "fig, ax = plt.subplots()\nax.bar(['a', 'b'], total(df).values);",
                       "print(_, total(df).max())"]]
    path = tmp_path / "blank.ipynb"
    nbformat.write(notebook, path)
    jupyter = nbformat.read(path, as_version=4)
    NotebookClient(jupyter, kernel_name="python3", resources={
        "metadata": {"path": str(tmp_path)}}).execute()
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(path), "-o",
                           str(tmp_path / "wf"), "--granularity", granularity, "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ran = nbformat.read(next((tmp_path / "wf" / "runs").glob("*/blank.executed.ipynb")), 4)

    def numbers(nb: nbformat.NotebookNode) -> list:
        return [(cell.execution_count, [(o.get("execution_count"), o.get("text") or
                                         o.get("data", {}).get("text/plain"))
                                        for o in cell.outputs]) for cell in nb.cells]

    assert numbers(ran) == numbers(jupyter)
    assert [c.execution_count for c in jupyter.cells] == [1, None, None, 2, 3, 4, 5, 6]
    explained = subprocess.run([sys.executable, "-m", "nb2cwl", "explain", str(path),
                                "--json"], capture_output=True, text=True, timeout=300)
    import json

    prompts = [c["prompt"] for c in json.loads(explained.stdout)["cells"]]
    assert prompts == [1, None, None, 2, 3, 4, 5, 6]  # In [n] in every reason and view
