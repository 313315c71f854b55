"""Parameters and sweeps: the parameters cell becomes the workflow's typed inputs.

Every run is compared with papermill's run of the same notebook with the same values (or with
nbclient's, for the notebook's own values): per cell, the same outputs.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
import pytest
from deployment_cases import tuned_profile
from engines.slurm import SlurmCluster
from equivalence import all_cells
from ruamel.yaml import YAML

from nb2cwl.api import compile_notebook
from nb2cwl.cli import main

# a notebook as data scientists parameterise them: every literal type, a file and a folder
TYPES = [
    ("import os", []),
    ("# knobs of the run\n"
     "learning_rate = 0.001\nepochs = 3\nbig = 12345678901\nlabel = \"baseline run\"\n"
     "use_bias = True\nlayers = [64, 32]\nweights = [0.5, 1.5]\nnames = ['a', 'b']\n"
     "data_file = 'data/points.csv'\ndata_dir = 'data'\n"
     "when = None\nconfig = {'k': 1}\nderived = epochs * 2", ["parameters"]),
    ("print(type(learning_rate).__name__, learning_rate, epochs, big, repr(label), use_bias)",
     []),
    ("print(layers, weights, names, derived, when, config)", []),
    ("with open(data_file) as handle:\n    rows = handle.read().splitlines()\n"
     "print(data_file, len(rows), rows[-1])", []),
    ("print(sorted(os.listdir(data_dir)))", []),
    ("layers.append(1)\ntotal = sum(layers) * learning_rate\ntotal", []),
]

CHANGED: dict[str, Any] = {"learning_rate": 0.01, "epochs": 5, "label": "tuned 'x' \"y\"",
                           "use_bias": False, "layers": [8, 16, 32], "big": 2 ** 40,
                           "weights": [1e-10], "names": ["c"], "data_file": "data/other.csv"}


def _notebook(folder: Path, cells: list[tuple[str, list[str]]], name: str = "p.ipynb") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data"
    data.mkdir(exist_ok=True)
    (data / "points.csv").write_text("x,y\n1,2\n3,4\n")
    (data / "other.csv").write_text("x,y\n10,20\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                 "display_name": "Python 3"}
    for source, tags in cells:
        cell = nbformat.v4.new_code_cell(source)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    path = folder / name
    nbformat.write(nb, path)
    return path


def _papermill(path: Path, output: Path, parameters: dict[str, Any]) -> dict[int, list]:
    import papermill

    papermill.execute_notebook(str(path), str(output), parameters=parameters,
                               kernel_name="python3", cwd=str(path.parent), progress_bar=False)
    return _cells(output)


def _cells(path: Path) -> dict[int, list]:
    return all_cells(nbformat.read(path, as_version=4))


def _run(path: Path, *options: str) -> int:
    old = os.environ["PATH"]
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + old
    try:
        return main(["run", str(path), "--quiet", *options])
    finally:
        os.environ["PATH"] = old


def _last_run(path: Path) -> Path:
    runs = path.parent / f"{path.stem}-wf" / "runs"
    return max(runs.iterdir(), key=lambda p: int(p.name))


def _executed(path: Path) -> Path:
    return next(_last_run(path).glob("*.executed.ipynb"))


def _cli_values(values: dict[str, Any]) -> list[str]:
    options = []
    for name, value in values.items():
        text = json.dumps(value) if isinstance(value, list) else str(value)
        options += ["-p", name, text]
    return options


def test_the_parameters_cell_declares_typed_inputs(tmp_path: Path, capsys) -> None:
    path = _notebook(tmp_path, TYPES)
    workflow = compile_notebook(str(path))
    declared = {p.name: (p.type, p.default) for p in workflow.parameters}
    assert declared == {
        "learning_rate": ("double", 0.001), "epochs": ("int", 3), "big": ("long", 12345678901),
        "label": ("string", "baseline run"), "use_bias": ("boolean", True),
        "layers": ("int[]", [64, 32]), "weights": ("double[]", [0.5, 1.5]),
        "names": ("string[]", ["a", "b"]), "data_file": ("File", "data/points.csv"),
        "data_dir": ("Directory", "data")}
    notes = {d.message.split(" is no")[0]: d for d in workflow.diagnostics
             if d.code == "parameter-baked-in"}
    assert set(notes) == {"when", "config", "derived"}  # they keep the notebook's value
    assert notes["derived"].location.cell_index == 1 and notes["derived"].location.line == 14
    capsys.readouterr()
    assert main(["explain", str(path)]) == 0
    assert "learning_rate: double = 0.001" in capsys.readouterr().out
    compiled = tmp_path / "out"
    assert main([str(path), "-o", str(compiled)]) == 0
    job = YAML(typ="safe").load((compiled / "job.yml").read_text())
    assert job["learning_rate"] == 0.001 and job["layers"] == [64, 32]
    assert job["data_file"] == {"class": "File", "path": "../data/points.csv"}


def test_defaults_print_what_jupyter_prints(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "wf", TYPES)
    reference = _papermill(path, tmp_path / "pm.ipynb", {})
    assert _run(path) == 0
    executed = _cells(_executed(path))
    assert executed == reference
    notebook = nbformat.read(_executed(path), as_version=4)
    assert not any("injected-parameters" in c.metadata.get("tags", []) for c in notebook.cells)


def test_values_given_with_p_print_what_papermill_prints(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "wf", TYPES)
    reference = _papermill(path, tmp_path / "pm.ipynb", CHANGED)
    assert _run(path, *_cli_values(CHANGED)) == 0
    assert _cells(_executed(path)) == reference
    notebook = nbformat.read(_executed(path), as_version=4)
    injected = notebook.cells[2]
    assert injected.metadata["tags"] == ["injected-parameters"]
    assert "learning_rate = 0.01\n" in injected.source
    assert notebook.metadata["nb2cwl"]["parameters"]["layers"] == [8, 16, 32]


def test_a_parameters_file_and_a_job_file_change_the_values_without_compiling(
        tmp_path: Path) -> None:
    path = _notebook(tmp_path / "wf", TYPES)
    values = {"epochs": 7, "label": "from a file", "weights": [0.25, 2]}
    reference = _papermill(path, tmp_path / "pm.ipynb",
                           {**values, "weights": [0.25, 2.0]})
    yaml = YAML()
    (tmp_path / "values.yml").write_text(json.dumps(values))
    assert _run(path, "-f", str(tmp_path / "values.yml")) == 0
    assert _cells(_executed(path)) == reference
    # the compiled workflow with another job file, as StreamFlow runs it: the same results
    out = path.parent / "p-wf"
    scripts = {p.name: p.read_text() for p in (out / "steps").iterdir()}
    job = YAML(typ="safe").load((out / "job.yml").read_text())
    job.update(values)
    with (out / "other-job.yml").open("w") as handle:
        yaml.dump(job, handle)
    config = YAML(typ="safe").load((out / "streamflow.yml").read_text())
    next(iter(config["workflows"].values()))["config"]["settings"] = "other-job.yml"
    with (out / "other.yml").open("w") as handle:
        yaml.dump(config, handle)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    done = subprocess.run([str(Path(sys.executable).parent / "streamflow"), "run", "--outdir",
                           str(tmp_path / "plain"), str(out / "other.yml")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert _cells(tmp_path / "plain" / "p.executed.ipynb") == reference
    assert {p.name: p.read_text() for p in (out / "steps").iterdir()} == scripts


def test_values_that_do_not_fit_are_refused_with_the_parameter(tmp_path: Path, capsys) -> None:
    path = _notebook(tmp_path / "wf", TYPES)
    for options, expected in [
        (["-p", "epochs", "many"], "-p epochs: parameter epochs takes an integer, not 'many'"),
        (["-p", "nope", "1"], "the notebook has no parameter nope"),
        (["-p", "layers", "[1, oops"], "-p layers: not YAML"),
        (["-p", "epochs", "1", "-p", "epochs", "2"], "add --sweep"),
        (["--sweep"], "--sweep needs a parameter with several values"),
    ]:
        capsys.readouterr()
        assert _run(path, *options) == 1, options
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("nb2cwl: error: p.ipynb") and expected in err[0]


TRAINING = [
    ("import time\nimport numpy as np", []),
    ("lr = 0.1\nbatch = 32\nseed = 7", ["parameters"]),
    ("rng = np.random.default_rng(seed)\nX = rng.normal(size=(400, 3))\n"
     "y = X @ np.arange(3) + rng.normal(size=400)\nprint('loaded', X.shape)\n"
     "with open({loads!r}, 'a') as log:  # outside the notebook's folder: not staged\n"
     "    log.write('loaded\\n')", []),
    ("X = (X - X.mean(0)) / X.std(0)", []),
    ("time.sleep({sleep})\nw = np.zeros(3)\nfor epoch in range(5):\n"
     "    for i in range(0, len(X), batch):\n        xb, yb = X[i:i+batch], y[i:i+batch]\n"
     "        w -= lr * 2 * xb.T @ (xb @ w - yb) / len(xb)\n"
     "loss = float(np.mean((X @ w - y) ** 2))", []),
    ("print(f'loss={loss:.6f}')", ["pipeline-metrics"]),
]
SWEEP = {"lr": [0.01, 0.001], "batch": [16, 64]}


def _training(folder: Path, sleep: float = 0) -> Path:
    """The training-like notebook; its loading cell counts its runs in folder/../loads.log."""
    loads = str(folder.parent / "loads.log")
    cells = [(code.replace("{sleep}", str(sleep)).replace("{loads!r}", repr(loads)), tags)
             for code, tags in TRAINING]
    return _notebook(folder, cells, "train.ipynb")


def _check_sweep(path: Path, tmp_path: Path) -> dict[str, int]:
    """The four executed notebooks equal papermill's four runs; how often each step ran."""
    results = _last_run(path)
    notebooks = sorted(results.glob("*.executed.ipynb"))
    assert len(notebooks) == 4
    for lr in SWEEP["lr"]:
        for batch in SWEEP["batch"]:
            (executed,) = [n for n in notebooks if f"@lr={lr},batch={batch}." in n.name]
            reference = _papermill(path, tmp_path / f"pm-{lr}-{batch}.ipynb",
                                   {"lr": lr, "batch": batch})
            assert _cells(executed) == reference, executed.name
    summary = (results / "sweep-summary.csv").read_text().splitlines()
    assert summary[0] == "lr,batch,reported,executed notebook" and len(summary) == 5
    assert all("loss=" in line for line in summary[1:])
    names = []
    for database in (path.parent / "train-wf" / ".streamflow").glob("sqlite.sweep-*.db"):
        with sqlite3.connect(database) as db:  # one StreamFlow run per combination
            names += [row[0] for row in db.execute(
                "SELECT step.name FROM execution JOIN step ON execution.step = step.id")]
    runs: dict[str, int] = {}
    for name in names:
        runs[name] = runs.get(name, 0) + 1
    # the papermill runs above count too: the workflow's loading step ran once
    assert (path.parent.parent / "loads.log").read_text().count("loaded") == 1 + 4
    return runs


