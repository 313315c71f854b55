"""`pip install "nb2cwl[jupyter]"` in a fresh virtual environment, with no node on PATH: the
lab extension, the server extension and the kernelspec are there and enabled at once (no
post-install step), and the deployment profiles came along."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.streamflow


def test_one_pip_install_enables_everything_without_node(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    path = str(venv / "bin")  # nothing else: no node, no npm
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=path, HOME=str(tmp_path / "home"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    # the wheel is built from a copy of the tree without node_modules (what a clean clone has)
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        "node_modules", ".venv", ".git", "*-wf", "demo-output", "__pycache__", "lib",
        "tsconfig.tsbuildinfo"))
    installed = subprocess.run(["pip", "install", "--quiet", f"{source}[jupyter]"], env=env,
                               capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr[-3000:]

    def jupyter(*args: str) -> str:
        done = subprocess.run(["jupyter", *args], env=env, capture_output=True, text=True,
                              check=True)
        return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # no colours

    labextensions = jupyter("labextension", "list")
    assert "nb2cwl-jupyterlab" in labextensions
    line = next(x for x in labextensions.splitlines() if "nb2cwl-jupyterlab" in x)
    assert "enabled" in line and "OK" in line, labextensions
    # Notebook 7 comes with the extra too (the docs promise it), and runs the same front end
    version = jupyter("notebook", "--version").strip().splitlines()[-1]
    assert version.startswith("7."), version
    server = jupyter("server", "extension", "list")
    assert "nb2cwl.integrations.server enabled" in server, server
    assert re.search(r"^\s*nb2cwl\.integrations\.server\s+OK$", server, re.MULTILINE), server
    kernels = jupyter("kernelspec", "list")
    assert "nb2cwl" in kernels, kernels
    # the deployment profiles are installed too: compiling for Slurm finds its profile
    notebook = ROOT / "notebooks" / "linear_pipeline.ipynb"
    explained = subprocess.run(["nb2cwl", "explain", str(notebook), "--deployment", "slurm"],
                               env=env, capture_output=True, text=True, check=False)
    assert explained.returncode == 0, explained.stderr
    assert "slurm" in explained.stdout
