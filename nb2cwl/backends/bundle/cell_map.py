"""The bundle's cell map: notebook cells to steps, variables and files to what carries them.

`cell_map` writes the content of `nb2cwl-map.json`: every cell (number and id) with the step,
tool and script that run it, every step with its cells and dependencies, and for each variable
and file handed between steps the output and file that carry it, and, with an original run,
where that run's provenance holds it.
"""

from __future__ import annotations

from typing import Any

from nb2cwl.backends.bundle.original_run import Run
from nb2cwl.backends.explain import explain_data
from nb2cwl.ir.model import Workflow


def cell_map(workflow: Workflow, job: dict[str, Any], run: Run | None = None
             ) -> dict[str, Any]:
    """Cells (index and id) -> steps, and variables and files -> what carries them."""
    data = explain_data(workflow)
    steps = {s.name: s for s in workflow.steps}
    cell_step = {c.index: s.name for s in workflow.steps for c in s.cells}
    variables: dict[tuple[str, str], dict[str, Any]] = {}
    files: dict[str, dict[str, Any]] = {}
    external = workflow.external_numbers
    for step in workflow.steps:
        for item in step.inputs:
            if item.var.startswith("skeleton:"):
                continue
            if item.var.startswith("file:"):
                path = item.var[len("file:"):]
                if item.producer is None:
                    if path in external:
                        number = external[path]
                        entry = files.setdefault(path, {
                            "path": path, "beside_the_notebook": True,
                            "bundle_path": job[f"external_{number}"]["path"],
                            "workflow_input": f"external_{number}", "read_by": []})
                        entry["read_by"].append(step.name)
                    continue
                entry = files.setdefault(f"{item.producer}:{path}", {
                    "path": path, "written_by": item.producer,
                    "cell": item.producer_cell,
                    "carried_by": {"output": f"{item.producer}/files",
                                   "path": f"nb2cwl-out/files/{path}" if path != "*" else
                                   "nb2cwl-out/files/"}, "read_by": []})
                entry["read_by"].append(step.name)
                continue
            if item.producer is None:
                continue
            key = (item.var, item.producer)
            producer = steps[item.producer]
            entry = variables.setdefault(key, {
                "var": item.var, "cell": item.producer_cell, "step": item.producer,
                "cell_id": next((c.cell_id for c in producer.cells
                                 if c.index == item.producer_cell), None),
                "carried_by": {"output": f"{item.producer}/values",
                               "folder": "nb2cwl-out/values/", "index": "index.json",
                               "file": _value_file(item.var)},
                "read_by": []})
            entry["read_by"].append({"step": step.name,
                                     "cells": [c.index for c in step.cells]})
            if run is not None:
                found = run.values.get(item.producer, {}).get(item.var)
                if found:
                    entry["carried_by"]["in_the_original_run"] = found
    return {
        "notebook": workflow.notebook_name,
        "cells": [{**c, "tool": f"tools/{c['step']}.cwl" if c["step"] else None,
                   "script": f"steps/{c['step']}.py" if c["step"] else None}
                  for c in data["cells"]],
        "steps": [{"name": s["name"], "cells": s["cells"],
                   "cell_ids": [c.cell_id for c in steps[s["name"]].cells],
                   "tool": f"tools/{s['name']}.cwl", "script": f"steps/{s['name']}.py",
                   "depends_on": s["depends_on"], "outputs": s["outputs"]}
                  for s in data["steps"]],
        "cell_to_step": {str(index): name for index, name in sorted(cell_step.items())},
        "variables": sorted(variables.values(), key=lambda v: (v["cell"] or 0, v["var"])),
        "files": sorted(files.values(), key=lambda f: f["path"]),
        "edges": data["edges"],
    }


def _value_file(var: str) -> str:
    if var == "rng:random":
        return "rng-random.pkl"
    if var == "rng:numpy":
        return "rng-numpy.pkl"
    return (f"{var}.npy (numpy array), {var}.pandas.pkl (pandas), {var}.keras (Keras), "
            f"{var}.pkl (other), or group-*.pkl when it shares objects with other values: "
            "chosen by type when saved; index.json names it")