@pytest.mark.streamflow
def test_a_sweep_runs_every_combination_and_loads_the_data_once(tmp_path: Path,
                                                                capsys) -> None:
    path = _training(tmp_path / "wf")
    capsys.readouterr()
    assert _run(path, "-p", "lr", "0.01", "-p", "lr", "0.001", "-p", "batch", "16", "-p",
                "batch", "64", "--sweep") == 0
    out = capsys.readouterr().out
    assert "lr     batch  reported" in out and "loss=" in out
    runs = _check_sweep(path, tmp_path)
    training = [n for n in runs if "cells_4" in n or "cell_4" in n]
    assert training and all(runs[n] == 4 for n in training), runs


@pytest.mark.streamflow
def test_a_dotproduct_sweep_from_a_sweep_file(tmp_path: Path) -> None:
    path = _training(tmp_path / "wf")
    (tmp_path / "sweep.yml").write_text("lr: [0.01, 0.001]\nbatch: [16, 64]\n")
    assert _run(path, "--sweep-file", str(tmp_path / "sweep.yml"), "--sweep-method",
                "dotproduct") == 0
    names = sorted(p.name for p in _last_run(path).glob("*.executed.ipynb"))
    assert names == ["train@lr=0.001,batch=64.executed.ipynb",
                     "train@lr=0.01,batch=16.executed.ipynb"]


