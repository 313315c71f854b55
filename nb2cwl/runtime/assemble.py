"""The workflow's last step: the executed notebook, and every file the cells wrote."""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

from .arguments import parse_arguments
from .failure import MARKER


def assemble(argv: list[str]) -> int:
    """Write the executed notebook (and merged files) into the working directory."""
    args = parse_arguments(argv)
    with open(args["notebook"][0], encoding="utf-8") as handle:
        notebook: dict[str, Any] = json.load(handle)
    results: dict[int, dict[str, Any]] = {}
    failures: list[tuple[int, str]] = []
    for path in args.get("reports", []):
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
        for cell in report["cells"]:
            results[cell["index"]] = cell
        if "failed_cell" in report:
            failures.append((report["failed_cell"], report.get("error", "")))
    failed = min(failures) if failures else None
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        result = results.get(index)
        if failed is not None and index > failed[0]:
            result = None  # as in Jupyter's Run All: nothing after the failing cell ran
        cell["outputs"] = result["outputs"] if result else []
        cell["execution_count"] = result["execution_count"] if result else None
    if failed is not None:
        notebook.setdefault("metadata", {})["nb2cwl"] = {"failed_cell": failed[0],
                                                         "error": failed[1]}
        sys.stderr.write(failed[1] + "\n")
    name = args["output"][0]
    with open(name, "w", encoding="utf-8") as handle:
        json.dump(notebook, handle, indent=1, ensure_ascii=False, sort_keys=True)
        handle.write("\n")
    merged = "written-files"
    os.makedirs(merged, exist_ok=True)
    for folder in args.get("files", []):
        if os.path.isdir(folder):
            shutil.copytree(folder, merged, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(MARKER))
    return 0
