"""A cell that raised: what the user sees, and the marker later steps skip on.

In Jupyter, "Run All" stops at the first cell that raises; later cells do not run. A failing
step therefore finishes normally with the error in its report and a marker in its outputs;
every step that loads from it sees the marker and skips; the assembler writes the notebook up
to the failing cell. Crashes (a killed process) still fail the job, so StreamFlow's retries
apply to them and not to deterministic errors.
"""

from __future__ import annotations

import json
import os
import traceback
from typing import Any

MARKER = ".nb2cwl-failed"
INDEX_KEY = "__failed__"


class CellFailed(Exception):
    """A cell raised; carries the message and the cell's outputs up to the error."""

    def __init__(self, cell: dict[str, Any], exc: BaseException | None, message: str,
                 outputs: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.cell = cell
        self.exc = exc
        self.outputs = outputs
        self.events: list = []  # the timed events behind `outputs`, when known
        self.duration = 0.0


class ScriptEnded(Exception):
    """A script's cell raised SystemExit(0) or SystemExit(None): `python script.py` ends
    there, normally; later cells do not run (their steps skip, as after a failure)."""

    def __init__(self, cell: dict[str, Any], outputs: list[dict[str, Any]]) -> None:
        super().__init__(f"the script ended at cell {cell['index']} (sys.exit)")
        self.cell = cell
        self.outputs = outputs


def ends_script(spec: dict[str, Any], error: BaseException | None) -> bool:
    """True when `error` ends a script normally: SystemExit with code 0 or None."""
    return spec.get("program") == "script" and isinstance(error, SystemExit) and \
        error.code in (0, None)


def mark_failed(out: str, info: dict[str, Any]) -> None:
    """Write the failure marker into the step's values and files outputs."""
    values_dir = os.path.join(out, "values")
    files_dir = os.path.join(out, "files")
    os.makedirs(values_dir, exist_ok=True)
    os.makedirs(files_dir, exist_ok=True)
    with open(os.path.join(values_dir, "index.json"), "w", encoding="utf-8") as handle:
        json.dump({INDEX_KEY: info}, handle)
    with open(os.path.join(files_dir, MARKER), "w", encoding="utf-8") as handle:
        json.dump(info, handle)


def upstream_failure(args: dict[str, list[str]]) -> dict[str, Any] | None:
    """The failure marker of any step this one loads from, if one failed."""
    for key, paths in args.items():
        for path in paths:
            if key.startswith("values-"):
                try:
                    with open(os.path.join(path, "index.json"), encoding="utf-8") as handle:
                        found = json.load(handle).get(INDEX_KEY)
                except (OSError, ValueError):
                    continue
                if found:
                    return found
            elif key.startswith("files-") and os.path.exists(os.path.join(path, MARKER)):
                with open(os.path.join(path, MARKER), encoding="utf-8") as handle:
                    return json.load(handle)
    return None


def user_traceback(exc: BaseException, filename: str = "") -> list[str]:
    """The traceback as Jupyter-like lines, keeping only frames of the notebook's code."""
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if f.filename.startswith("<")]
    lines = ["Traceback (most recent call last):"]
    for frame in user or frames:
        lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {frame.line}")
    lines.append(f"{type(exc).__name__}: {exc}")
    return lines