@pytest.mark.slurm
@pytest.mark.streamflow
def test_a_sweep_on_slurm_runs_the_combinations_as_parallel_jobs(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    path = _training(tmp_path / "wf", sleep=3)
    profile = tuned_profile("slurm", tmp_path / "slurm.yml", pollingInterval=1,
                            maxConcurrentJobs=4)
    before = set(slurm_cluster.completed_jobs())
    assert _run(path, "-p", "lr", "0.01", "-p", "lr", "0.001", "-p", "batch", "16", "-p",
                "batch", "64", "--sweep", "--deployment", "slurm", "--deployment-file",
                str(profile)) == 0
    _check_sweep(path, tmp_path)
    jobs = [fields for job, fields in slurm_cluster.completed_jobs().items()
            if job not in before]
    assert all(f["JobState"] == "COMPLETED" for f in jobs)
    # per combination: loading (one runs, the others reuse it), training, assembly
    assert len(jobs) == 4 * 3

    def span(fields: dict[str, str]) -> tuple[datetime, datetime]:
        return (datetime.fromisoformat(fields["StartTime"]),
                datetime.fromisoformat(fields["EndTime"]))

    long = sorted((span(f) for f in jobs if (lambda s: (s[1] - s[0]).total_seconds())(span(f))
                   >= 3), key=lambda s: s[0])
    assert len(long) == 4  # the four training jobs (each sleeps 3 s)
    assert any(long[i + 1][0] < long[i][1] for i in range(3)), long  # side by side
    assert not slurm_cluster.queued_jobs()


KALE = [
    ("import numpy as np", ["imports"]),
    ("def double(x):\n    return 2 * x", ["functions"]),
    ("size = 5", ["pipeline-parameters"]),
    ("data = np.arange(size)", ["step:load"]),
    ("data = data * 1.0", []),  # untagged: part of step load, as in Kale
    ("print('this cell is skipped')", ["skip"]),
    ("result = double(data).sum()", ["step:train", "prev:load", "limit:nvidia.com/gpu:1"]),
    ("extra = data.max()", ["step:report", "prev:train"]),
    ("print(result, extra)", ["pipeline-metrics"]),
]


def test_kale_tags_are_honoured(tmp_path: Path) -> None:
    path = _notebook(tmp_path, KALE, "kale.ipynb")
    workflow = compile_notebook(str(path))
    assert [p.name for p in workflow.parameters] == ["size"]
    steps = {s.name: s for s in workflow.steps}
    assert [c.index for c in steps["step_load"].cells] == [3, 4]
    assert 5 not in {c.index for s in workflow.steps for c in s.cells}  # skip
    assert steps["step_train"].resources.gpus == 1
    assert steps["step_train"].depends_on() == ("step_load",)
    prev = [d.message for d in workflow.diagnostics if d.code == "kale-prev"]
    # report reads data (from load), not anything from train: nb2cwl says so
    assert len(prev) == 1 and "step report follows train" in prev[0] and "load" in prev[0]


@pytest.mark.streamflow
def test_a_kale_notebook_runs_as_jupyter_runs_it(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "wf", [(c, [t for t in tags if not t.startswith("limit:")])
                                       for c, tags in KALE], "kale.ipynb")
    reference = nbformat.read(path, as_version=4)
    reference.cells[5].source = ""  # Kale skips it; so does nb2cwl
    shutil.copyfile(path, tmp_path / "copy.ipynb")
    nbformat.write(reference, tmp_path / "copy.ipynb")
    expected = _papermill(tmp_path / "copy.ipynb", tmp_path / "pm.ipynb", {})
    assert _run(path) == 0
    executed = _cells(_executed(path))
    assert executed[8] == expected[8] == [("stream", "stdout", "20.0 4.0\n")]


@pytest.mark.streamflow
def test_the_bundle_lists_the_parameters_as_formal_parameters(tmp_path: Path) -> None:
    import zipfile

    path = _notebook(tmp_path, TYPES)
    bundle = tmp_path / "b.zip"
    assert main(["export", str(path), "-o", str(bundle)]) == 0
    with zipfile.ZipFile(bundle) as archive:
        crate = json.loads(archive.read("ro-crate-metadata.json"))
    entities = {e["@id"]: e for e in crate["@graph"]}
    rate = entities["#input-learning_rate"]
    assert rate["@type"] == "FormalParameter" and rate["additionalType"] == "Float"
    assert rate["defaultValue"] == "0.001" and "In [2], line" in rate["description"]
    assert entities["#input-data_file"]["additionalType"] == "File"


def test_the_graph_shows_the_inputs(tmp_path: Path) -> None:
    path = _notebook(tmp_path, TYPES)
    assert main(["graph", str(path), "-o", str(tmp_path / "g.mmd")]) == 0
    text = (tmp_path / "g.mmd").read_text()
    assert "learning_rate: double" in text and "= 0.001" in text


def test_an_empty_kale_block_tag_continues_the_step_before(tmp_path: Path) -> None:
    path = _notebook(tmp_path, [("x = 1", ["block:first"]), ("y = x + 1", ["block:"]),
                                ("print(y)", ["block:second", "prev:first"])], "blocks.ipynb")
    steps = {s.name: [c.index for c in s.cells] for s in compile_notebook(str(path)).steps}
    assert steps == {"step_first": [0, 1], "step_second": [2]}
