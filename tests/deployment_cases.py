"""Helpers for the deployment tests: small notebooks, compiling them, reading what ran where."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
from ruamel.yaml import YAML

from nb2cwl.cli import main

BIN = Path(sys.executable).parent
PROFILES = Path(__file__).resolve().parent.parent / "streamflow-configs"
# settings StreamFlow 0.2.0rc3 mishandles or rejects: a generated config must never hold them
BROKEN_KEYS = {"mincpus", "useMinNodes", "addHost", "wait", "serverSide", "contentCache",
               "queriesPerSecond"}


def write_notebook(path: Path, *cells: str | tuple[str, dict[str, Any]]) -> Path:
    """A Python notebook with these code cells (source, or (source, cell metadata))."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                 "display_name": "Python 3"}
    for cell in cells:
        source, metadata = (cell, {}) if isinstance(cell, str) else cell
        code = nbformat.v4.new_code_cell(source)
        code.metadata.update(metadata)
        nb.cells.append(code)
    nbformat.write(nb, path)
    return path


def compile_cli(notebook: Path, out: Path, *options: str) -> tuple[int, str]:
    """`nb2cwl NOTEBOOK -o OUT OPTIONS...` in this process: (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main([str(notebook), "-o", str(out), *options])
        except SystemExit as exc:  # argparse rejects the options
            status = int(exc.code or 0)
    return status, err.getvalue()


def load_yaml(path: Path) -> Any:
    """A YAML file as plain data."""
    return YAML(typ="safe").load(path.read_text())


def write_yaml(path: Path, data: Any) -> Path:
    """Write plain data as YAML."""
    with path.open("w") as handle:
        YAML(typ="safe").dump(data, handle)
    return path


def targets(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Binding step path -> target, from a streamflow.yml."""
    workflow = next(iter(config["workflows"].values()))
    return {b["step"]: b["target"] for b in workflow["bindings"]}


def streamflow_validate(config: Path) -> subprocess.CompletedProcess[str]:
    """`streamflow run --validate` on a generated config."""
    return subprocess.run([str(BIN / "streamflow"), "run", "--validate", str(config)],
                          capture_output=True, text=True, cwd=config.parent)


def broken_keys(data: Any) -> set[str]:
    """Every key anywhere in `data` that StreamFlow 0.2.0rc3 is known to mishandle."""
    if isinstance(data, dict):
        found = BROKEN_KEYS & set(data)
        for value in data.values():
            found |= broken_keys(value)
        return found
    if isinstance(data, list):
        return set().union(*(broken_keys(v) for v in data)) if data else set()
    return set()


def run_notebook(notebook: Path, out: Path, *options: str) -> list[str]:
    """`nb2cwl run` in this process; the text each code cell printed, in cell order."""
    status = main(["run", str(notebook), "-o", str(out), "--quiet", "--no-cache", *options])
    assert status == 0
    executed = next((out / "runs" / "1").glob("*.executed.ipynb"))
    cells = json.loads(executed.read_text())["cells"]
    return ["".join("".join(o.get("text", "")) for o in c.get("outputs", [])
                    if o.get("output_type") == "stream")
            for c in cells if c["cell_type"] == "code"]


def tuned_profile(kind: str, path: Path, **config: Any) -> Path:
    """A copy of a built-in profile with some connector settings changed (as users do)."""
    profile = load_yaml(PROFILES / f"{kind}.yml")
    profile["deployments"][kind]["config"].update(config)
    return write_yaml(path, profile)
