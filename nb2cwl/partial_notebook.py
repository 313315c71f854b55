"""The executed notebook of a run that did not finish: what Jupyter would show after it.

A run stopped by a signal (Ctrl-C, the sidebar's Cancel) or by an engine failure never
reaches the step that assembles the executed notebook. Its steps told their cells' outputs
as they ran (run_events.py), so the notebook is written from those instead: the cells that
finished with their outputs and counts, the cell that was running with its outputs so far
and the error Jupyter shows for it (KeyboardInterrupt after a stop), the others as never
run. The file has the executed notebook's usual name in the run's folder, and its nb2cwl
metadata says it is partial and why.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import nbformat

from nb2cwl.run_events import RunEvents

FINISHED = ("done", "cached")


def write_partial_notebook(source: str, events: RunEvents, path: str, why: str,
                           error: dict[str, Any], counts: dict[int, int]) -> str | None:
    """Write `source` (the compiled notebook's copy) to `path` with the outputs `events`
    saw, as Jupyter's Run All shows a run that stopped: every cell before the first one that
    did not finish with its outputs and count; that one with its outputs so far, ending with
    `error`; the cells after it as never run (a step beside it may have finished one: Jupyter
    would not have run it yet). `counts`: the execution count of each cell a step runs, by
    index. Returns `path`, or None when there is nothing to write (no notebook, no cell
    started)."""
    events.poll()
    if not events.cells:
        return None
    try:
        notebook = nbformat.read(source, as_version=4)
    except (OSError, ValueError):
        return None
    stopped = False
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        if stopped or index not in counts:  # after the stop; or replayed, skipped: no output
            continue
        seen = events.cells.get(index, {})
        cell.outputs = [nbformat.from_dict(o) for o in events.outputs_of(index)]
        cell.execution_count = counts[index] if seen else None
        if seen.get("status") in FINISHED:
            continue
        stopped = True
        if seen and not (cell.outputs and cell.outputs[-1].get("output_type") == "error"):
            cell.outputs.append(nbformat.from_dict(error))
    notebook.metadata["nb2cwl"] = {"partial": why}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with contextlib.suppress(OSError):
        nbformat.write(notebook, path)
        return path
    return None


def step_failed_error(message: str) -> dict[str, Any]:
    """The output a cell ends with when its step failed outside the cell's code (the process
    was killed, the engine could not run it)."""
    return {"output_type": "error", "ename": "StepFailed", "evalue": message,
            "traceback": [f"StepFailed: {message}"]}


def interrupted_error(signal_name: str) -> dict[str, Any]:
    """The output Jupyter shows in a cell its kernel was interrupted in."""
    return {"output_type": "error", "ename": "KeyboardInterrupt", "evalue": "",
            "traceback": [f"KeyboardInterrupt: nb2cwl run was stopped ({signal_name})"]}
