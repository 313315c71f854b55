"""`nb2cwl check`: equal notebooks pass, real differences and nondeterminism are reported with
the cell, the report travels into bundles, and `nb2cwl NOTEBOOK` alone compiles beside it."""

from __future__ import annotations

import hashlib
import json
import pickle
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli import notebook

from nb2cwl.checking.compare import compare, entries
from nb2cwl.checking.normalise import normalised
from nb2cwl.cli import main

pytestmark = pytest.mark.streamflow


def _check(path: Path, capsys, *options: str) -> tuple[int, dict]:
    capsys.readouterr()
    status = main(["check", str(path), "--json", *options])
    return status, json.loads(capsys.readouterr().out)


def test_an_equal_notebook_passes(tmp_path: Path, capsys) -> None:
    path = notebook(tmp_path / "ok.ipynb", [
        "import numpy as np\nnp.set_printoptions(precision=2)\nx = np.arange(3) / 3",
        "print(x)\nx", "%time y = x.sum()", "print(round(float(y), 3))"])
    status, report = _check(path, capsys)
    assert status == 0 and report["equal"]
    assert [c["verdict"] for c in report["cells"]] == ["equal"] * 4  # one per code cell
    assert (tmp_path / "ok-wf" / "runs" / "1" / "nb2cwl-check.json").is_file()


def test_package_installs_run_where_the_steps_run_as_in_the_kernel(tmp_path: Path) -> None:
    """`%pip install` and `!pip install` run in the step, into its environment, as they run
    in the kernel's: the same outputs, said once as the run starts (no network here:
    --no-index, of a package both environments have)."""
    path = notebook(tmp_path / "pip.ipynb", [
        "%pip install --no-index cloudpickle", "!pip install --no-index cloudpickle",
        "import cloudpickle\nprint(cloudpickle.__name__)"])
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "check", str(path), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert [c["verdict"] for c in report["cells"]] == ["equal"] * 3
    run = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(path), "--quiet"],
                         capture_output=True, text=True, timeout=600)
    warned = [line for line in run.stderr.splitlines() if "[installs-packages]" in line]
    assert len(warned) == 2 and "installs packages where the step runs" in warned[0], run.stderr


def test_a_value_corrupted_between_steps_is_named(tmp_path: Path, capsys) -> None:
    """The rerun cache hands on a value that is not what its cell computed (corrupted on disk
    after the first run): the check names the cell that printed it and the boundary."""
    path = notebook(tmp_path / "c.ipynb", ["x = 21", "print(x * 2)"])
    one_per_cell = ("--granularity", "cell")
    assert _check(path, capsys, *one_per_cell)[0] == 0
    cache = tmp_path / "c-wf" / ".nb2cwl-cache"
    producers = [entry for entry in cache.iterdir() if (entry / "out" / "values" / "x.pkl")
                 .is_file()]
    (producer,) = producers
    (producer / "out" / "values" / "x.pkl").write_bytes(pickle.dumps(22))
    # ... and its record too (as a step that computed 22 would have kept it): a damaged entry
    # with its record intact is discarded instead (test_cache_integrity.py)
    record = json.loads((producer / "complete").read_text())
    record["files"]["values/x.pkl"] = hashlib.sha256(pickle.dumps(22)).hexdigest()
    (producer / "complete").write_text(json.dumps(record))
    for entry in cache.iterdir():
        if entry != producer:
            shutil.rmtree(entry)
    status, report = _check(path, capsys, *one_per_cell)
    assert status == 1 and not report["equal"]
    differing = [c for c in report["cells"] if c["verdict"] == "differs"]
    assert [c["index"] for c in differing] == [2]
    assert "42" in differing[0]["diff"] and "44" in differing[0]["diff"]
    assert differing[0]["step"] == "cell_2"
    assert differing[0]["loaded"] == ["x from In [1] (step cell_1)"]  # as Jupyter numbers it
    assert "nb2cwl:step=" in differing[0]["suggestion"]


def test_unseeded_randomness_differs_unless_repeated(tmp_path: Path, capsys) -> None:
    path = notebook(tmp_path / "r.ipynb", ["import random\nprint(random.random())",
                                           "print('stable')"])
    status, report = _check(path, capsys)
    assert status == 1
    assert [c["verdict"] for c in report["cells"]] == ["differs", "equal"]
    status, report = _check(path, capsys, "--repeat")
    assert status == 0
    assert [c["verdict"] for c in report["cells"]] == ["nondeterministic", "equal"]


