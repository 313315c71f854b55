"""Notebooks written for Jupyter-Workflow: their deployments (`workflow.deployments`, and the
older `workflow.models` with a cell's `target.model`) and step-level `scatter` metadata."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from equivalence import run_with_nbclient, run_with_workflow

from nb2cwl.api import compile_notebook, compile_to_directory
from nb2cwl.errors import DirectiveError

KERNELSPEC = {"name": "python3", "language": "python", "display_name": "Python 3"}


def _notebook(path: Path, key: str, target_key: str, scatter: dict | None = None) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["workflow"] = {key: {"near": {"type": "local", "config": {}}},
                               "version": "v1.0"}
    first = nbformat.v4.new_code_cell("xs = list(range(6))\nprint(len(xs))")
    work = nbformat.v4.new_code_cell("import math")
    squares = nbformat.v4.new_code_cell("ys = [x * x for x in xs]\nprint(ys)")
    squares.metadata["workflow"] = {
        "step": {"in": [], "out": [{"name": "ys", "type": "name"}],
                 **({"scatter": scatter} if scatter else {})},
        "target": {target_key: "near"}, "version": "v1.0"}
    last = nbformat.v4.new_code_cell("print(sum(ys))")
    nb.cells = [first, work, squares, last]
    nbformat.write(nb, str(path))
    return path


@pytest.mark.parametrize(("key", "target_key"), [("deployments", "deployment"),
                                                 ("models", "model")])
def test_deployments_of_the_notebooks_metadata_are_defined(tmp_path, key, target_key):
    path = _notebook(tmp_path / "jw.ipynb", key, target_key)
    workflow, _ = compile_to_directory(str(path), str(tmp_path / "out"))
    step = next(s for s in workflow.steps if any(c.index == 2 for c in s.cells))
    assert step.target == "near"
    config = (tmp_path / "out" / "streamflow.yml").read_text()
    assert "near" in config


def test_a_malformed_deployment_names_the_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["workflow"] = {"deployments": {"bad": {"config": {}}}}
    nb.cells = [nbformat.v4.new_code_cell("print(1)")]
    path = tmp_path / "bad.ipynb"
    nbformat.write(nb, str(path))
    with pytest.raises(DirectiveError) as error:
        compile_notebook(str(path))
    assert "bad.ipynb" in str(error.value) and "'type'" in str(error.value)


def test_step_level_scatter_items_scatter_the_comprehension(tmp_path):
    """`x * x` is cheap: without the metadata the loop stays in one process."""
    plain = compile_notebook(str(_notebook(tmp_path / "a.ipynb", "deployments", "deployment")))
    assert not plain.skeletons
    hinted = compile_notebook(str(_notebook(tmp_path / "b.ipynb", "deployments", "deployment",
                                            scatter={"items": ["xs"]})))
    assert [s for s in hinted.skeletons if s.startswith("In [3]")]  # cell 2, as Jupyter shows it


@pytest.mark.streamflow
def test_a_jupyter_workflow_notebook_runs_like_jupyter(tmp_path):
    path = _notebook(tmp_path / "run.ipynb", "models", "model",
                     scatter={"items": [{"name": "xs", "size": 2}]})
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow == jupyter


def _genome_like(path: Path) -> Path:
    """The shape of Jupyter-Workflow's 1000-genome example: a cell scattered over a cartesian
    product of populations with a dot product of three per-chromosome lists."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["workflow"] = {"deployments": {"near": {"type": "local", "config": {}}},
                               "version": "v1.0"}
    data = nbformat.v4.new_code_cell(
        "populations = ['EUR', 'AFR']\nchromosomes = [1, 2, 3]\n"
        "merged = ['m1', 'm2', 'm3']\nsift = [0.1, 0.2, 0.3]")
    mutations = nbformat.v4.new_code_cell(
        "overlaps = []\nfor population in populations:\n"
        "    for chromosome, names, score in zip(chromosomes, merged, sift):\n"
        "        overlaps.append(f'{population}-{chromosome}-{names}-{score * 10:.0f}')\n"
        "print(overlaps)")
    mutations.metadata["workflow"] = {
        "step": {"in": [], "out": [{"name": "overlaps", "type": "name"}],
                 "scatter": {"items": ["populations",
                                       {"items": ["chromosomes", "merged", "sift"],
                                        "method": "dotproduct"}],
                             "method": "cartesian"}},
        "target": {"deployment": "near"}, "version": "v1.0"}
    nb.cells = [data, mutations, nbformat.v4.new_code_cell("print(len(overlaps))")]
    nbformat.write(nb, str(path))
    return path


def test_a_nested_scatter_object_scatters_the_nested_loops(tmp_path):
    workflow = compile_notebook(str(_genome_like(tmp_path / "genome.ipynb")))
    assert [s for s in workflow.skeletons if s.startswith("In [2]") and
            "nested_crossproduct" in s]


def test_an_unknown_scatter_method_is_named(tmp_path):
    path = _genome_like(tmp_path / "genome.ipynb")
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].metadata["workflow"]["step"]["scatter"]["method"] = "zipped"
    nbformat.write(nb, str(path))
    with pytest.raises(DirectiveError) as error:
        compile_notebook(str(path))
    assert "'zipped'" in str(error.value) and "genome.ipynb" in str(error.value)


@pytest.mark.streamflow
def test_a_nested_scatter_runs_like_jupyter(tmp_path):
    path = _genome_like(tmp_path / "genome.ipynb")
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow == jupyter
