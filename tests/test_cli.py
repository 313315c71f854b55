"""The command line: compile, explain, graph, errors, output-directory safety, tags, fusion."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import nbformat
import pytest
from conftest import NOTEBOOKS

from nb2cwl.cli import main


def notebook(path: Path, cells: list[str | tuple[str, list[str]]], markdown_first: bool = True,
             kernel: str = "python") -> Path:
    """Write a notebook; a cell is code, or (code, tags)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": kernel,
                                 "display_name": "Python 3"}
    if markdown_first:
        nb.cells.append(nbformat.v4.new_markdown_cell("# test"))
    for cell in cells:
        code, tags = (cell, []) if isinstance(cell, str) else cell
        new = nbformat.v4.new_code_cell(code)
        if tags:
            new.metadata["tags"] = tags
        nb.cells.append(new)
    nbformat.write(nb, path)
    return path


def run_cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_explain_json_names_inputs_by_cell_index(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "nb.ipynb", [
        "import random\nimport numpy as np",
        "random.seed(1)\nnp.random.seed(2)\nx = 3",
        "with open('out.txt', 'w') as f:\n    f.write(str(x))",
        "y = random.random() + np.random.rand()",
        "print(open('out.txt').read(), y)",
    ])
    status, out, _ = run_cli("explain", str(path), "--json", capsys=capsys)
    assert status == 0
    data = json.loads(out)
    cells = {c["index"]: c for c in data["cells"]}
    assert sorted(cells) == [1, 2, 3, 4, 5]  # markdown cell 0 counted, not listed
    assert {"var": "x", "producer": 2} in cells[3]["inputs"]
    assert {"var": "rng:random", "producer": 2} in cells[4]["inputs"]
    assert {"var": "rng:numpy", "producer": 2} in cells[4]["inputs"]
    assert {"var": "file:out.txt", "producer": 3} in cells[5]["inputs"]
    assert {"var": "y", "producer": 4} in cells[5]["inputs"]
    assert cells[1]["role"] == "definitions"
    assert {"steps", "edges", "skeletons", "fallbacks"} <= set(data)
    assert {"var": "x", "producer": 2, "consumer": 3} in data["edges"]


def test_explain_text_lists_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(NOTEBOOKS / "independent_branches.ipynb", tmp_path)
    status, out, _ = run_cli("explain", str(tmp_path / "independent_branches.ipynb"),
                             capsys=capsys)
    assert status == 0
    assert "step cell_4" in out and "needs data" in out


