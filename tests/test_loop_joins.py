"""A scattered loop's split and gather join the steps beside them where no boundary pays
(passes/loop_joins.py), and the joined steps print what Jupyter prints."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from equivalence import run_with_nbclient, run_with_workflow
from test_analysis import make_notebook

from nb2cwl.api import compile_notebook
from nb2cwl.cli import main

WORK = "def work(x):\n    import time\n    time.sleep(0.3)\n    return x * x"


def _shape(path: str) -> list[tuple[str, list[int]]]:
    return [(s.role, [c.index for c in s.cells]) for s in compile_notebook(path).steps]


def test_the_cells_before_and_after_a_loop_join_its_split_and_gather(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_notebook(tmp_path, [WORK, "xs = list(range(8))\nprint(len(xs))",
                                    "ys = [work(x) for x in xs]", "print(sum(ys))"])
    assert _shape(path) == [("split", [1, 2]), ("map", [2]), ("gather", [2, 3])]
    assert main(["explain", path]) == 0
    text = capsys.readouterr().out
    assert "joined with the step before it (In [2]), which feeds only this loop" in text
    assert "joined with the step after it (In [4]), the only one waiting for the loop" in text
    assert text.count("a step of its own: a part of a scattered loop") == 1  # the map's


def test_a_step_that_feeds_more_than_the_loop_keeps_its_boundary(tmp_path: Path) -> None:
    # cell 3 needs only cell 1: joined with the split, it would wait for the loop's prefix
    # and its chunks; and nothing waits for the gather, so it stays alone
    path = make_notebook(tmp_path, [WORK, "xs = list(range(8))",
                                    "ys = [work(x) for x in xs]\nprint(ys)",
                                    "print(len(xs))"])
    shape = _shape(path)
    assert ("split", [2]) in shape and ("gather", [2]) in shape
    assert ("cell", [1]) in shape or any(3 in cells for role, cells in shape if role == "cell")


def test_a_step_that_needs_a_step_beside_the_loop_is_not_joined_with_its_gather(
        tmp_path: Path) -> None:
    slow = "import time\ntime.sleep(3)\nside = 1"  # heavy, independent of the loop
    path = make_notebook(tmp_path, [WORK, "xs = list(range(8))",
                                    "ys = [work(x) for x in xs]", slow,
                                    "print(sum(ys) + side)"])
    shape = _shape(path)
    assert ("gather", [2]) in shape, shape


def test_a_tagged_step_is_never_joined(tmp_path: Path) -> None:
    tagged = nbformat.v4.new_code_cell("xs = list(range(8))")
    tagged.metadata["tags"] = ["nb2cwl:step=data"]
    path = make_notebook(tmp_path, [WORK, tagged, "ys = [work(x) for x in xs]"])
    assert ("cell", [1]) in _shape(path)


@pytest.mark.streamflow
def test_joined_steps_print_what_jupyter_prints(tmp_path: Path) -> None:
    """Settings, prints and a display in the joined cells, values made before the loop and
    used after it: the same outputs as the kernel, cell by cell."""
    path = Path(make_notebook(tmp_path, [
        "import numpy as np\n" + WORK,
        "np.set_printoptions(precision=2)\nxs = list(range(6))\nscale = np.float64(1 / 3)\n"
        "print('items', len(xs))\nscale",
        "weights = np.arange(3) * scale\nys = []\nfor x in xs:\n    print('item', x)\n"
        "    ys.append(work(x) * scale)\nprint(weights)",
        "print(np.array(ys))\nlen(ys)",
    ]))
    assert _shape(str(path)) == [("split", [1, 2]), ("map", [2]), ("gather", [2, 3])]
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow == jupyter


@pytest.mark.streamflow
def test_an_error_before_the_loop_in_a_joined_split_stops_the_run_as_jupyter_does(
        tmp_path: Path) -> None:
    path = Path(make_notebook(tmp_path, [
        WORK, "xs = list(range(6))\nprint('made')\nraise ValueError('bad data')",
        "ys = [work(x) for x in xs]\nprint(ys)", "print('after')"]))
    jupyter = run_with_nbclient(path, tmp_path / "jupyter", allow_errors=True)
    workflow, _ = run_with_workflow(path, tmp_path / "workflow", expect_failure=True)
    assert workflow[1] == jupyter[1]  # the failing cell's output and error
    assert "bad data" in workflow[1][0]
    assert workflow[2] == workflow[3] == [""]  # later cells did not run
