"""The workflow's last step: the executed notebook, and every file the cells wrote."""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

from .arguments import parse_arguments
from .capture import settle_displays
from .failure import MARKER
from .parameters import VALUES_FILE, given_path

INJECTED_TAG = "injected-parameters"


def assemble(argv: list[str], spec: dict[str, Any] | None = None) -> int:
    """Write the executed notebook (and merged files) into the working directory.

    `spec["parameters"]`: the notebook's parameters; when the run's values differ from the
    notebook's, an injected-parameters cell shows them after the parameters cell, as papermill
    shows them. `spec["unrun_counts"]`: the execution counts of the cells no step runs (only
    definitions or comments), which Jupyter numbers all the same."""
    args = parse_arguments(argv)
    with open(args["notebook"][0], encoding="utf-8") as handle:
        notebook: dict[str, Any] = json.load(handle)
    results: dict[int, dict[str, Any]] = {}
    failures: list[tuple[int, str]] = []
    ends: list[int] = []
    reports = []
    for path in args.get("reports", []):
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
        reports.append(report)
        for cell in report["cells"]:
            results[cell["index"]] = cell
        if "failed_cell" in report:
            failures.append((report["failed_cell"], report.get("error", "")))
        if "exited_cell" in report:
            ends.append(report["exited_cell"])
    end = min(ends) if ends else None  # a script's sys.exit(0): nothing after it ran
    failed = min(failures) if failures else None
    if failed is not None and end is not None and failed[0] > end:
        failed = None
    last = min(i for i in (failed[0] if failed else None, end) if i is not None) \
        if failed is not None or end is not None else None
    for index, count in ((spec or {}).get("unrun_counts") or {}).items():
        if index not in results:  # a cell of definitions or comments: it ran, printing nothing
            results[index] = {"index": index, "outputs": [], "execution_count": count}
    indices = sorted(i for i in results if last is None or i <= last)
    # a later cell's update of a display an earlier cell shows
    for index, outputs in zip(indices, settle_displays([results[i]["outputs"] for i in indices]),
                              strict=True):
        results[index] = {**results[index], "outputs": outputs}
    notes = [note for report in reports
             for note in [*report.get("notes", []), *report.get("cache_notes", [])]]
    if notes:  # what a step could not carry exactly (nb2cwl run prints them)
        notebook.setdefault("metadata", {}).setdefault("nb2cwl", {})["notes"] = notes
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        result = results.get(index)
        if (failed is not None and index > failed[0]) or (end is not None and index > end):
            result = None  # as in Jupyter's Run All: nothing after the failing cell ran
        cell["outputs"] = result["outputs"] if result else []
        cell["execution_count"] = result["execution_count"] if result else None
    if failed is not None:
        notebook.setdefault("metadata", {}).setdefault("nb2cwl", {}).update(
            failed_cell=failed[0], error=failed[1])
        sys.stderr.write(failed[1] + "\n")
    declared = (spec or {}).get("parameters")
    name, merged = args["output"][0], "written-files"
    if declared:
        values = _inject(notebook, declared)
        _check_combination(reports, values)
        if args.get("name-by"):  # a combination of a sweep
            combination = ",".join(f"{key}={_safe(values[key])}" for key in args["name-by"])
            name = name.replace(".executed.ipynb", f"@{combination}.executed.ipynb")
            merged = f"written-files@{combination}"
    with open(name, "w", encoding="utf-8") as handle:
        json.dump(notebook, handle, indent=1, ensure_ascii=False, sort_keys=True)
        handle.write("\n")
    os.makedirs(merged, exist_ok=True)
    for folder in args.get("files", []):
        if os.path.isdir(folder):
            shutil.copytree(folder, merged, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(MARKER))
    return 0


def _check_combination(reports: list[dict[str, Any]], values: dict[str, Any]) -> None:
    """Every step's report was made with this run's parameter values: never assemble one
    combination of a sweep from another's results (raise instead)."""
    for report in reports:
        for name, used in (report.get("parameters") or {}).items():
            if name in values and used != values[name]:
                raise SystemExit(
                    f"nb2cwl: the engine handed the assembler of the run with {name}="
                    f"{values[name]!r} the results of step {report.get('step')}, which ran "
                    f"with {name}={used!r}; refusing to write a notebook that mixes runs")


def _safe(value: Any) -> str:
    """A value as a part of a file name."""
    text = "".join(c if c.isalnum() or c in ".-_" else "_" for c in str(value))
    return text[:40] or "_"


def _inject(notebook: dict[str, Any], declared: dict[str, Any]) -> dict[str, Any]:
    """The run's parameter values: in the notebook's metadata, and as papermill's injected cell
    after the parameters cell when they are not the notebook's own."""
    with open(VALUES_FILE, encoding="utf-8") as handle:
        raw = json.load(handle)
    values: dict[str, Any] = {}
    for name in declared["names"]:
        kind = declared["types"][name]
        if kind in ("File", "Directory"):
            values[name] = given_path(raw, name, declared["defaults"][name])
        else:
            value = raw.get(f"param_{name}")
            if kind == "double":
                value = float(value)
            elif kind == "double[]":
                value = [float(v) for v in value]
            values[name] = value
    notebook.setdefault("metadata", {}).setdefault("nb2cwl", {})["parameters"] = values
    if values == declared.get("notebook_values"):
        return values
    cells = notebook.get("cells", [])
    at = declared["cell"]
    source = "# Parameters\n" + "".join(f"{name} = {value!r}\n" for name, value in values.items())
    injected = {"cell_type": "code", "execution_count": None, "id": "nb2cwl-injected-parameters",
                "metadata": {"tags": [INJECTED_TAG]}, "outputs": [], "source": source}
    kept = [cell for number, cell in enumerate(cells)
            if INJECTED_TAG not in (cell.get("metadata", {}).get("tags") or []) or number == at]
    position = next((n for n, cell in enumerate(kept) if cell is cells[at]), len(kept) - 1)
    kept.insert(position + 1, injected)
    notebook["cells"] = kept
    return values