@pytest.mark.parametrize("suffix", ["svg", "dot", "mmd"])
def test_graph_formats(suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(NOTEBOOKS / "independent_branches.ipynb", tmp_path)
    target = tmp_path / f"dag.{suffix}"
    status, _, _ = run_cli("graph", str(tmp_path / "independent_branches.ipynb"), "-o",
                           str(target), capsys=capsys)
    assert status == 0
    text = target.read_text()
    assert "cell_4" in text and "cell_8" in text
    if suffix == "svg":
        ElementTree.fromstring(text)
    elif suffix == "dot":
        assert text.startswith("digraph")
    else:
        assert "flowchart" in text


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "invalid JSON"),
        ('{"cells": [], "nbformat": 3, "metadata": {}}', "nbformat"),
    ],
)
def test_bad_notebook_is_one_line_error(content: str, expected: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text(content)
    status, _, err = run_cli(str(path), "-o", str(tmp_path / "out"), capsys=capsys)
    assert status == 1
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "bad.ipynb" in err and expected in err
    assert not (tmp_path / "out").exists()


def test_syntax_error_names_cell_and_line(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "nb.ipynb", ["x = 1", "y = 2\nif x\n    y = 3"])
    status, _, err = run_cli(str(path), "-o", str(tmp_path / "out"), capsys=capsys)
    assert status == 1
    assert "nb.ipynb, cell 2" in err and "line 2" in err and "SyntaxError" in err
    assert "Traceback" not in err


def test_non_python_kernel_and_empty_notebook(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    r_path = notebook(tmp_path / "r.ipynb", ["x <- 1"], kernel="R")
    status, _, err = run_cli(str(r_path), "-o", str(tmp_path / "o1"), capsys=capsys)
    assert status == 1 and "kernel" in err
    empty = notebook(tmp_path / "empty.ipynb", [])
    status, _, err = run_cli(str(empty), "-o", str(tmp_path / "o2"), capsys=capsys)
    assert status == 1 and "no code" in err


def test_debug_shows_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text("{")
    status, _, err = run_cli(str(path), "-o", str(tmp_path / "out"), "--debug", capsys=capsys)
    assert status == 1 and "Traceback" in err


def test_output_directory_is_never_clobbered(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "nb.ipynb", ["x = 1", "print(x)"])
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("precious")
    status, _, err = run_cli(str(path), "-o", str(out), capsys=capsys)
    assert status == 1 and "--force" in err
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    status, _, _ = run_cli(str(path), "-o", str(out), "--force", capsys=capsys)
    assert status == 0 and (out / "mine.txt").read_text() == "precious"
    # compiling again into nb2cwl's own output directory replaces only its own files
    status, _, _ = run_cli(str(path), "-o", str(out), capsys=capsys)
    assert status == 0 and (out / "mine.txt").read_text() == "precious"
    assert path.exists()


def test_cheap_cells_share_a_step_unless_one_per_cell_is_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(NOTEBOOKS / "linear_pipeline.ipynb", tmp_path)
    source = str(tmp_path / "linear_pipeline.ipynb")
    main(["explain", source, "--json", "--granularity", "cell"])
    plain = json.loads(capsys.readouterr().out)
    main(["explain", source, "--json"])
    fused = json.loads(capsys.readouterr().out)
    assert len(plain["steps"]) > 1
    assert len(fused["steps"]) == 1
    assert "fused" in " ".join(fused["steps"][0]["reasons"])


def test_heavy_independent_branches_keep_their_steps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(NOTEBOOKS / "independent_branches.ipynb", tmp_path)
    main(["explain", str(tmp_path / "independent_branches.ipynb"), "--json"])
    fused = json.loads(capsys.readouterr().out)
    branch_steps = [s for s in fused["steps"] if set(s["cells"]) & {4, 5, 6}]
    assert len(branch_steps) == 3
    assert all("runs beside" in " ".join(s["reasons"]) for s in branch_steps)


def test_step_tag_merges_and_skip_tag_skips(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "nb.ipynb", [
        ("a = 1", ["nb2cwl:step=prep"]),
        ("b = a + 1", ["nb2cwl:step=prep"]),
        ("print('never')", ["nb2cwl:skip"]),
        "print(a, b)",
    ])
    main(["explain", str(path), "--json"])
    data = json.loads(capsys.readouterr().out)
    steps = {s["name"]: s["cells"] for s in data["steps"]}
    assert steps["step_prep"] == [1, 2]
    (prep,) = [s for s in data["steps"] if s["name"] == "step_prep"]
    assert "In [1] to [2] merged by tag nb2cwl:step=prep" in prep["reasons"]  # Jupyter's numbers
    assert [c["role"] for c in data["cells"] if c["index"] == 3] == ["skipped"]


def test_conflicting_step_tags_are_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "nb.ipynb", [
        ("x = 1", ["nb2cwl:step=s"]),
        "y = x * 10",
        ("x = 2", ["nb2cwl:step=s"]),
        "print(x, y)",
    ])
    status, _, err = run_cli(str(path), "-o", str(tmp_path / "out"), capsys=capsys)
    assert status == 1 and "nb2cwl:step=s" in err
    assert "In [2] needs x as In [1] left it, but In [3] in the same step changes it" in err


def test_jupyter_workflow_metadata_is_honoured(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    first = nbformat.v4.new_code_cell("x = 1\nhidden = 5")
    second = nbformat.v4.new_code_cell("print(x)")
    second.metadata["workflow"] = {"version": "v1.0",
                                   "step": {"in": ["x", "hidden"], "out": []},
                                   "target": {"deployment": "cluster"}}
    nb.cells = [first, second]
    path = tmp_path / "jw.ipynb"
    nbformat.write(nb, path)
    main(["explain", str(path), "--json"])
    data = json.loads(capsys.readouterr().out)
    inputs = {c["index"]: c["inputs"] for c in data["cells"]}
    assert {"var": "hidden", "producer": 0} in inputs[1]
    assert [s["target"] for s in data["steps"] if s["cells"] == [1]] == ["cluster"]


def test_console_script_help_documents_options() -> None:
    result = subprocess.run([sys.executable, "-m", "nb2cwl", "run", "--help"],
                            capture_output=True, text=True, check=True)
    for option in ("--output", "--granularity", "--profile", "--force", "--python", "--quiet",
                   "--debug"):
        assert option in result.stdout


def test_the_command_and_its_engine_skip_slow_unused_imports(tmp_path: Path) -> None:
    """rfc3987_syntax (jsonschema's IRI format check, which no validator here uses) costs
    about a second at import, and the other format checks' libraries a tenth of a second:
    neither the nb2cwl command nor its StreamFlow process loads them, and validation still
    works without them."""
    import subprocess

    from nb2cwl.imports import UNUSED

    notebook = Path(__file__).resolve().parent.parent / "notebooks" / "linear_pipeline.ipynb"
    for code in ("import sys; sys.argv = ['nb2cwl', 'explain', sys.argv[1]]; "
                 "from nb2cwl.cli import run; run()",
                 "from nb2cwl.imports import skip_unused_imports; skip_unused_imports(); "
                 "from streamflow.config.validator import SfValidator; "
                 "SfValidator().validate({'version': 'v1.0', 'deployments': {}})"):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", code, str(notebook)],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        imported = {line.split("|")[-1].strip(): int(line.split("|")[1])
                    for line in done.stderr.splitlines()
                    if line.startswith("import time:") and line.split("|")[1].strip().isdigit()}
        for name in ("rfc3987_syntax", *UNUSED):  # microseconds: only tried, refused
            assert imported.get(name, 0) < 2_000, name
        assert "isoduration" in UNUSED and "arrow" not in imported
        assert "streamflow" not in code or "jsonschema" in imported  # it did validate


def test_another_notebooks_folder_is_not_replaced_without_force(tmp_path: Path) -> None:
    first = notebook(tmp_path / "first.ipynb", ["x = 1"])
    second = notebook(tmp_path / "second.ipynb", ["y = 2"])
    out = tmp_path / "shared-wf"

    def compile_(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "nb2cwl", "compile", str(path), "-o",
                               str(out), *extra], capture_output=True, text=True)

    assert compile_(first).returncode == 0
    assert compile_(first).returncode == 0  # its own folder: written again
    refused = compile_(second)
    assert refused.returncode != 0
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "first.ipynb" in lines[0] and "--force" in lines[0]
    assert "first" in (out / "notebook").iterdir().__next__().name  # nothing replaced
    assert compile_(second, "--force").returncode == 0


