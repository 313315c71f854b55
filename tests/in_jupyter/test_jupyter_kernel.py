"""The IPython extension in a real kernel (nbclient): %nb2cwl explain, graph, run and pull,
%%nb2cwl step, and the kernelspec that preloads the extension."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from in_jupyter.jupyter_helpers import write_notebook

pytestmark = pytest.mark.streamflow

ANALYSIS = [
    "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'n'], 'amount': [3, 4, 5]})",
    "by_region = sales.groupby('region').amount.sum()\nprint(by_region.to_dict())",
    "total = int(sales.amount.sum())\ntotal",
]


def _execute(path: Path, sources: list[str], env: dict[str, str], kernel: str = "python3",
             allow_errors: bool = False) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    client = NotebookClient(notebook, timeout=300, kernel_name=kernel, allow_errors=allow_errors,
                            resources={"metadata": {"path": str(path)}})
    old = dict(os.environ)
    os.environ.update(env)
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return notebook


def _text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif "text/plain" in output.get("data", {}):
            parts.append(output.data["text/plain"] + "\n")
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}\n")
    return "".join(parts)


def test_magics_explain_graph_run_and_pull(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path, "sales.ipynb", ANALYSIS)
    env = {"JPY_SESSION_NAME": str(notebook),  # as Jupyter tells a notebook's kernel
           "NB2CWL_RUNS_DIR": str(tmp_path / "runs")}
    done = _execute(tmp_path, [
        "%load_ext nb2cwl",
        "%nb2cwl explain",
        "%nb2cwl graph",
        "%nb2cwl run",
        "%nb2cwl pull total by_region\nprint(total, by_region.to_dict())",
        "%nb2cwl pull nothing_like_this",
        "%nb2cwl",
        "%nb2cwl --help",
    ], env, allow_errors=True)
    explain, graph, run, pulled, missing, bare, helped = done.cells[1:]
    for cell in (bare, helped):  # how to use it, not an error
        assert "%nb2cwl explain" in _text(cell) and "Error" not in _text(cell), _text(cell)
    assert "sales.ipynb:" in _text(explain) and "step" in _text(explain)
    assert any("image/svg+xml" in o.get("data", {}) for o in graph.outputs)
    assert [o for o in graph.outputs if o.output_type == "stream"] == []  # nothing else
    assert "done in" in _text(run) and "executed notebook:" in _text(run)
    progress = [o for o in run.outputs if o.output_type == "display_data"]
    assert progress and "steps" in progress[-1].data["text/plain"]
    assert "12 {'n': 8, 's': 4}" in _text(pulled)
    assert "UsageError" in _text(missing) and "nothing_like_this" in _text(missing)
    # the run was the notebook's own, recorded where the server finds it too
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1 and json.loads((runs[0] / "run.json").read_text())["notebook"] == \
        str(notebook)


def test_a_step_cell_runs_elsewhere_with_its_values(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text("item,price\na,2\nb,5\n")
    env = {"NB2CWL_RUNS_DIR": str(tmp_path / "runs")}
    done = _execute(tmp_path, [
        "%load_ext nb2cwl\nimport os\nhere = os.getpid()",
        "import pandas as pd\nfactor = 3\nscores = [1, 2]",
        "%%nb2cwl step\nprices = pd.read_csv('prices.csv')\nscores.append(sum(prices.price))\n"
        "print('remote', os.getpid() != here, flush=True)\nscaled = [s * factor for s in scores]"
        "\nprices.price.max()",
        "print(scaled, scores)\nprint(type(prices).__name__)",
        "%%nb2cwl step\nraise ValueError('bad value')",
    ], env, allow_errors=True)
    remote, after, failing = done.cells[2:]
    assert "remote True" in _text(remote)
    assert "5" in _text(remote)  # the cell's last value, shown as Jupyter shows it
    assert "[3, 6, 21] [1, 2, 7]" in _text(after) and "DataFrame" in _text(after)
    assert "ValueError" in _text(failing) and "bad value" in _text(failing)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".nb2cwl-step")]


def test_the_kernelspec_preloads_the_extension(tmp_path: Path,
                                              jupyter_paths: dict[str, str]) -> None:
    listed = subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
                            capture_output=True, text=True, check=True,
                            env={**os.environ, **jupyter_paths})
    specs = json.loads(listed.stdout)["kernelspecs"]
    assert specs["nb2cwl"]["spec"]["display_name"] == "Python 3 (nb2cwl)"
    done = _execute(tmp_path, ["%nb2cwl explain --notebook nothing.ipynb"], jupyter_paths,
                    kernel="nb2cwl", allow_errors=True)
    text = _text(done.cells[0])
    assert "no notebook file" in text  # the magic exists: it answered, about the notebook


def test_workflow_steps_do_not_run_the_magics(tmp_path: Path) -> None:
    """A notebook that uses the magics compiles: they are comments in its steps, a step cell
    runs its body (on the deployment it names), and explain says so."""
    notebook = write_notebook(tmp_path, "nb.ipynb", [
        "%load_ext nb2cwl\nx = 2", "%%nb2cwl step --deployment local\ny = x * 21\nprint(y)",
        "%nb2cwl run\nprint(x + y)"])
    found = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                            str(tmp_path / "wf")], capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stderr
    executed = nbformat.read(next((tmp_path / "wf" / "runs" / "1").glob("*.executed.ipynb")), 4)
    assert _text(executed.cells[1]) == "42\n" and _text(executed.cells[2]) == "44\n"
    explained = subprocess.run([sys.executable, "-m", "nb2cwl", "explain", str(notebook)],
                               capture_output=True, text=True, check=True).stdout
    assert "own-magic" in explained
