"""Reproducible bundles: `nb2cwl export` and `nb2cwl verify`, checked with real tools.

The rerun test makes one fresh virtual environment per test session from the bundles' own
locks (the three locks pin the same versions, which the test checks), installs them from the
package index, and reruns each bundle there with StreamFlow, in a folder far from the notebook.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import NOTEBOOKS
from ruamel.yaml import YAML

from nb2cwl.cli import main

BIN = Path(sys.executable).parent
DATA = Path(__file__).resolve().parent / "data"
RERUN = ("random_numbers.ipynb", "files_write_read.ipynb", "example.ipynb")
CONTEXT_URL = "https://w3id.org/ro/crate/1.1/context"


# --- helpers ---------------------------------------------------------------------------------

def _external_notebook(folder: Path) -> Path:
    """A notebook reading a file and a folder beside it, and drawing unseeded numbers."""
    import nbformat

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "table.csv").write_text("a,b\n1,2\n3,4\n")
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / "one.txt").write_text("hello\n")
    (folder / "data" / "two.txt").write_text("world\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell('rows = open("table.csv").read().splitlines()\n'
                                  "print(len(rows))", id="read-table"),
        nbformat.v4.new_code_cell("import glob\ntexts = [open(p).read().strip() for p in "
                                  "sorted(glob.glob('data/*.txt'))]\nprint(texts)",
                                  id="read-folder"),
        nbformat.v4.new_code_cell("import random\nprint(rows[-1], texts, random.random(), "
                                  "hash('nb2cwl'))", id="combine"),
    ]
    path = folder / "ext.ipynb"
    nbformat.write(nb, path)
    return path


def _export(notebook: Path, output: Path, *extra: str) -> None:
    assert main(["export", str(notebook), "-o", str(output), *extra]) == 0


def _unzip(bundle: Path, target: Path) -> Path:
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(target)
    return target


def _sums(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _streamflow(streamflow: Path, config: str, outdir: Path, cwd: Path, path_bin: Path
                ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = str(path_bin) + os.pathsep + env.get("PATH", "")
    env.pop("NB2CWL_CACHE_DIR", None)
    return subprocess.run([str(streamflow), "run", config, "--outdir", str(outdir)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def _steps_executed(bundle: Path) -> set[str]:
    with sqlite3.connect(bundle / ".streamflow" / "sqlite.db") as connection:
        rows = connection.execute("SELECT step.name FROM execution "
                                  "JOIN step ON execution.step = step.id").fetchall()
    return {name.strip("/") for (name,) in rows}


def _step_command(bundle: Path, step: str) -> list[str]:
    """The command StreamFlow runs for a step without value inputs, with the bundle's files."""
    tool = YAML(typ="safe").load((bundle / "tools" / f"{step}.cwl").read_text())
    seal = json.loads((bundle / "nb2cwl-seal.json").read_text())
    ports = seal["steps"][step]
    command = [*tool["baseCommand"], "--nb2cwl-seal", str(bundle / "nb2cwl-seal.json"),
               str(bundle / ports[""])]
    for flag, rel in sorted(ports.items()):
        if flag:
            command += [flag, str(bundle / rel)]
    return command


@pytest.fixture(scope="module")
def ext_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("ext")
    notebook = _external_notebook(work / "project")
    output = work / "ext-bundle.zip"
    _export(notebook, output, "--license", "Apache-2.0", "--author", "A. Tester")
    return output


# --- the bundle's contents -------------------------------------------------------------------

def test_bundle_cwl_has_no_random_names(ext_bundle: Path) -> None:
    with zipfile.ZipFile(ext_bundle) as archive:
        texts = [archive.read(n).decode() for n in archive.namelist() if n.endswith(".cwl")]
    assert texts and not any("name: _:" in text for text in texts)  # the same every export


