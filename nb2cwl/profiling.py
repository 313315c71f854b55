"""`nb2cwl profile`: run a notebook once top to bottom and record what the cost model needs.

The notebook runs in a kernel (nbclient), in a temporary folder with a copy of the files it
reads, so the user's folder is left as it was. Per code cell the profile keeps the wall time
(the timestamps nbclient records), the process's peak memory after it, and the size of every
value it leaves that a later cell reads across a step boundary (pickled, as a step would save
it). `nb2cwl run|compile --profile FILE` then chooses boundaries from measured seconds instead
of the static estimates.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import tempfile
from dataclasses import replace
from typing import Any

from nb2cwl.errors import Location, OptionError, RunError
from nb2cwl.options import CompileOptions

MARKER = "NB2CWL-PROFILE "
#: Run after each code cell: peak memory so far and the pickled size of the named values.
_PROBE = """\
def __nb2cwl_probe__(cell, names):
    import json, pickle, resource
    sizes = {}
    for name in names:
        if name in globals():
            try:
                sizes[name] = len(pickle.dumps(globals()[name], protocol=5))
            except Exception:
                sizes[name] = -1
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(%(marker)r + json.dumps({"cell": cell, "peak_memory_mb": round(peak, 1),
                                   "value_bytes": sizes}))
"""


def profile_notebook(path: str, output: str, options: CompileOptions | None = None,
                     timeout: int = 3600, force: bool = False) -> dict[str, Any]:
    """Run `path` top to bottom with probes between its cells; write and return the profile."""
    try:
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError

        from nb2cwl.checking.reference import kernel_environment
    except ImportError:
        raise OptionError('nb2cwl profile runs the notebook in a kernel: pip install '
                          '"nb2cwl[check]" (nbclient and ipykernel)') from None
    from nb2cwl.api import compile_notebook
    from nb2cwl.frontend.reader import read_document

    _check_output(output, force)
    options = replace(options or CompileOptions(), granularity="cell", profile=None)
    workflow = compile_notebook(path, options)  # which values cross boundaries, and files
    crossing: dict[str, list[str]] = {}
    for step in workflow.steps:
        last = step.cells[-1].cell_id
        crossing.setdefault(last, []).extend(
            v for v in step.outputs if ":" not in v and not v.startswith("__"))
    document = read_document(path)
    probed = nbformat.v4.new_notebook(metadata=document.metadata)
    probed.cells.append(nbformat.v4.new_code_cell(_PROBE % {"marker": MARKER}))
    ids: list[str] = []
    for cell in document.cells:
        probed.cells.append(cell)
        if cell.cell_type == "code":
            ids.append(str(cell.get("id")))
            names = sorted(set(crossing.get(str(cell.get("id")), [])))
            probed.cells.append(nbformat.v4.new_code_cell(
                f"__nb2cwl_probe__({str(cell.get('id'))!r}, {names!r})"))
    kernel = (document.metadata.get("kernelspec") or {}).get("name") or "python3"
    with tempfile.TemporaryDirectory(prefix="nb2cwl-profile-") as work:
        folder = os.path.dirname(os.path.abspath(path))
        for relative, _ in workflow.external_files:  # the files the notebook reads
            source = os.path.join(folder, relative)
            target = os.path.join(work, relative)
            os.makedirs(os.path.dirname(target) or work, exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, target, dirs_exist_ok=True)
            elif os.path.exists(source):
                shutil.copy2(source, target)
        client = NotebookClient(probed, timeout=timeout, kernel_name=kernel,
                                resources={"metadata": {"path": work}}, record_timing=True)
        try:
            client.execute(env=kernel_environment())
        except CellExecutionError as exc:
            raise RunError(f"the notebook raised while it was profiled: "
                           f"{str(exc).strip().splitlines()[-1]}",
                           Location(os.path.basename(path))) from None
    profile = _collect(probed, ids, os.path.basename(path))
    with open(output, "w", encoding="utf-8") as handle:
        json.dump(profile, handle, indent=1, sort_keys=True)
        handle.write("\n")
    return profile


def _collect(probed: Any, ids: list[str], name: str) -> dict[str, Any]:
    cells: dict[str, dict[str, Any]] = {}
    index = prompt = 0
    for cell in probed.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            stream = output.get("output_type") == "stream"
            text = "".join(output.get("text", "")) if stream else ""
            if text.startswith(MARKER):
                found = json.loads(text[len(MARKER):])
                cells.setdefault(found["cell"], {}).update(
                    peak_memory_mb=found["peak_memory_mb"], value_bytes=found["value_bytes"])
        cell_id = str(cell.get("id"))
        if cell_id in ids:
            timing = cell.metadata.get("execution", {})
            cells.setdefault(cell_id, {})["seconds"] = round(_seconds(timing), 4)
            cells[cell_id]["index"] = index
            index += 1
            if "".join(cell.get("source", "")).strip():  # Jupyter's In [n]; a blank cell none
                prompt += 1
                cells[cell_id]["prompt"] = prompt
    return {"nb2cwl-profile": 1, "notebook": name, "cells": cells,
            "total_seconds": round(sum(c.get("seconds", 0.0) for c in cells.values()), 3),
            "made": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "platform": platform.platform(),
                        "cores": os.cpu_count()}}


def _seconds(timing: dict[str, str]) -> float:
    try:
        began = datetime.datetime.fromisoformat(
            timing["iopub.execute_input"].replace("Z", "+00:00"))
        ended = datetime.datetime.fromisoformat(
            timing["shell.execute_reply"].replace("Z", "+00:00"))
    except (KeyError, ValueError, AttributeError):
        return 0.0
    return max((ended - began).total_seconds(), 0.0)


def _check_output(output: str, force: bool) -> None:
    """Never replace a file that is not a profile nb2cwl wrote (unless --force)."""
    if not os.path.exists(output) or force:
        return
    try:
        with open(output, encoding="utf-8") as handle:
            ours = "nb2cwl-profile" in json.load(handle)
    except (OSError, ValueError, TypeError):
        ours = False
    if not ours:
        raise OptionError(f"{output} exists and is not an nb2cwl profile: choose another -o, "
                          "or pass --force")


def default_output(notebook: str) -> str:
    """`NOTEBOOK.profile.json` beside the notebook."""
    stem = os.path.splitext(os.path.abspath(notebook))[0]
    return f"{stem}.profile.json"