def test_text_report_and_tolerance(tmp_path: Path, capsys) -> None:
    path = notebook(tmp_path / "t.ipynb", ["import time\nprint(round(time.time() % 1, 1) * 0)",
                                           "print(1.0)"])
    capsys.readouterr()
    assert main(["check", str(path), "--rtol", "1e-9"]) == 0
    out = capsys.readouterr().out
    assert "relative tolerance" in out and "cell   1" in out
    # both times, their ratio, and what the workflow gained or lost against the kernel
    assert re.search(r"time: [\d.]+ s as a workflow, [\d.]+ s in a Jupyter kernel top to "
                     r"bottom \(its start included\): [\d.]+x, [\d.]+ s (gained|slower)\n",
                     out), out


def test_the_report_travels_into_the_bundle(tmp_path: Path, capsys) -> None:
    path = notebook(tmp_path / "b.ipynb", ["x = 1", "print(x)"])
    assert _check(path, capsys)[0] == 0
    bundle = tmp_path / "b.zip"
    assert main(["export", str(path), "--with-run", str(tmp_path / "b-wf"), "-o",
                 str(bundle)]) == 0
    with zipfile.ZipFile(bundle) as archive:
        report = json.loads(archive.read("run/nb2cwl-check.json"))
        crate = json.loads(archive.read("ro-crate-metadata.json"))
    assert report["equal"]
    assert any(e.get("@id") == "run/nb2cwl-check.json" for e in crate["@graph"])


def test_compile_without_output_writes_beside_the_notebook(tmp_path: Path, capsys) -> None:
    path = notebook(tmp_path / "first.ipynb", ["x = 2", "print(x + 1)"])
    capsys.readouterr()
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    config = tmp_path / "first-wf" / "streamflow.yml"
    assert str(config) in out and "nb2cwl run" in out
    done = subprocess.run([str(Path(sys.executable).parent / "streamflow"), "run", str(config),
                           "--outdir", str(tmp_path / "results")], capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    executed = json.loads((tmp_path / "results" / "first.executed.ipynb").read_text())
    assert executed["cells"][2]["outputs"][0]["text"] == "3\n"


_STREAM = st.tuples(st.sampled_from(["stdout", "stderr"]), st.text(max_size=20))
_OUTPUT = st.one_of(
    _STREAM.map(lambda s: {"output_type": "stream", "name": s[0], "text": s[1]}),
    st.text(max_size=20).map(lambda t: {"output_type": "execute_result",
                                        "data": {"text/plain": t}, "metadata": {}}),
    st.tuples(st.sampled_from(["ValueError", "KeyError"]), st.text(max_size=10)).map(
        lambda e: {"output_type": "error", "ename": e[0], "evalue": e[1], "traceback": []}))


@pytest.mark.filterwarnings("ignore")
@settings(max_examples=300, deadline=None)
@given(st.lists(_OUTPUT, max_size=4), st.lists(_OUTPUT, max_size=4))
def test_equal_only_when_the_normalised_outputs_are(left: list, right: list) -> None:
    a, b = entries(left), entries(right)
    assert compare(a, b).equal == (a == b)
    assert compare(a, a).equal


def test_normalisation_is_only_what_varies_by_nature() -> None:
    assert normalised("<obj at 0x7f00ab>") == "<obj at 0xADDR>"
    assert normalised("CPU times: user 1 ms\nWall time: 2 ms\n") == (
        "CPU times: <time>\nWall time: <time>\n")
    assert normalised("/tmp/ipykernel_4242/123.py:1: Warning") == (
        "<tmp>/ipykernel_PID/123.py:1: Warning")
    assert normalised(" 10%\r 50%\r100%\n") == "100%\n"
    assert normalised("100%|##| 5/5 [00:00<00:00, 16474.09it/s]\n 20%|#| 1/5 [01:02<?, "
                      "?it/s]") == "100%|##| 5/5 [<time>]\n 20%|#| 1/5 [<time>]"
    assert normalised("5/5 [00:01<00:00, 5.00it/s, loss=0.31]") == "5/5 [<time>, loss=0.31]"
    svg = ('<dc:date>2026-01-01T00:00:00</dc:date><path id="m49509f6386" d="M 0 0"/>'
           '<use xlink:href="#m49509f6386"/><g clip-path="url(#p0a1b2c3d4e)">')
    assert normalised(svg) == ('<dc:date>DATE</dc:date><path id="mSALTED" d="M 0 0"/>'
                               '<use xlink:href="#mSALTED"/><g clip-path="url(#pSALTED)">')
    assert normalised("0.30000000000000004") == "0.30000000000000004"  # numbers: exact


def test_an_svg_figure_is_compared_as_normalised_text() -> None:
    def figure(salt: str) -> list:
        return [{"output_type": "display_data", "data": {
            "image/svg+xml": f'<path id="m{salt}"/><use xlink:href="#m{salt}"/>',
            "image/png": "iVBORw0KGgo="}}]
    assert compare(entries(figure("49509f6386")), entries(figure("9b33bd847f"))).equal
