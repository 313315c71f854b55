"""The loop corpus (tests/loop_corpus.py): every independent loop is scattered, every loop
whose order matters stays sequential with its true hazard, and the workflow prints what
Jupyter prints for all of them. Recall and precision are printed (pytest -s) and recorded
in benchmarks/RESULTS.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from equivalence import run_with_nbclient, run_with_workflow
from explained import skeleton_lines
from loop_corpus import INDEPENDENT, ORDERED, SETUP

from nb2cwl.analysis.skeletons.model import HAZARDS

#: the independent loops run in groups of this many per notebook
_GROUP = 10


def _notebook(path: Path, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP)] + [nbformat.v4.new_code_cell(c)
                                                       for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


def _explain(path: Path) -> dict:
    """`nb2cwl explain --json`, through the CLI as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "explain", str(path), "--json"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return json.loads(done.stdout)


def test_the_corpus_has_the_shapes_it_promises() -> None:
    assert len(INDEPENDENT) >= 40 and len(ORDERED) >= 15
    for _, hazard in ORDERED.values():
        assert hazard in HAZARDS and not HAZARDS[hazard].limit


def test_recall_and_precision_of_the_loop_checks(tmp_path: Path) -> None:
    independent = list(INDEPENDENT)
    data = _explain(_notebook(tmp_path / "independent.ipynb", list(INDEPENDENT.values())))
    scattered = set(skeleton_lines(data))
    reasons = {f["cell"]: f["reason"] for f in data["fallbacks"]}
    missed = [(name, reasons.get(index, "not worth a scatter"))
              for index, name in enumerate(independent, start=1) if index not in scattered]
    ordered = list(ORDERED)
    data = _explain(_notebook(tmp_path / "ordered.ipynb", [c for c, _ in ORDERED.values()]))
    wrongly = [ordered[index - 1] for index in skeleton_lines(data)]
    hazards = {f["cell"]: f["hazard"] for f in data["fallbacks"]}
    named = {name: hazards.get(index) for index, name in enumerate(ordered, start=1)}
    recall = 1 - len(missed) / len(independent)
    print(f"\nloop corpus: recall {recall:.0%} ({len(independent) - len(missed)} of "
          f"{len(independent)} independent loops scattered); precision "
          f"{1 - len(wrongly) / len(ordered):.0%} ({len(wrongly)} of {len(ordered)} "
          "order-dependent loops scattered)")
    assert not wrongly, f"order-dependent loops scattered: {wrongly}"
    assert named == {name: hazard for name, (_, hazard) in ORDERED.items()}
    assert not missed, f"independent loops kept sequential: {missed}"


def _groups() -> list[str]:
    names = list(INDEPENDENT)
    return [f"independent-{i // _GROUP}" for i in range(0, len(names), _GROUP)] + ["ordered"]


@pytest.mark.streamflow
@pytest.mark.parametrize("group", _groups())
def test_the_workflow_prints_what_jupyter_prints(group: str, tmp_path: Path) -> None:
    if group == "ordered":
        cells = [c for c, _ in ORDERED.values()]
    else:
        start = int(group.split("-")[1]) * _GROUP
        cells = list(INDEPENDENT.values())[start:start + _GROUP]
    source = _notebook(tmp_path / f"{group}.ipynb", cells)
    jupyter = run_with_nbclient(source, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(source, tmp_path / "workflow")
    assert workflow == jupyter


def test_a_draw_from_the_global_generator_is_named_at_its_line(tmp_path: Path) -> None:
    """The hazard's line is the draw's, not the loop's first line."""
    cell = ("noisy = []\nfor i in range(4):\n    base = simulate(i)\n"
            "    noisy.append(float(np.random.rand(100).mean()) + base)\nnoisy")
    data = _explain(_notebook(tmp_path / "draw.ipynb", [cell]))
    [fallback] = [f for f in data["fallbacks"] if f["cell"] == 1]
    assert fallback["hazard"] == "global_rng"
    assert fallback["reason"].startswith("line 4: an iteration draws from NumPy's global")
