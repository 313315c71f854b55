"""The step runtime as one zip (backends/runtime_archive.py): the sources, and the code this
interpreter compiled from them, which Python uses when its version matches (else the
source); an output folder's zip is written again as it was while its sources are unchanged."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from nb2cwl.backends.naming import RUNTIME_ARCHIVE, RUNTIME_PACKAGE, RUNTIME_SOURCE
from nb2cwl.backends.runtime_archive import write_runtime_archive
from nb2cwl.runtime.forkclient import _as_json
from nb2cwl.runtime.sources import runtime_sources

_PROBE = ("import sys; sys.path.insert(0, sys.argv[1]); from nb2cwl_runtime import naming_probe; "
          "print(naming_probe.WHO)")


def _with_probe(archive: Path, source: bytes, compiled_from: bytes | None,
                magic: bytes = importlib.util.MAGIC_NUMBER) -> None:
    """Add a module naming_probe whose .py says one thing and whose .pyc another."""
    with zipfile.ZipFile(archive, "a") as zipped:
        zipped.writestr(f"{RUNTIME_PACKAGE}/naming_probe.py", source)
        if compiled_from is not None:
            code = compile(compiled_from, "naming_probe.py", "exec")
            import marshal

            zipped.writestr(f"{RUNTIME_PACKAGE}/naming_probe.pyc",
                            magic + (1).to_bytes(4, "little")
                            + importlib.util.source_hash(source) + marshal.dumps(code))


def test_the_zip_holds_the_sources_and_their_code(tmp_path: Path) -> None:
    archive = tmp_path / RUNTIME_ARCHIVE
    write_runtime_archive(archive)
    with zipfile.ZipFile(archive) as zipped:
        names = set(zipped.namelist())
        modules = sorted(p.name for p in RUNTIME_SOURCE.glob("*.py"))
        assert names == {f"{RUNTIME_PACKAGE}/{m}{s}" for m in modules for s in ("", "c")}
        assert all(zipped.read(f"{RUNTIME_PACKAGE}/{m}c")[:4] == importlib.util.MAGIC_NUMBER
                   for m in modules)
    assert runtime_sources(str(archive)) == {p.name: p.read_bytes()
                                            for p in RUNTIME_SOURCE.glob("*.py")}


def test_python_runs_the_zips_code_and_falls_back_to_the_source(tmp_path: Path) -> None:
    """What the design relies on: zipimport takes NAME.pyc when its magic number is this
    interpreter's (without checking it against the source), else compiles NAME.py."""
    for case, magic, expected in [("ours", importlib.util.MAGIC_NUMBER, "compiled"),
                                  ("other", b"\x00\x00\r\n", "source")]:
        archive = tmp_path / f"{case}.zip"
        write_runtime_archive(archive)
        _with_probe(archive, b"WHO = 'source'\n", b"WHO = 'compiled'\n", magic)
        done = subprocess.run([sys.executable, "-I", "-S", "-c", _PROBE, str(archive)],
                              capture_output=True, text=True, check=True)
        assert done.stdout.strip() == expected, case


def test_an_unchanged_runtime_keeps_the_zip_and_another_python_rebuilds_it(
        tmp_path: Path) -> None:
    first = tmp_path / "first.zip"
    write_runtime_archive(first)
    again = tmp_path / "again.zip"
    write_runtime_archive(again, first.read_bytes())
    assert again.read_bytes() == first.read_bytes()
    other = io.BytesIO()  # the same sources, compiled by another Python version
    with zipfile.ZipFile(first) as source, zipfile.ZipFile(other, "w") as changed:
        for entry in source.namelist():
            data = source.read(entry)
            changed.writestr(entry, b"\x00\x00\r\n" + data[4:] if entry.endswith("c") else data)
    rebuilt = tmp_path / "rebuilt.zip"
    write_runtime_archive(rebuilt, other.getvalue())
    with zipfile.ZipFile(rebuilt) as zipped:
        assert zipped.read(f"{RUNTIME_PACKAGE}/step.pyc")[:4] == importlib.util.MAGIC_NUMBER
    assert not list(tmp_path.glob(".*"))  # no partial file left


_ANALYSIS = [  # a data scientist's notebook: magics, pandas, a figure, the kernel's own magics
    "%matplotlib inline\n%precision 3\nimport numpy as np\nimport pandas as pd\n"
    "import matplotlib.pyplot as plt",
    "rng = np.random.default_rng(1)\nsales = pd.DataFrame({'region': rng.choice(['n', 's', 'e'],"
    " 60), 'amount': rng.gamma(2.0, 40.0, 60).round(2)})\nsales.describe()",
    "by_region = sales.groupby('region')['amount'].agg(['count', 'mean', 'max'])\n"
    "print(by_region.round(2))\nnp.pi",
    "fig, ax = plt.subplots(figsize=(4, 3))\nby_region['mean'].plot.bar(ax=ax)\n"
    "ax.set_title('mean amount by region')",
    "names = %who_ls DataFrame\n!echo regions: {len(by_region)}\nnames",
]


@pytest.mark.streamflow
def test_a_notebook_runs_as_in_jupyter_from_the_server_and_from_the_zip(tmp_path: Path) -> None:
    """Every cell gives nbclient's outputs when its step is forked from the warm step server
    (`nb2cwl run`) and when it starts on its own, importing the runtime's compiled code from
    the zip (a plain `streamflow run` of the same workflow)."""
    import os
    import sys

    import nbformat
    from equivalence import per_cell, run_with_nbclient, run_with_workflow

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in _ANALYSIS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    source = tmp_path / "sales.ipynb"
    nbformat.write(nb, source)
    jupyter = run_with_nbclient(source, tmp_path / "jupyter")
    served, _ = run_with_workflow(source, tmp_path / "workflow", "--granularity", "cell")
    assert served == jupyter
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env.pop("NB2CWL_STEP_SERVER", None)
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "streamflow"), "run",
                           "--outdir", str(tmp_path / "plain"),
                           str(tmp_path / "workflow" / "wf" / "streamflow.yml")],
                          env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path / "workflow")
    assert done.returncode == 0, done.stdout[-2000:]
    plain = nbformat.read(tmp_path / "plain" / "sales.executed.ipynb", as_version=4)
    assert per_cell(plain) == jupyter


@pytest.mark.parametrize("value", [
    {"env": {"A": "x\"\\\n\t\u2028\x00", "B": "é中\udcff"}, "argv": ["--runtime", ""], "e": []},
    {"k": []}, {}, ["a", ["b", {"c": "d"}]],
])
def test_the_step_clients_request_is_what_json_writes(value: object) -> None:
    """The client builds its JSON without the json module; the server reads it with json."""
    assert _as_json(value) == json.dumps(value)
    assert json.loads(_as_json(value)) == value
