"""The fidelity corpus: realistic notebooks whose later cells rely on state earlier cells set.

Each runs top to bottom with nbclient and as a workflow with `nb2cwl run`; every code cell's
outputs must be equal: streams, every MIME type of results and displays (figures included),
errors. Only memory addresses and the times %time/%timeit print are normalised.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import nbformat
import pytest
from equivalence import all_cells
from fidelity.cases import CASES
from nbclient import NotebookClient

from nb2cwl.checking.reference import kernel_environment
from nb2cwl.cli import main
from nb2cwl.frontend.reader import read_document

CORPUS = Path(__file__).parent / "fidelity"

pytestmark = [pytest.mark.streamflow, pytest.mark.fidelity]


_REFERENCES: dict[str, dict[int, list]] = {}  # one kernel run per notebook serves both tests


def _reference(source: Path, workdir: Path) -> dict[int, list]:
    if source.name in _REFERENCES:
        return _REFERENCES[source.name]
    workdir.mkdir(parents=True)
    nb = read_document(str(source))  # a script is read as nb2cwl reads it
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(workdir)}}).execute(
        env=kernel_environment())  # as Jupyter starts it (not as pytest's child)
    _REFERENCES[source.name] = all_cells(nb)
    return _REFERENCES[source.name]


def _workflow(source: Path, workdir: Path, granularity: str) -> dict[int, list]:
    workdir.mkdir(parents=True)
    target = workdir / source.name
    shutil.copyfile(source, target)
    status = main(["run", str(target), "-o", str(workdir / "wf"), "--quiet",
                   "--granularity", granularity])
    runs = sorted((workdir / "wf" / "runs").iterdir(), key=lambda p: int(p.name))
    executed = next(runs[-1].glob("*.executed.ipynb"))
    outputs = all_cells(nbformat.read(executed, as_version=4))
    assert status == (1 if any(o and o[-1][0] == "error" for o in outputs.values()) else 0)
    return outputs


# auto: the steps users get (cheap cells share a step); cell: a boundary after every cell, so
# every state a later cell relies on crosses one
@pytest.mark.parametrize("granularity", ["auto", "cell"])
@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_workflow_prints_what_jupyter_prints(case, granularity: str, tmp_path: Path) -> None:
    for module in case.needs:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    source = CORPUS / case.file
    jupyter = _reference(source, tmp_path / "jupyter")
    workflow = _workflow(source, tmp_path / "workflow", granularity)
    assert set(workflow) == set(jupyter)
    for index in sorted(jupyter):
        assert workflow[index] == jupyter[index], (
            f"{case.file}: cell {index} differs\n jupyter:  {jupyter[index]!r:.600}\n"
            f" workflow: {workflow[index]!r:.600}")
