"""The summary of a sweep: per combination, its values and what the notebook reported.

What a combination reported: the outputs of the cell tagged `pipeline-metrics` (Kale's tag)
or `nb2cwl:metrics`, else the last output of the last code cell that has one, as text.
"""

from __future__ import annotations

import csv
import json
import os
from typing import Any

METRICS_TAGS = ("pipeline-metrics", "nb2cwl:metrics")


def summary_table(notebooks: list[str], swept: list[str], results_dir: str) -> tuple[str, str]:
    """The table as text, and the path of the same table written as CSV in `results_dir`."""
    rows: list[list[str]] = []
    for path in notebooks:
        with open(path, encoding="utf-8") as handle:
            notebook = json.load(handle)
        values = notebook.get("metadata", {}).get("nb2cwl", {}).get("parameters", {})
        failed = "failed_cell" in notebook.get("metadata", {}).get("nb2cwl", {})
        rows.append([*(repr(values.get(name)) for name in swept),
                     "failed" if failed else _reported(notebook), os.path.basename(path)])
    header = [*swept, "reported", "executed notebook"]
    csv_path = os.path.join(results_dir, "sweep-summary.csv")
    with open(csv_path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    shown = [[cell if len(cell) <= 60 else cell[:57] + "..." for cell in row[:-1]]
             for row in [header, *rows]]
    widths = [max(len(row[i]) for row in shown) for i in range(len(shown[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
             .rstrip() for row in shown]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]]), csv_path


def _reported(notebook: dict[str, Any]) -> str:
    code = [c for c in notebook.get("cells", []) if c.get("cell_type") == "code"]
    tagged = [c for c in code if set(c.get("metadata", {}).get("tags") or []) & set(METRICS_TAGS)]
    for cell in tagged or reversed(code):
        text = " ".join(_text(o) for o in cell.get("outputs", [])).strip()
        if text:
            return " ".join(text.split())
    return ""


def _text(output: dict[str, Any]) -> str:
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    else:
        text = (output.get("data") or {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else str(text)
