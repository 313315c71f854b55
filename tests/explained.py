"""Reading `nb2cwl explain --json` in tests: its lines name cells as Jupyter numbers them."""

from __future__ import annotations

import re
from typing import Any

_SHOWN = re.compile(r"^In \[(\d+)\]: ")


def skeleton_lines(data: dict[str, Any]) -> dict[int, str]:
    """Cell index -> its line of "skeletons" (each starts "In [n]: ", the cell's prompt)."""
    index_of = {c["prompt"]: c["index"] for c in data["cells"] if c.get("prompt")}
    found = {}
    for line in data["skeletons"]:
        shown = _SHOWN.match(line)
        assert shown, f"a skeleton line names no cell: {line}"
        found[index_of[int(shown.group(1))]] = line
    return found