def test_bundle_holds_everything_to_rerun(ext_bundle: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(ext_bundle) as archive:
        names = set(archive.namelist())
    assert {"ro-crate-metadata.json", "streamflow.yml", "workflow.cwl", "workflow.packed.cwl",
            "job.yml", "CHECKSUMS.sha256", "nb2cwl-seal.json", "nb2cwl-map.json",
            "notebook/ext.ipynb", "environment/requirements.txt", "environment/lock.json",
            "environment/seeds.json", "environment/Dockerfile", "README.md",
            "inputs/table.csv", "inputs/data/one.txt", "inputs/data/two.txt",
            "tools/nb2cwl_verify.cwl", "nb2cwl_runtime.zip"} <= names
    bundle = _unzip(ext_bundle, tmp_path / "b")
    # job.yml names only files inside the bundle
    job = YAML(typ="safe").load((bundle / "job.yml").read_text())
    for value in job.values():
        if isinstance(value, dict) and "path" in value:
            assert not os.path.isabs(value["path"]) and ".." not in value["path"]
            assert (bundle / value["path"]).exists(), value
    # every file but the list itself is in CHECKSUMS.sha256, in sha256sum's format
    listed = {}
    for line in (bundle / "CHECKSUMS.sha256").read_text().splitlines():
        digest, _, rel = line.partition("  ")
        listed[rel] = digest
    actual = _sums(bundle)
    actual.pop("CHECKSUMS.sha256")
    assert listed == actual
    # the map: cells by number and id to steps, variables to what carries them
    cell_map = json.loads((bundle / "nb2cwl-map.json").read_text())
    cells = {c["id"]: c for c in cell_map["cells"]}
    assert cells["read-table"]["step"] == "cell_0" and cells["read-table"]["index"] == 0
    assert cell_map["cell_to_step"]["0"] == "cell_0"
    rows = next(v for v in cell_map["variables"] if v["var"] == "rows")
    assert rows["carried_by"]["output"] == "cell_0/values"
    table = next(f for f in cell_map["files"] if f["path"] == "table.csv")
    assert table["bundle_path"] == "inputs/table.csv"
    # seeds: unseeded draws are named, and reruns start from a recorded state
    seeds = json.loads((bundle / "environment" / "seeds.json").read_text())
    assert seeds["python_hash_seed"] == "0" and seeds["start"]["random"] == 0
    assert [d["cells"] for d in seeds["unseeded_draws"]] == [[2]]


def test_lock_pins_the_imports_and_the_runtime(ext_bundle: Path, tmp_path: Path) -> None:
    from importlib.metadata import version

    bundle = _unzip(ext_bundle, tmp_path / "b")
    lines = (bundle / "environment" / "requirements.txt").read_text().splitlines()
    pins = dict(line.split("==") for line in lines if line and not line.startswith("#"))
    assert pins["streamflow"] == "0.2.0rc3"
    assert pins["cloudpickle"] == version("cloudpickle")
    assert pins["ipython"] == version("ipython")
    lock = json.loads((bundle / "environment" / "lock.json").read_text())
    assert lock["python"]["version"] == platform.python_version()
    assert lock["unresolved_imports"] == []
    # the example notebook imports numpy, pandas, matplotlib: each pinned, with the reason
    from nb2cwl.api import compile_notebook
    from nb2cwl.backends.environment_lock import lock_environment, notebook_imports

    workflow = compile_notebook(str(NOTEBOOKS / "example.ipynb"))
    assert {"numpy", "pandas", "matplotlib"} <= set(notebook_imports(workflow))
    example = {p.name: p for p in lock_environment(workflow).packages}
    for name in ("numpy", "pandas", "matplotlib"):
        assert example[name].version == version(name)
        assert f"imported as {name}" in example[name].reasons


def test_bundle_validates_with_cwltool_and_streamflow(ext_bundle: Path, tmp_path: Path) -> None:
    bundle = _unzip(ext_bundle, tmp_path / "b")
    for document in ("workflow.cwl", "workflow.packed.cwl"):
        result = subprocess.run([str(BIN / "cwltool"), "--validate", str(bundle / document)],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-2000:]
    result = subprocess.run([str(BIN / "streamflow"), "run", "--validate", "streamflow.yml"],
                            capture_output=True, text=True, cwd=bundle)
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]


def test_packing_from_many_threads_at_once_gives_whole_files(tmp_path: Path) -> None:
    """The Jupyter server packs a run's workflow as it starts and again when it is downloaded,
    each in its own thread: every packed file is whole and the same as one packed alone."""
    from concurrent.futures import ThreadPoolExecutor

    from nb2cwl.backends.bundle import write_packed

    notebook = _external_notebook(tmp_path / "project")
    assert main([str(notebook), "-o", str(tmp_path / "out"), "--granularity", "cell"]) == 0
    workflow = tmp_path / "out" / "workflow.cwl"
    write_packed(workflow, tmp_path / "alone.cwl")
    alone = (tmp_path / "alone.cwl").read_text()
    targets = [tmp_path / "packed" / f"{i % 4}.cwl" for i in range(24)]  # some share a target
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda target: write_packed(workflow, target), targets))
    assert sorted(p.name for p in (tmp_path / "packed").iterdir()) == [f"{i}.cwl" for i in range(4)]
    for target in set(targets):
        assert target.read_text() == alone


