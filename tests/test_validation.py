"""Every generated workflow passes `cwltool --validate` and `streamflow run --validate`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NOTEBOOKS
from ruamel.yaml import YAML

from nb2cwl.api import compile_to_directory
from nb2cwl.options import CompileOptions

CASES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
BIN = Path(sys.executable).parent


def _compile(name: str, tmp_path: Path, granularity: str = "auto") -> Path:
    shutil.copy(NOTEBOOKS / name, tmp_path)
    out = tmp_path / "wf"
    compile_to_directory(str(tmp_path / name), str(out), CompileOptions(granularity=granularity))
    return out


@pytest.mark.parametrize("name", CASES)
def test_cwltool_validates(name: str, tmp_path: Path) -> None:
    out = _compile(name, tmp_path)
    result = subprocess.run([str(BIN / "cwltool"), "--validate", str(out / "workflow.cwl")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "is valid CWL" in result.stdout + result.stderr


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("granularity", ["cell", "auto"])
def test_streamflow_validates(name: str, granularity: str, tmp_path: Path) -> None:
    out = _compile(name, tmp_path, granularity)
    result = subprocess.run([str(BIN / "streamflow"), "run", "--validate",
                             str(out / "streamflow.yml")], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]


def test_streamflow_config_keeps_database_in_output_dir(tmp_path: Path) -> None:
    out = _compile("linear_pipeline.ipynb", tmp_path)
    config = YAML(typ="safe").load((out / "streamflow.yml").read_text())
    connection = config["database"]["config"]["connection"]
    assert not Path(connection).is_absolute() and not connection.startswith("..")
    assert config["deployments"]["local"]["type"] == "local"


def test_tools_are_built_from_the_object_model(tmp_path: Path) -> None:
    from cwl_utils.parser import load_document_by_uri

    out = _compile("files_write_read.ipynb", tmp_path)
    document = load_document_by_uri(out / "workflow.cwl")
    assert document.class_ == "Workflow"
    step_ids = [s.id.split("#")[-1] for s in document.steps]
    assert step_ids[-1].endswith("assemble")
