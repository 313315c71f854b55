"""The workflow's last step: the executed notebook, and every file the cells wrote."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from .arguments import parse_arguments


def assemble(argv: list[str]) -> int:
    """Write the executed notebook (and merged files) into the working directory."""
    args = parse_arguments(argv)
    with open(args["notebook"][0], encoding="utf-8") as handle:
        notebook: dict[str, Any] = json.load(handle)
    results: dict[int, dict[str, Any]] = {}
    for path in args.get("reports", []):
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
        for cell in report["cells"]:
            results[cell["index"]] = cell
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        result = results.get(index)
        cell["outputs"] = result["outputs"] if result else []
        cell["execution_count"] = result["execution_count"] if result else None
    name = args["output"][0]
    with open(name, "w", encoding="utf-8") as handle:
        json.dump(notebook, handle, indent=1, ensure_ascii=False, sort_keys=True)
        handle.write("\n")
    merged = "written-files"
    os.makedirs(merged, exist_ok=True)
    for folder in args.get("files", []):
        if os.path.isdir(folder):
            shutil.copytree(folder, merged, dirs_exist_ok=True)
    return 0
