"""What the analysis infers into: the notebook's own code, never a library's source where a
name or an expression can only hold a library's value (issue 24: compiling is the longer path
of a run's start; building numpy's modules for astroid cost about 0.4 s of it)."""

from __future__ import annotations

from pathlib import Path

import astroid
import pytest
from test_analysis import make_notebook

from nb2cwl.api import compile_notebook

LIBRARY_LOOP = [
    "import numpy as np",
    "inside = 0\n"
    "g = np.random.default_rng(7)\n"
    "for _ in range(8):\n"
    "    pts = g.random((100, 2))\n"
    "    inside += int((np.einsum('ij,ij->i', pts, pts) <= 1).sum())\n"
    "    inside += int(sum(1 for v in pts[:40, 0] if v < 0.5))\n"
    "print(inside)",
]


@pytest.fixture
def fresh_astroid():
    astroid.MANAGER.clear_cache()
    yield astroid.MANAGER
    astroid.MANAGER.clear_cache()


def test_methods_of_library_values_are_not_inferred_into(tmp_path: Path,
                                                          fresh_astroid) -> None:
    compile_notebook(make_notebook(tmp_path, LIBRARY_LOOP))
    built = sorted(name for name in fresh_astroid.astroid_cache if name.startswith("numpy"))
    assert built == [], built


@pytest.mark.parametrize(("expression", "library"), [
    ("rng.normal", True),            # rng = np.random.default_rng(0)
    ("(np.einsum('i,i', a, a) <= 1).sum", True),
    ("pts[:4, 0].mean", True),       # pts = rng.random((8, 2))
    ("seeded.normal", True),         # seeded = np.random.default_rng(seed=-1)
    ("wrapped.step", False),         # wrapped = wrap(Trainer()): a notebook object goes in
    ("mixed.step", False),           # mixed = np.asarray(trainer)
    ("(trainer + 1).step", False),
    ("trainer.step", False),
    ("either.normal", False),        # also assigned a notebook object
])
def test_only_library_values_count_as_library(expression: str, library: bool) -> None:
    from nb2cwl.analysis.astroid_lookup import only_imported

    module = astroid.parse(
        "import numpy as np\nfrom somewhere import wrap\n"
        "class Trainer:\n    def step(self):\n        return 1\n"
        "trainer = Trainer()\n"
        "rng = np.random.default_rng(0)\nseeded = np.random.default_rng(seed=-1)\n"
        "a = np.ones(3)\npts = rng.random((8, 2))\n"
        "wrapped = wrap(Trainer())\nmixed = np.asarray(trainer)\n"
        "either = rng\neither = trainer\n"
        f"{expression}\n")
    assert only_imported(module.body[-1].value) is library


@pytest.mark.streamflow
def test_a_notebook_of_library_values_gives_nbclients_outputs(tmp_path: Path) -> None:
    """The notebook the change sped up, as a data scientist writes it (numpy, pandas,
    matplotlib inline): every cell's outputs equal nbclient's, run with the default steps."""
    import nbformat
    from deployment_cases import write_notebook
    from equivalence import per_cell, run_with_nbclient

    from nb2cwl.cli import main

    notebook = write_notebook(
        tmp_path / "simulate.ipynb",
        "%matplotlib inline\nimport numpy as np\nimport pandas as pd\n"
        "import matplotlib.pyplot as plt",
        "g = np.random.default_rng(7)\ninside = 0\nfor _ in range(20):\n"
        "    pts = g.random((2_000, 2))\n"
        "    inside += int((np.einsum('ij,ij->i', pts, pts) <= 1).sum())\n"
        "print('pi is about', round(4 * inside / 40_000, 3))",
        "h = np.random.default_rng(11)\n"
        "walks = pd.DataFrame(h.normal(size=(200, 5)).cumsum(axis=0), columns=list('abcde'))\n"
        "walks.describe().round(3)",
        "fig, ax = plt.subplots()\nax.plot(walks['a'])\n"
        "print(round(float(walks['a'].iloc[-1]), 4))",
    )
    expected = run_with_nbclient(notebook, tmp_path / "kernel")
    assert main(["run", str(notebook), "-o", str(tmp_path / "wf"), "--quiet"]) == 0
    executed = next((tmp_path / "wf" / "runs" / "1").glob("*.executed.ipynb"))
    assert per_cell(nbformat.read(executed, as_version=4)) == expected
