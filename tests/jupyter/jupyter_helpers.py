"""Helpers of the Jupyter integration's tests."""

from __future__ import annotations

from pathlib import Path

import nbformat


def write_notebook(folder: Path, name: str, sources: list[str],
                   tags: dict[int, list[str]] | None = None) -> Path:
    """A python3 notebook of code cells with ids cell-0, cell-1, ... (and tags per index)."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(source, id=f"cell-{n}",
                                                metadata={"tags": (tags or {}).get(n, [])})
                      for n, source in enumerate(sources)]
    path = folder / name
    nbformat.write(notebook, str(path))
    return path
