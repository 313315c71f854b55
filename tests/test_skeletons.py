"""Map and map-reduce skeletons: which loops become split -> scatter(map) -> gather, and that the
scattered workflow still prints exactly what a top-to-bottom Jupyter run prints.

The notebooks live in notebooks/skeletons/ and are written by make_skeleton_notebooks.py there.
In the map/reduce notebooks every cell whose id starts with ``map-`` must be scattered; in the
``blocked_*`` notebooks every cell whose id starts with ``blocked-`` must stay sequential.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import NOTEBOOKS
from equivalence import run_with_nbclient, run_with_workflow
from explained import skeleton_lines
from test_cli import notebook

from nb2cwl.cli import main

SKELETONS = NOTEBOOKS / "skeletons"
CASES = sorted(p.name for p in SKELETONS.glob("*.ipynb"))

#: Map/reduce notebooks: cell id -> the scatter method nb2cwl must pick for it.
SCATTERED: dict[str, dict[str, str]] = {
    "map_list_comprehension.ipynb": {
        "map-comprehension": "scatter",
        "map-comprehension-filter": "scatter",
    },
    "map_builtin_map.ipynb": {"map-list-map": "scatter", "map-tuple-map": "scatter"},
    "map_dict_comprehension.ipynb": {
        "map-dict-comprehension": "scatter",
        "map-dict-comprehension-filter": "scatter",
    },
    "map_loop_append.ipynb": {"map-loop-append": "scatter", "map-loop-two-lists": "scatter"},
    "map_enumerate_setitem.ipynb": {
        "map-enumerate-setitem": "scatter",
        "map-dict-setitem": "scatter",
    },
    "reduce_augassign.ipynb": {
        "map-float-total": "scatter",
        "map-counts": "scatter",
        "map-defaultdict-sum": "scatter",
        "map-string-concat": "scatter",
    },
    "reduce_builtins.ipynb": {
        "map-sum-generator": "scatter",
        "map-max-list": "scatter",
        "map-functools-reduce": "scatter",
    },
    "reduce_numpy_pandas.ipynb": {
        "map-np-mean": "scatter",
        "map-np-concatenate": "scatter",
        "map-pd-concat": "scatter",
    },
    "nested_product.ipynb": {
        "map-nested-comprehension": "nested_crossproduct",
        "map-nested-loops": "nested_crossproduct",
    },
    "zip_dotproduct.ipynb": {
        "map-zip-comprehension": "dotproduct",
        "map-zip-shorter": "dotproduct",
        "map-zip-loop": "dotproduct",
    },
    "hinted_tasks.ipynb": {"map-hinted-comprehension": "scatter", "map-hinted-loop": "scatter"},
}

#: Blocking notebooks: cell id -> words the fallback reason must contain.
BLOCKED: dict[str, dict[str, tuple[str, ...]]] = {
    "blocked_loop_carried.ipynb": {
        "blocked-loop-carried": ("prev", "written in one iteration"),
    },
    "blocked_shared_mutation.ipynb": {"blocked-shared-mutation": ("modifies", "cache")},
    "blocked_global_rng.ipynb": {
        "blocked-random": ("random",),
        "blocked-numpy-random": ("random",),
    },
    "blocked_file_append.ipynb": {"blocked-file-append": ("writes files",)},
    "blocked_break.ipynb": {"blocked-break": ("break",)},
    "blocked_accumulator_read.ipynb": {"blocked-accumulator-read": ("reads ys",)},
}

_SKELETON = re.compile(r": .* -> (\w+) over chunks \(")


def _cells(name: str) -> dict[str, tuple[int, str]]:
    """Cell id -> (index in the notebook, source)."""
    nb = nbformat.read(SKELETONS / name, as_version=4)
    return {cell.id: (index, cell.source) for index, cell in enumerate(nb.cells)}


def _explain(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    capsys.readouterr()
    assert main(["explain", str(path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _scattered(data: dict) -> dict[int, str]:
    """Cell index -> scatter method, from explain's "skeletons"."""
    found: dict[int, str] = {}
    for index, line in skeleton_lines(data).items():
        match = _SKELETON.search(line)
        assert match, f"unexpected skeleton line: {line}"
        found[index] = match.group(1)
    return found


