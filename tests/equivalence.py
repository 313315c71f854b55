"""Helpers to compare a notebook run top to bottom in Jupyter with the compiled workflow."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from nb2cwl.checking.compare import entries
from nb2cwl.checking.normalise import normalised
from nb2cwl.checking.reference import kernel_environment


def text_outputs(cell: dict) -> list[str]:
    """A code cell's outputs as comparable text: stream text and text/plain, normalised."""
    texts: list[str] = []
    previous = None  # consecutive writes to one stream show as one text, however flushed
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream" and previous == output["name"]:
            texts[-1] += output["text"]
            continue
        previous = output["name"] if kind == "stream" else None
        if kind == "stream":
            texts.append(f"{output['name']}: {output['text']}")
        elif kind in ("execute_result", "display_data"):
            data = output.get("data", {})
            texts.append(f"{kind}: {data.get('text/plain', '')}")
        elif kind == "error":
            texts.append(f"error: {output['ename']}: {output['evalue']}")
    return [normalised("".join(texts))]


def all_cells(notebook: dict) -> dict[int, list[tuple]]:
    """Every output of every code cell, normalised as nb2cwl check does, by cell index."""
    return {i: entries(c.get("outputs", [])) for i, c in enumerate(notebook["cells"])
            if c["cell_type"] == "code"}


def per_cell(notebook: dict) -> dict[int, list[str]]:
    """Text outputs of every code cell, by cell index."""
    return {i: text_outputs(c) for i, c in enumerate(notebook["cells"])
            if c["cell_type"] == "code"}


def _copy_beside(source: Path, workdir: Path, beside: tuple[str, ...]) -> None:
    for name in beside:
        origin = source.parent / name
        if origin.is_dir():
            shutil.copytree(origin, workdir / name, dirs_exist_ok=True)
        else:
            shutil.copyfile(origin, workdir / name)


def run_with_nbclient(source: Path, workdir: Path, beside: tuple[str, ...] = (),
                      allow_errors: bool = False) -> dict[int, list[str]]:
    """Run a copy of `source` (and files `beside` it) top to bottom in a fresh directory."""
    workdir.mkdir(parents=True, exist_ok=True)
    _copy_beside(source, workdir, beside)
    target = workdir / source.name
    shutil.copyfile(source, target)
    nb = nbformat.read(target, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=allow_errors,
                   resources={"metadata": {"path": str(workdir)}}).execute(
        env=kernel_environment())  # as Jupyter starts it (not as pytest's child)
    return per_cell(nb)


def run_with_workflow(source: Path, workdir: Path, *extra: str, beside: tuple[str, ...] = (),
                      expect_failure: bool = False) -> tuple[dict[int, list[str]], Path]:
    """Compile and run a copy of `source` with `nb2cwl run`; return outputs and results dir."""
    from nb2cwl.cli import main

    workdir.mkdir(parents=True, exist_ok=True)
    _copy_beside(source, workdir, beside)
    target = workdir / source.name
    shutil.copyfile(source, target)
    out = workdir / "wf"
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + old
    try:
        status = main(["run", str(target), "-o", str(out), "--quiet", *extra])
    finally:
        os.environ["PATH"] = old
    assert status == (1 if expect_failure else 0), f"nb2cwl run: {source.name} gave {status}"
    results = sorted((out / "runs").iterdir(), key=lambda p: int(p.name))[-1]
    executed = next(results.glob("*.executed.ipynb"))
    return per_cell(nbformat.read(executed, as_version=4)), results