def test_export_never_overwrites_without_force(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    notebook = tmp_path / "linear_pipeline.ipynb"
    shutil.copy(NOTEBOOKS / "linear_pipeline.ipynb", notebook)
    output = tmp_path / "mine.zip"
    output.write_text("the user's own file")
    assert main(["export", str(notebook), "-o", str(output)]) == 1
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "already exists" in error and "--force" in error
    assert output.read_text() == "the user's own file"
    assert main(["export", str(notebook), "-o", str(tmp_path / "bundle.tar")]) == 1
    assert "zip" in capsys.readouterr().err
    assert main(["export", str(notebook), "-o", str(output), "--force"]) == 0
    assert zipfile.is_zipfile(output)


def test_with_run_needs_a_completed_run(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    notebook = tmp_path / "linear_pipeline.ipynb"
    shutil.copy(NOTEBOOKS / "linear_pipeline.ipynb", notebook)
    assert main([str(notebook), "-o", str(tmp_path / "wf")]) == 0
    capsys.readouterr()
    code = main(["export", str(notebook), "--with-run", str(tmp_path / "wf"),
                 "-o", str(tmp_path / "b.zip")])
    assert code == 1 and "run it first" in capsys.readouterr().err
    code = main(["export", str(notebook), "--with-run", str(tmp_path), "-o",
                 str(tmp_path / "b.zip")])
    assert code == 1 and "not a directory nb2cwl compiled" in capsys.readouterr().err
    assert not (tmp_path / "b.zip").exists()


# --- the crate -------------------------------------------------------------------------------

def _offline_validator_cache(cache: Path) -> None:
    """Serve the RO-Crate 1.1 JSON-LD context from tests/data to roc-validator's HTTP cache.

    The validator fetches the context from the web; these machines reach no web. The copy is
    ro-crate-py 0.15's `rocrate/data/ro-crate.jsonld`, the RO-Crate 1.1 context (CC0).
    """
    import requests
    from requests_cache import CachedSession
    from urllib3 import HTTPResponse

    body = (DATA / "ro-crate-1.1-context.jsonld").read_bytes()
    headers = {"Content-Type": "application/ld+json"}
    response = requests.Response()
    response.status_code = 200
    response.raw = HTTPResponse(body=io.BytesIO(body), headers=headers, status=200,
                                preload_content=False, request_url=CONTEXT_URL)
    response._content = body
    response.url = CONTEXT_URL
    response.headers = requests.structures.CaseInsensitiveDict(headers)
    response.encoding = "utf-8"
    response.request = requests.Request("GET", CONTEXT_URL).prepare()
    session = CachedSession(cache_name=str(cache), backend="sqlite", expire_after=-1)
    session.cache.save_response(response)
    session.close()


def _validate(crate: Path, cache: Path, severity: str) -> list[tuple[str, str]]:
    from rocrate_validator import models, services

    settings = services.ValidationSettings(
        rocrate_uri=str(crate), profile_identifier="workflow-ro-crate-1.0",
        requirement_severity=models.Severity[severity], offline=True, cache_path=cache,
        skip_availability_check=True)
    result = services.validate(settings)
    return sorted({(i.check.identifier, i.message) for i in result.get_issues()})


def test_crate_validates_against_workflow_ro_crate_profile(ext_bundle: Path,
                                                           tmp_path: Path) -> None:
    pytest.importorskip("rocrate_validator")
    cache = tmp_path / "http-cache"
    _offline_validator_cache(cache)
    bundle = _unzip(ext_bundle, tmp_path / "b")
    assert _validate(bundle, cache, "REQUIRED") == []
    recommended = {check for check, _ in _validate(bundle, cache, "RECOMMENDED")}
    # a publisher and the author's affiliation are not something nb2cwl can know
    assert recommended <= {"ro-crate-1.1_22.3", "ro-crate-1.1_30.2", "ro-crate-1.1_30.3"}
    # the validator does fail a crate that breaks the profile
    metadata = bundle / "ro-crate-metadata.json"
    graph = json.loads(metadata.read_text())
    for entity in graph["@graph"]:
        if entity["@id"] == "./":
            del entity["mainEntity"], entity["license"]
    metadata.write_text(json.dumps(graph))
    failed = {check for check, _ in _validate(bundle, cache, "REQUIRED")}
    assert "workflow-ro-crate-1.0_3.1" in failed and "ro-crate-1.1_8.3" in failed


def test_crate_loads_with_ro_crate_py(ext_bundle: Path, tmp_path: Path) -> None:
    from rocrate.rocrate import ROCrate

    bundle = _unzip(ext_bundle, tmp_path / "b")
    crate = ROCrate(str(bundle))
    assert crate.mainEntity.id == "workflow.cwl"
    assert "ComputationalWorkflow" in crate.mainEntity.type
    assert "cwl" in crate.mainEntity["programmingLanguage"].id
    listed = {e.id for e in crate.data_entities}
    assert set(_sums(bundle)) - {"ro-crate-metadata.json"} <= listed
    assert crate.root_dataset["license"].id == "https://spdx.org/licenses/Apache-2.0"


# --- tampering -------------------------------------------------------------------------------

@pytest.mark.parametrize(("target", "change"), [
    ("steps/cell_0.py", "append"),
    ("nb2cwl_runtime.zip", "append to values.py"),
    ("inputs/data/one.txt", "append"),
    ("ro-crate-metadata.json", "append"),
    ("steps/__pycache__/cell_0.cpython-311.pyc", "add"),
    ("inputs/table.csv", "delete"),
])
def test_verify_names_the_tampered_file(ext_bundle: Path, tmp_path: Path, target: str,
                                        change: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    bundle = _unzip(ext_bundle, tmp_path / "b")
    assert main(["verify", str(bundle)]) == 0
    assert "verified" in capsys.readouterr().out
    path = bundle / target
    if change == "append":
        with path.open("a") as handle:
            handle.write("\n# changed\n")
    elif change.startswith("append to "):
        _append_in_zip(path, change.removeprefix("append to "), "\n# changed\n")
    elif change == "add":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"planted")
    else:
        path.unlink()
    assert main(["verify", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert f"nb2cwl: verify: {target}:" in err
    assert "failed verification" in err.splitlines()[-1]


def test_verify_after_the_bundles_own_instructions_tells_added_from_changed(
        ext_bundle: Path, tmp_path: Path) -> None:
    """The bundle's README makes .venv inside the bundle: `nb2cwl verify .` (a subprocess, in
    the bundle) still verifies it and names what was added in one line. A file added inside
    the bundle's folders or changed fails it, and a thousand problems print a summary."""
    bundle = _unzip(ext_bundle, tmp_path / "b")
    assert "-m venv .venv" in (bundle / "README.md").read_text()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", ".venv"], cwd=bundle,
                   check=True)
    (bundle / "results").mkdir()
    (bundle / "results" / "out.txt").write_text("a rerun's output\n")
    (bundle / "notes.txt").write_text("mine\n")
    verify = [sys.executable, "-m", "nb2cwl", "verify", "."]
    done = subprocess.run(verify, cwd=bundle, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (note,) = done.stderr.splitlines()
    assert note.startswith("nb2cwl: verify: note: added beside the bundle's files, "
                                     "not part of it and not read by it: .venv/ (")
    assert note.endswith("notes.txt, results/ (1 file)"), note
    (bundle / "steps" / "helper.py").write_text("planted\n")
    done = subprocess.run(verify, cwd=bundle, capture_output=True, text=True)
    assert done.returncode == 1
    assert "nb2cwl: verify: steps/helper.py: added inside the bundle (not in " \
           "CHECKSUMS.sha256)" in done.stderr.splitlines()
    for number in range(1000):
        (bundle / "steps" / f"planted{number}.py").write_text("x\n")
    done = subprocess.run(verify, cwd=bundle, capture_output=True, text=True)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 23, lines[:3]
    assert lines[20] == "nb2cwl: verify: ... and 981 more"
    assert lines[-1] == "nb2cwl: error: . failed verification: 1001 problem(s); do not run it"


def test_verify_digest_catches_a_rewritten_checksum_list(ext_bundle: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    bundle = _unzip(ext_bundle, tmp_path / "b")
    assert main(["verify", str(ext_bundle)]) == 0  # the zip itself
    digest = capsys.readouterr().out.strip().splitlines()[-1].split("sha256:")[1]
    assert main(["verify", str(bundle), "--digest", digest]) == 0
    capsys.readouterr()
    script = bundle / "steps" / "cell_0.py"
    script.write_text(script.read_text() + "\n# changed\n")
    sums = bundle / "CHECKSUMS.sha256"
    fixed = hashlib.sha256(script.read_bytes()).hexdigest()
    sums.write_text("".join(
        f"{fixed}  steps/cell_0.py\n" if line.endswith("  steps/cell_0.py") else line + "\n"
        for line in sums.read_text().splitlines()))
    assert main(["verify", str(bundle), "--digest", digest]) == 1
    assert "CHECKSUMS.sha256" in capsys.readouterr().err
    assert main(["verify", str(bundle)]) == 1  # the seal still holds the old sum
    assert "nb2cwl-seal.json" in capsys.readouterr().err


def test_a_step_checks_its_files_before_loading_anything(ext_bundle: Path,
                                                         tmp_path: Path) -> None:
    bundle = _unzip(ext_bundle, tmp_path / "b")
    command = _step_command(bundle, "cell_0")
    ok = tmp_path / "ok"
    ok.mkdir()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ok)
    assert result.returncode == 0, result.stderr
    assert (ok / "nb2cwl-out" / "report.json").is_file()  # the guard ran the step
    assert sorted(p.name for p in bundle.rglob("__pycache__")) == []  # and left it unchanged
    sentinel = tmp_path / "ran"
    planted = f"\nopen({str(sentinel)!r}, 'w').close()\n"
    cases = {  # (the file changed, and where in it) -> what the step names
        ("nb2cwl_runtime.zip", "values.py"): "nb2cwl_runtime.zip",
        ("steps/cell_0.py", ""): "steps/cell_0.py",
        ("nb2cwl_runtime.zip", "checksums.py"): "nb2cwl_runtime.zip",
        ("inputs/table.csv", ""): "inputs/table.csv",
    }
    for (target, module), named in cases.items():
        label = f"{target}-{module}".replace("/", "_")
        copy = _unzip(ext_bundle, tmp_path / f"t-{label}")
        if module:
            _append_in_zip(copy / target, module, planted)
        else:
            with (copy / target).open("a") as handle:
                handle.write("5,6\n" if target.endswith(".csv") else planted)
        work = tmp_path / f"w-{label}"
        work.mkdir()
        result = subprocess.run(_step_command(copy, "cell_0"), capture_output=True, text=True,
                                cwd=work)
        assert result.returncode == 1, target
        assert f"{named}: changed" in result.stderr, result.stderr
        assert not sentinel.exists() and not (work / "nb2cwl-out").exists(), target


def _append_in_zip(archive: Path, module: str, addition: str) -> None:
    """Rewrite the runtime's zip with `addition` at the end of its module `module`."""
    with zipfile.ZipFile(archive) as source:
        entries = [(entry, source.read(entry)) for entry in source.namelist()]
    with zipfile.ZipFile(archive, "w") as changed:
        for entry, data in entries:
            changed.writestr(entry, data + (addition.encode()
                                            if entry == f"nb2cwl_runtime/{module}" else b""))


# --- StreamFlow runs -------------------------------------------------------------------------

@pytest.mark.streamflow
def test_bundle_runs_elsewhere_and_stops_when_tampered(ext_bundle: Path,
                                                      tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    bundle = _unzip(ext_bundle, elsewhere / "x")
    result = _streamflow(BIN / "streamflow", "x/streamflow.yml", elsewhere / "out", elsewhere,
                         BIN)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    executed = json.loads((elsewhere / "out" / "ext.executed.ipynb").read_text())
    texts = ["".join(o.get("text", "") for o in c["outputs"]) for c in executed["cells"]]
    assert texts[0] == "3\n" and texts[1] == "['hello', 'world']\n"
    hashed = subprocess.run([sys.executable, "-c", "print(hash('nb2cwl'))"], text=True,
                            capture_output=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    # unseeded draws start from the bundle's seed 0, str hashes from PYTHONHASHSEED=0
    assert texts[2] == f"3,4 ['hello', 'world'] 0.8444218515250481 {hashed.stdout}"
    assert "PYTHONHASHSEED" not in result.stdout + result.stderr  # the guard did not warn
    assert main(["verify", str(bundle)]) == 0  # a run leaves the bundle as it was

    sentinel = tmp_path / "ran"
    for target, addition in (("steps/cell_2.py", f"open({str(sentinel)!r}, 'w').close()\n"),
                             ("inputs/table.csv", "5,6\n")):
        copy = _unzip(ext_bundle, tmp_path / target.replace("/", "_") / "x")
        with (copy / target).open("a") as handle:
            handle.write(addition)
        result = _streamflow(BIN / "streamflow", "x/streamflow.yml", copy.parent / "out",
                             copy.parent, BIN)
        log = result.stdout + result.stderr
        assert result.returncode != 0
        assert f"bundle check failed in step nb2cwl_verify: {target}: changed" in log
        assert not sentinel.exists()
        assert _steps_executed(copy) == {"nb2cwl_verify"}  # no cell ran
        assert not (copy.parent / "out" / "ext.executed.ipynb").exists()


@pytest.fixture(scope="module")
def original_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Each notebook run with `nb2cwl run`, then exported with --with-run."""
    runs = {}
    for name in RERUN:
        work = tmp_path_factory.mktemp(name.split(".")[0])
        notebook = work / name
        shutil.copy(NOTEBOOKS / name, notebook)
        out = work / "wf"
        assert main(["run", str(notebook), "-o", str(out), "--quiet"]) == 0
        bundle = work / "run-bundle.zip"
        _export(notebook, bundle, "--with-run", str(out))
        runs[name] = (out / "runs" / "1", bundle)
    return runs


@pytest.fixture(scope="module")
def fresh_env(original_runs: dict[str, tuple[Path, Path]],
              tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One new virtual environment from the bundles' locks (checked compatible)."""
    pins: dict[str, str] = {}
    for _, bundle in original_runs.values():
        with zipfile.ZipFile(bundle) as archive:
            text = archive.read("environment/requirements.txt").decode()
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, version = line.split("==")
                assert pins.setdefault(name, version) == version, f"{name}: locks disagree"
    folder = tmp_path_factory.mktemp("fresh")
    requirements = folder / "requirements.txt"
    requirements.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                             "--disable-pip-version-check", "-r", str(requirements)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return venv


@pytest.mark.streamflow
@pytest.mark.xdist_group("fresh_env")  # one worker builds the environment, once, for both
@pytest.mark.parametrize("name", RERUN)
def test_rerun_in_a_fresh_environment_gives_identical_outputs(
        name: str, original_runs: dict[str, tuple[Path, Path]], fresh_env: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results, bundle_zip = original_runs[name]
    bundle = _unzip(bundle_zip, tmp_path / "x")
    assert main(["verify", str(bundle)]) == 0
    # the fresh environment has exactly this bundle's lock, and no nb2cwl
    version = subprocess.run([str(fresh_env / "bin" / "python"), "-c",
                              "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True, cwd=tmp_path)
    lock = json.loads((bundle / "environment" / "lock.json").read_text())
    assert version.stdout.strip() == lock["python"]["version"]
    frozen = subprocess.run([str(fresh_env / "bin" / "python"), "-m", "pip", "freeze"],
                            capture_output=True, text=True, check=True).stdout
    for line in (bundle / "environment" / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            assert line.lower().replace("_", "-") in frozen.lower().replace("_", "-"), line
    assert "nb2cwl" not in frozen.lower()

    result = _streamflow(fresh_env / "bin" / "streamflow", "x/streamflow.yml",
                         tmp_path / "rerun", tmp_path, fresh_env / "bin")
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert _sums(tmp_path / "rerun") == _sums(results)  # bit for bit, every output
    capsys.readouterr()
    assert main(["verify", str(bundle), "--outputs", str(tmp_path / "rerun")]) == 0
    assert "match" in capsys.readouterr().out
    provenance = bundle / "run" / "provenance.crate.zip"
    with zipfile.ZipFile(provenance) as archive:
        crate = json.loads(archive.read("ro-crate-metadata.json"))
    profiles = {c["@id"] for e in crate["@graph"] if e["@id"] == "./" for c in e["conformsTo"]}
    assert "https://w3id.org/ro/wfrun/workflow/0.1" in profiles
