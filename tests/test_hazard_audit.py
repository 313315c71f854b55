"""The hazard audit: no kind of reason to keep a loop sequential exists without a notebook
where that hazard really changes a result (tests/hazard_demos.py), and nb2cwl names that
very hazard for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from hazard_demos import DEMOS

from nb2cwl.analysis.skeletons.model import HAZARDS

_DEMOS = Path(__file__).resolve().parent / "hazard_demos.py"


def test_every_hazard_has_a_demonstration() -> None:
    hazards = {kind for kind, hazard in HAZARDS.items() if not hazard.limit}
    assert set(DEMOS) == hazards
    for kind in hazards:
        assert HAZARDS[kind].what, kind


@pytest.mark.parametrize("kind", sorted(DEMOS))
def test_the_hazard_changes_the_result(kind: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(_DEMOS), kind], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["sequential"] != found["scattered"], found
    assert not found["sequential"].startswith("raised"), found


def test_nb2cwl_names_each_hazard_where_it_is(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    loops: dict[int, str] = {}
    for kind, demo in sorted(DEMOS.items()):
        nb.cells.append(nbformat.v4.new_code_cell(demo.setup))
        nb.cells.append(nbformat.v4.new_code_cell(demo.cell))
        loops[len(nb.cells) - 1] = kind
        for name, text in (demo.files or {}).items():
            (tmp_path / name).write_text(text)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "hazards.ipynb"
    nbformat.write(nb, path)
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "explain", str(path), "--json"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    data = json.loads(done.stdout)
    named = {f["cell"]: f["hazard"] for f in data["fallbacks"] if f.get("hazard")}
    assert {cell: named.get(cell) for cell in loops} == loops
    fixes = {f["cell"]: f["fix"] for f in data["fallbacks"]}
    for cell, kind in loops.items():
        assert fixes[cell] == HAZARDS[kind].fix
