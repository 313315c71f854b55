"""The reference: the notebook run top to bottom in a kernel (nbclient), as "Run All" does.

It runs in a temporary folder holding a copy of the notebook and of the files beside it the
notebook reads, so the user's folder is left as it was; the user's notebook is not changed.
Like Run All, it stops at the first cell that raises.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from nb2cwl.checking.compare import Entry, entries
from nb2cwl.errors import Location, OptionError


def kernel_environment() -> dict[str, str]:
    """The environment a reference kernel starts with: this process's, as Jupyter gives a
    kernel its own, but for pytest's variable, under which ipykernel stops showing what
    subprocesses and C code write (a check run in a test suite would then miss it)."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


def reference_outputs(path: str, files: list[str], timeout: int
                      ) -> dict[int, list[Entry] | None]:
    """Each code cell's normalised outputs by cell index (None: the cell did not run)."""
    try:
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError
    except ImportError:
        raise OptionError('nb2cwl check runs the notebook in a kernel too: pip install '
                          '"nb2cwl[check]" (nbclient and ipykernel)',
                          Location(os.path.basename(path))) from None
    from nb2cwl.frontend.reader import read_document

    document = read_document(path)
    kernel = (document.metadata.get("kernelspec") or {}).get("name") or "python3"
    for cell in document.cells:  # what a notebook already shows is not what this run shows
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    with tempfile.TemporaryDirectory(prefix="nb2cwl-check-") as work:
        _copy_beside(os.path.dirname(os.path.abspath(path)), work, files)
        client = NotebookClient(document, timeout=timeout, kernel_name=kernel,
                                resources={"metadata": {"path": work}})
        failed: int | None = None
        try:
            client.execute(env=kernel_environment())
        except CellExecutionError:
            failed = next((i for i, c in enumerate(document.cells) if c.cell_type == "code"
                           and any(o.get("output_type") == "error" for o in c.outputs)), None)
    return {index: (None if failed is not None and index > failed else entries(cell.outputs))
            for index, cell in enumerate(document.cells) if cell.cell_type == "code"}


def executed_outputs(notebook: dict[str, Any]) -> dict[int, list[Entry] | None]:
    """The same for a workflow's executed notebook (None: the cell did not run)."""
    cells = notebook.get("cells", [])
    return {index: entries(cell.get("outputs", []))
            if cell.get("execution_count") is not None or cell.get("outputs") else None
            for index, cell in enumerate(cells) if cell.get("cell_type") == "code"}


def _copy_beside(folder: str, work: str, files: list[str]) -> None:
    for relative in files:
        source = os.path.join(folder, relative)
        target = os.path.join(work, relative)
        os.makedirs(os.path.dirname(target) or work, exist_ok=True)
        if os.path.isdir(source):
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif os.path.exists(source):
            shutil.copy2(source, target)