def _compiled_cwl(path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main([str(path), "-o", str(out)]) == 0
    capsys.readouterr()
    return (out / "workflow.cwl").read_text()


def _assert_same_outputs(
    jupyter: dict[int, list[str]], workflow: dict[int, list[str]], label: str
) -> None:
    assert set(workflow) == set(jupyter)
    for index in sorted(jupyter):
        assert workflow[index] == jupyter[index], f"{label}: cell {index} differs"


def _has_chunks_option(capsys: pytest.CaptureFixture[str]) -> bool:
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    return "--chunks" in capsys.readouterr().out


# --- the notebooks themselves --------------------------------------------------------------


def test_notebooks_are_generated_and_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location(
        "make_skeleton_notebooks", SKELETONS / "make_skeleton_notebooks.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert sorted(generator.NOTEBOOKS) == CASES
    assert sorted([*SCATTERED, *BLOCKED]) == CASES
    for name, cells in generator.NOTEBOOKS.items():
        expected = nbformat.writes(generator.build(cells))
        assert (SKELETONS / name).read_text() == expected + "\n", (
            f"{name} is stale: run notebooks/skeletons/make_skeleton_notebooks.py"
        )
        ids = [cell_id for _, cell_id, _ in cells]
        assert cells[0][0] == "markdown"
        assert sorted(i for i in ids if i.startswith(("map-", "blocked-"))) == sorted(
            SCATTERED.get(name, {}) or BLOCKED[name]
        )


# --- what is scattered, and what is not ----------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCATTERED))
def test_map_and_reduce_forms_are_scattered(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(SKELETONS / name, tmp_path)
    path = tmp_path / name
    data = _explain(path, capsys)
    cells = _cells(name)
    expected = {cells[cell_id][0]: method for cell_id, method in SCATTERED[name].items()}
    assert _scattered(data) == expected
    assert data["fallbacks"] == []
    cwl = _compiled_cwl(path, tmp_path / "out", capsys)
    assert cwl.count('"scatter":') == len(expected)
    for method in set(expected.values()) - {"scatter"}:
        assert f'"scatterMethod": "{method}"' in cwl


@pytest.mark.parametrize("name", sorted(BLOCKED))
def test_unsafe_loops_stay_sequential_with_a_reason(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(SKELETONS / name, tmp_path)
    path = tmp_path / name
    data = _explain(path, capsys)
    cells = _cells(name)
    assert data["skeletons"] == []
    reasons = {f["cell"]: f["reason"] for f in data["fallbacks"]}
    for cell_id, words in BLOCKED[name].items():
        index, source = cells[cell_id]
        assert index in reasons, f"{name}: no fallback for cell {index} ({cell_id})"
        reason = reasons[index]
        for word in words:
            assert word in reason, f"{name}: {word!r} not in {reason!r}"
        # the reason points at a line of the loop (its header or its body)
        match = re.match(r"line (\d+): ", reason)
        assert match, reason
        line = source.splitlines()[int(match.group(1)) - 1]
        assert "for " in line or line.startswith(" "), (reason, line)
    cwl = _compiled_cwl(path, tmp_path / "out", capsys)
    assert "scatter" not in cwl.lower()


# --- the scattered workflow prints what Jupyter prints -------------------------------------


@pytest.mark.streamflow
@pytest.mark.parametrize("name", CASES)
def test_workflow_matches_jupyter(name: str, tmp_path: Path) -> None:
    jupyter = run_with_nbclient(SKELETONS / name, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(SKELETONS / name, tmp_path / "workflow")
    _assert_same_outputs(jupyter, workflow, name)


def test_explain_takes_the_deployment_options(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "d.ipynb", ["def work(x):\n    return x",
                                           "ys = [work(x) for x in range(8)]"],
                    markdown_first=False)
    here = _explain(path, capsys)
    docker = _explain(path, capsys, "--deployment", "docker")
    assert [s["name"] for s in docker["steps"]] == [s["name"] for s in here["steps"]]
    assert {s["target"] for s in here["steps"]} == {"local"}
    assert {s["target"] for s in docker["steps"]} == {"docker"}


@pytest.mark.streamflow
@pytest.mark.parametrize("name", ["reduce_augassign.ipynb", "nested_product.ipynb"])
def test_chunks_option_keeps_outputs(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not _has_chunks_option(capsys):
        pytest.skip("no --chunks option")
    jupyter = run_with_nbclient(SKELETONS / name, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(SKELETONS / name, tmp_path / "workflow", "--chunks", "3")
    _assert_same_outputs(jupyter, workflow, f"{name} --chunks 3")


EDGE_CELLS = [
    """
def work(x):
    print(f"work({x})")
    return x * 10


def pair(a, b):
    print(f"pair({a}, {b})")
    return a + b
""",
    "ys = [work(x) for x in xs if x % 2]\nprint('ys:', ys)",
    "out = []\nfor item in xs:\n    v = work(item)\n    out.append(v + 1)\nprint('out:', out)",
    "total = 0.5\nfor n in xs:\n    total += work(n) / 3\nprint(repr(total))",
    "s = sum(work(x) for x in xs)\nprint('sum:', s)",
    "dots = [pair(a, b) for a, b in zip(xs, xs)]\nprint('dots:', dots)",
    "grid = [pair(a, b) for a in xs for b in [1, 2]]\nprint('grid:', grid)",
    "print(ys, out, repr(total), s, dots, grid)",
]


@pytest.mark.streamflow
@pytest.mark.parametrize(
    ("items", "extra"),
    [([], ()), ([7], ()), ([7], ("--chunks", "3"))],
    ids=["empty", "one-item", "one-item-3-chunks"],
)
def test_map_over_zero_and_one_item(
    items: list[int], extra: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if extra and not _has_chunks_option(capsys):
        pytest.skip("no --chunks option")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "language": "python",
        "display_name": "Python 3",
    }
    nb.cells.append(nbformat.v4.new_markdown_cell("# a map over an edge-sized list"))
    nb.cells.append(nbformat.v4.new_code_cell(EDGE_CELLS[0].strip()))
    nb.cells.append(nbformat.v4.new_code_cell(f"xs = {items!r}\nprint('xs:', xs)"))
    nb.cells += [nbformat.v4.new_code_cell(code) for code in EDGE_CELLS[1:]]
    path = tmp_path / "edge.ipynb"
    nbformat.write(nb, path)
    scattered = _scattered(_explain(path, capsys))
    assert sorted(scattered) == list(range(3, len(nb.cells) - 1))
    assert scattered[7] == "dotproduct" and scattered[8] == "nested_crossproduct"
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow", *extra)
    _assert_same_outputs(jupyter, workflow, f"{len(items)} items {' '.join(extra)}")


def _steps_of(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """explain's data, one step per cell (the split and gather of a loop, as they are)."""
    assert main(["explain", str(path), "--json", "--granularity", "cell"]) == 0
    return json.loads(capsys.readouterr().out)


def test_jupyter_workflow_scatter_metadata_forces_the_scatter(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    cells = ["xs = list(range(6))", "ys = [x * 3 for x in xs]\nprint(ys)"]
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    path = tmp_path / "jw.ipynb"
    nbformat.write(nb, path)
    assert _steps_of(path, capsys)["skeletons"] == []  # cheap work: not worth a scatter
    nb.cells[1].metadata["workflow"] = {"version": "v1.0", "step": {
        "in": [{"name": "xs", "type": "name", "scatter": 0}], "out": ["ys"]}}
    nbformat.write(nb, path)
    assert list(skeleton_lines(_steps_of(path, capsys))) == [1]
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow == jupyter


def test_values_ready_before_the_loop_do_not_wait_for_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "early.ipynb", [
        "def work(x):\n    return x * 2",
        "xs = list(range(4))",
        "settings = {'scale': 3}\nys = [work(x) for x in xs]\nprint(ys)",
        "print(settings['scale'])",
        "print(sum(ys))",
    ], markdown_first=False)
    steps = {s["name"]: s for s in _steps_of(path, capsys)["steps"]}
    assert steps["cell_3"]["depends_on"] == ["cell_2_split"]
    assert steps["cell_4"]["depends_on"] == ["cell_2_gather"]
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow == jupyter


@pytest.mark.parametrize("cell, at_lines", [
    ("out = []\nfor x in xs:\n    y = x * 2  # twice\n    out.append(\n        y)\n", True),
    ("out = []\nfor x in xs: out.append(x)\n", False),  # the body is on the loop's line
    ("out = []\nfor x in xs:\n    y = x; out.append(y)\n", False),  # a record shares a line
])
def test_a_loop_body_runs_at_its_cells_lines_where_it_can(cell: str, at_lines: bool) -> None:
    """The per-item code keeps the body's lines in the cell (a warning names the cell's line,
    as in the kernel), and is the same code as the body rendered anew, only placed otherwise."""
    import ast

    import astroid

    from nb2cwl.analysis.skeletons.loop_body import recording_body, recording_body_at_lines
    from nb2cwl.analysis.skeletons.model import Piece

    loop = astroid.parse(cell).body[1]
    code = recording_body_at_lines(loop.body, loop.lineno, {"out"}, Piece(cell.split("\n"), 0))
    assert (code is not None) == at_lines
    if code is not None:
        assert ast.dump(ast.parse(code)) == ast.dump(ast.parse(recording_body(loop.body,
                                                                               {"out"})))
        assert code.split("\n")[2] == "    y = x * 2  # twice"  # line 3, as in the cell
        assert "__nb2cwl_record__" in code.split("\n")[3]


def test_a_loop_that_draws_and_writes_files_names_the_draws(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each item draws from one shared generator and writes its own file: the draws are the
    hazard to name (writing the files after the loop would leave the loop sequential)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import numpy as np\nimport pandas as pd\nrng = np.random.default_rng(0)\n"
        "paths = []\nfor i in range(4):\n    path = f'part{i}.csv'\n"
        "    pd.DataFrame(rng.normal(size=(3, 2))).to_csv(path)\n    paths.append(path)")])
    path = tmp_path / "draws.ipynb"
    nbformat.write(nb, path)
    reasons = [f["reason"] for f in _explain(path, capsys)["fallbacks"]]
    assert len(reasons) == 1 and "draws from rng" in reasons[0], reasons
    assert "writes files" not in reasons[0]
