"""Malformed and hostile notebooks: a correct workflow, a safe fallback, or a clear error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from equivalence import run_with_nbclient, run_with_workflow

from nb2cwl.cli import main

CORPUS = Path(__file__).resolve().parent / "corpus"

ERRORS = {
    "truncated.ipynb": ("invalid JSON", None),
    "nbformat3.ipynb": ("nbformat version 3", None),
    "missing_source.ipynb": ("'source' is a required property", None),
    "r_kernel.ipynb": ("Python notebooks", None),
    "garbage.ipynb": ("not a notebook", None),
    "hostile_cell_id.ipynb": ("cells/1/id", None),
    "syntax_error.ipynb": ("SyntaxError", "cell 2 (In [2], id cell-1), line 2"),
    "deeply_nested.ipynb": ("nested too deeply", "cell 1"),
}
# notebooks that compile and must give Jupyter's outputs (errors included)
RUNNABLE = ["exec_eval.ipynb", "setattr_module.ipynb", "del_then_use.ipynb",
            "defined_under_if.ipynb", "redefined_builtins.ipynb", "unicode_identifiers.ipynb",
            "reserved_cell_ids.ipynb"]


def test_corpus_is_up_to_date(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "make_corpus.py", tmp_path)
    import runpy

    runpy.run_path(str(tmp_path / "make_corpus.py"), run_name="__main__")
    for written in tmp_path.glob("*.ipynb"):
        assert written.read_bytes() == (CORPUS / written.name).read_bytes(), written.name


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_notebooks_give_one_clear_line(name: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    expected, location = ERRORS[name]
    status = main([str(CORPUS / name), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert name in err and expected in err
    if location:
        assert location in err
    assert not (tmp_path / "out").exists()


def test_unanalysable_code_falls_back_to_one_sequential_step(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(CORPUS / "exec_eval.ipynb"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in data["steps"]] == ["whole_notebook"]
    assert data["fallbacks"] and all("one sequential step" in f["reason"]
                                      for f in data["fallbacks"])


def test_a_changed_module_keeps_its_users_together(capsys: pytest.CaptureFixture[str]) -> None:
    """setattr(math, ...) changes the module in the process: the cells from that one to the
    last that uses the module run in one step, and explain says why."""
    assert main(["explain", str(CORPUS / "setattr_module.ipynb"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (step,) = data["steps"]
    assert step["cells"] == [1, 2]
    assert any("setattr() on a module" in r for r in step["reasons"])


@pytest.mark.streamflow
@pytest.mark.parametrize("name", RUNNABLE)
def test_runnable_corpus_matches_jupyter(name: str, tmp_path: Path) -> None:
    jupyter = run_with_nbclient(CORPUS / name, tmp_path / "jupyter", allow_errors=True)
    expect_failure = any("error:" in texts[0] for texts in jupyter.values())
    workflow, _ = run_with_workflow(CORPUS / name, tmp_path / "workflow",
                                    expect_failure=expect_failure)
    assert workflow == jupyter


@pytest.mark.streamflow
def test_fifty_megabytes_of_outputs(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    old = nbformat.v4.new_output("stream", name="stdout", text="y" * 50_000_000)
    nb.cells = [nbformat.v4.new_code_cell("x = 'small'\nprint(x)", outputs=[old]),
                nbformat.v4.new_code_cell("print(len(x))")]
    path = tmp_path / "huge.ipynb"
    nbformat.write(nb, path)
    outputs, results = run_with_workflow(path, tmp_path / "run")
    assert outputs == {0: ["stdout: small\n"], 1: ["stdout: 5\n"]}
    assert next(results.glob("*.executed.ipynb")).stat().st_size < 100_000


def test_ten_thousand_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    nb.cells = [nbformat.v4.new_code_cell(f"v{i} = v{i - 1} + 1" if i else "v0 = 0")
                for i in range(10_000)]
    nb.cells.append(nbformat.v4.new_code_cell("print(v9999)"))
    path = tmp_path / "many.ipynb"
    nbformat.write(nb, path)
    assert main(["explain", str(path), "--json", "--granularity", "cell"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["steps"]) == 10_001
    assert {"var": "v9998", "producer": 9998} in data["cells"][9999]["inputs"]
    assert main([str(path), "-o", str(tmp_path / "wf")]) == 0  # cheap cells: fused
    assert len(list((tmp_path / "wf" / "steps").glob("*.py"))) == 2  # one step + assemble