def test_the_compile_hint_repeats_the_options_given(tmp_path: Path) -> None:
    """"(or: nb2cwl run ...)" after a compile repeats -o, --deployment and the rest, quoted
    for the shell, so that pasting it runs what was compiled."""
    path = notebook(tmp_path / "nb.ipynb", ["x = 1", "print(x)"])
    out = tmp_path / "my wf"
    done = subprocess.run([sys.executable, "-m", "nb2cwl", str(path), "-o", str(out),
                           "--granularity", "cell"], capture_output=True, text=True, check=True)
    hint = done.stdout.strip().splitlines()[-1]
    assert hint == (f"run it with: streamflow run '{out}/streamflow.yml'  (or: nb2cwl run "
                    f"{path} -o '{out}' --granularity cell, with progress)")


@pytest.mark.streamflow
def test_run_writes_the_workflow_from_its_streamflow_process(tmp_path: Path) -> None:
    """`nb2cwl run` compiles without importing cwl-utils (its StreamFlow process, which imports
    it anyway, writes the compiled workflow): the folder is checked before anything starts, and
    a failure to write is one line."""
    path = notebook(tmp_path / "nb.ipynb", ["x = 21", "print(x * 2)"])

    def nb2cwl_run(out: Path, *python: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *python, "-m", "nb2cwl", "run", str(path),
                               "-o", str(out), "--quiet"], capture_output=True, text=True,
                              check=False)

    out = tmp_path / "wf"
    done = nb2cwl_run(out, "-X", "importtime")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cwl_utils" not in done.stderr and "schema_salad" not in done.stderr
    assert (out / "workflow.cwl").is_file() and (out / "streamflow.yml").is_file()
    assert "42" in next((out / "runs" / "1").glob("*.executed.ipynb")).read_text()

    mine = tmp_path / "mine"  # a folder of the user's: refused before anything runs
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    refused = nb2cwl_run(mine)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and "--force" in lines[0], lines
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]

    shutil.rmtree(out / "steps")  # where the step scripts go, a file: writing them fails
    (out / "steps").write_text("in the way")
    failed = nb2cwl_run(out)
    lines = failed.stderr.strip().splitlines()
    assert failed.returncode == 1 and len(lines) == 1, failed.stderr
    assert lines[0].startswith(f"nb2cwl: error: cannot write the compiled workflow into {out}")
    assert (out / "steps").read_text() == "in the way"
