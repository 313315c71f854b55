"""What each cell took in this run, kept for the next compilation's costs.

`nb2cwl run` names a file in its output folder (NB2CWL_TIMINGS) and empties it as the run
starts; every step appends one JSON line per cell it ran: the cell's id, a digest of its
source (a cell edited since does not use it) and its seconds, as if run in one process (a
scattered loop's cell: the code before the loop, every item, the rest of the cell; and each
item's seconds, with which the next run's split balances its chunks). A reused
step appends what its earlier run measured. A step on a machine that cannot reach the file
keeps nothing; the run itself never depends on it. Nothing of this enters the outputs, which
stay the same from run to run.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

ENV = "NB2CWL_TIMINGS"


def digest(source: str) -> str:
    """The digest of a cell's source, as the compiler computes it too."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def record(spec: dict[str, Any], report: dict[str, Any]) -> None:
    """Append the seconds of the cells in `report` (a step's) to this run's timings file."""
    path = os.environ.get(ENV)
    if not path:
        return
    cells = {cell["index"]: cell for cell in spec["cells"]}
    lines = []
    for entry in report.get("cells", []):
        cell = cells.get(entry["index"])
        if cell is not None and isinstance(entry.get("seconds"), (int, float)):
            source = cell.get("source", cell["code"])
            line = {"cell": cell["id"], "digest": digest(source),
                    "seconds": round(entry["seconds"], 4)}
            if entry.get("item_seconds"):  # a scattered loop's, item by item
                line["items"] = entry["item_seconds"]
            lines.append(json.dumps(line) + "\n")
    if not lines:
        return
    try:  # one write in append mode: steps running side by side do not mix their lines
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError:  # not reachable from here (another machine), or not asked for
        return
    try:
        os.write(descriptor, "".join(lines).encode("utf-8"))
    except OSError:
        pass
    finally:
        os.close(descriptor)
