"""What a step costs and what a step boundary costs, for the partitioning pass.

A cell's seconds come from a profile of a real run (`nb2cwl profile`), from nb2cwl's own last
run into the same output folder (cells whose code is unchanged since), from the timings
JupyterLab recorded in the notebook, or from the analysis' static estimate, in that order.
What a boundary costs depends on where the steps run: the per-step seconds (a process, the
engine's scheduling, saving and loading values) and the bytes per second a value crosses
with come from the deployment's calibration (`nb2cwl calibrate`), or the figures its profile
in streamflow-configs/ carries. None of them is a constant of this module.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from nb2cwl.ir.model import CellCode, Step, Workflow


@dataclass(frozen=True)
class Costs:
    """What running steps costs on one deployment."""

    step_seconds: float  # one more step: process start, scheduling, values saved and loaded
    bytes_per_second: float  # a value crossing a boundary (saved, copied, loaded)
    cores: int  # steps that can run at the same time
    source: str = ""  # where the figures come from, for explain


@dataclass(frozen=True)
class Profile:
    """A measured top-to-bottom run: seconds per cell and bytes per value (by cell id)."""

    seconds: Mapping[str, float] = field(default_factory=dict)
    value_bytes: Mapping[str, int] = field(default_factory=dict)  # "cell_id:var" -> bytes
    peak_memory_mb: Mapping[str, float] = field(default_factory=dict)
    path: str = ""
    source: str = "profile"  # "profile" (nb2cwl profile) or "last run" (nb2cwl's own run)
    item_seconds: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # a scattered
    #                                                loop's cell: each item's seconds, in order


def read_profile(path: str) -> Profile:
    """The profile file `nb2cwl profile` wrote (raise ValueError with what is wrong)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise ValueError(f"cannot read the profile {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"the profile {path} is not JSON: {exc.msg}") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, dict):
        raise ValueError(f"the profile {path} has no 'cells' (write it with nb2cwl profile)")
    seconds = {str(k): float(v.get("seconds", 0.0)) for k, v in cells.items()
               if isinstance(v, dict)}
    memory = {str(k): float(v.get("peak_memory_mb", 0.0)) for k, v in cells.items()
              if isinstance(v, dict)}
    sizes = {f"{k}:{var}": int(size) for k, v in cells.items() if isinstance(v, dict)
             for var, size in (v.get("value_bytes") or {}).items()}
    return Profile(seconds, sizes, memory, os.path.abspath(path))


def read_last_run(path: str, sources: Mapping[str, str]) -> Profile | None:
    """The seconds per cell nb2cwl's last run measured (its timings file `path`, see
    nb2cwl.runtime.timings), for the cells whose source is still `sources[cell id]`; None when
    it measured none of them. A scattered loop's cell counts as if run in one process."""
    digests = {cell_id: source_digest(source) for cell_id, source in sources.items()}
    seconds: dict[str, float] = {}
    items: dict[str, tuple[float, ...]] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            entry = json.loads(line)
            cell, value = entry["cell"], float(entry["seconds"])
        except (ValueError, KeyError, TypeError):
            continue  # a line a killed step left half-written
        if digests.get(cell) == entry.get("digest"):
            seconds[cell] = value
            if isinstance(entry.get("items"), list):
                try:
                    items[cell] = tuple(float(v) for v in entry["items"])
                except (TypeError, ValueError):
                    items.pop(cell, None)
    if not seconds:
        return None
    return Profile(seconds, path=os.path.abspath(path), source="last run", item_seconds=items)


def source_digest(source: str) -> str:
    """A cell source's digest, as the steps record it (nb2cwl.runtime.timings.digest)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def with_profile(workflow: Workflow, profile: Profile | None) -> Workflow:
    """The workflow with each profiled cell's measured seconds."""
    if profile is None or not profile.seconds:
        return workflow

    def measured(cell: CellCode) -> CellCode:
        seconds = profile.seconds.get(cell.cell_id)
        return cell if seconds is None else replace(cell, seconds=seconds,
                                                    seconds_from=profile.source, unbounded="")

    def planned(step: Step) -> Step:
        items = profile.item_seconds.get(step.cells[0].cell_id) if step.plan else None
        return replace(step, plan=replace(step.plan, item_seconds=items)) if items else step

    steps = tuple(planned(replace(s, cells=tuple(measured(c) for c in s.cells)))
                  for s in workflow.steps)
    return replace(workflow, steps=steps)


#: What each `CellCode.seconds_from` means, for explain.
SECONDS_FROM = {"profile": "measured by nb2cwl profile", "last run": "measured in the last run",
                "notebook": "as the notebook's recorded timing says",
                "estimate": "estimated from the code"}


def about(seconds: float) -> str:
    """Seconds as a reason states them: "about 0.3 s", "about 12 s", "under 0.01 s" (never
    "about 8.8e-07 s")."""
    return "under 0.01 s" if seconds < 0.01 else f"about {seconds:.2g} s"


def unbounded(step: Step) -> str:
    """The loop whose cost the code does not bound, in a cell of `step` not yet measured
    ("" if none): such a step is not assumed cheap."""
    for cell in step.cells:
        if cell.unbounded:
            return (cell.unbounded if cell.execution_count is None
                    else f"In [{cell.execution_count}]: {cell.unbounded}")
    return ""


def seconds_source(step: Step) -> str:
    """Where a step's seconds come from, in words (its cells' sources, most trusted first)."""
    found = {cell.seconds_from for cell in step.cells}
    for kind in SECONDS_FROM:
        if kind in found:
            return SECONDS_FROM[kind] + (" (and estimates)" if "estimate" in found and
                                         kind != "estimate" else "")
    return SECONDS_FROM["estimate"]


def step_seconds(step: Step) -> float:
    """How long a step's cells run (the skeleton parts of a loop: the loop's cell)."""
    return sum(cell.seconds for cell in step.cells)


def value_bytes(step: Step, var: str, profile: Profile | None) -> int:
    """The size of `var` as `step` leaves it, when a profile measured it (0 if unknown)."""
    if profile is None:
        return 0
    for cell in reversed(step.cells):
        size = profile.value_bytes.get(f"{cell.cell_id}:{var}")
        if size is not None:
            return size
    return 0


def costs_for(step: Step, costs: Mapping[str, Costs], default: Costs) -> Costs:
    """The costs of the deployment `step` runs on."""
    return costs.get(step.target or "", default)
