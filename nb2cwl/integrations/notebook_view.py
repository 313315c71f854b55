"""A notebook as the Jupyter front end shows it: its steps, what flows between them, and the
notes on each cell (the graph view and the cell badges)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from nb2cwl.api import compile_notebook
from nb2cwl.backends.graph_svg import render_svg
from nb2cwl.backends.graph_view import workflow_graph
from nb2cwl.backends.naming import default_output_dir
from nb2cwl.ir.model import Workflow
from nb2cwl.options import CompileOptions


@contextlib.contextmanager
def content_file(content: dict[str, Any] | None) -> Iterator[str | None]:
    """The editor's notebook JSON in a temporary file (None: use the notebook's own file)."""
    if content is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="nb2cwl-content-") as folder:
        path = os.path.join(folder, "notebook.ipynb")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(content, handle)
        yield path


def compile_view(notebook: str, content: dict[str, Any] | None = None,
                 deployment: str | None = None,
                 options: CompileOptions | None = None,
                 granularity: str | None = None) -> Workflow:
    """Compile `notebook` (from `content` when given) as a run on `deployment` with steps of
    `granularity` ("auto" or "cell") would."""
    options = options or CompileOptions()
    if deployment and deployment != "local":
        options = replace(options, deployment=deployment)
    if granularity:
        options = replace(options, granularity=granularity)
    if options.last_run_in is None:  # the costs the sidebar's last run measured, as a run
        options = replace(options, last_run_in=default_output_dir(notebook))  # reads them
    with content_file(content) as path:
        return compile_notebook(notebook, replace(options, content=path))


def graph_payload(workflow: Workflow) -> dict[str, Any]:
    """The step graph (an SVG whose step nodes carry data-step), the steps with their cells,
    the edges with the values, files and state that flow, and each cell's notes."""
    nodes, edges = workflow_graph(workflow)
    ids = {view.index: view.cell_id for view in workflow.cells}
    steps = []
    for step in workflow.steps:
        entry: dict[str, Any] = {
            "name": step.name, "cells": [cell.cell_id for cell in step.cells],
            "indices": [cell.index for cell in step.cells], "role": step.role,
            "shown": workflow.shown_cells(cell.index for cell in step.cells),
            "deployment": step.target or "local", "reason": "; ".join(step.reasons),
            "reasons": list(step.reasons), "training": step.training is not None}
        if step.role == "map" and step.plan is not None and step.plan.chunks:
            entry["shards"] = step.plan.chunks
        steps.append(entry)
    flows = []
    for step in workflow.steps:
        by_source: dict[str, dict[str, list[str]]] = {}
        for item in step.inputs:
            if item.producer is None or item.var == "skeleton:prefix":
                continue
            kinds = by_source.setdefault(item.producer, {"values": [], "files": [], "state": []})
            if item.var.startswith("file:"):
                kinds["files"].append(item.var[5:])
            elif item.var.startswith("rng:"):
                kinds["state"].append(item.var)
            else:
                kinds["values"].append(item.var.removeprefix("skeleton:"))
        for source, kinds in sorted(by_source.items()):
            label = ", ".join(kinds["values"] + kinds["files"] + kinds["state"])
            flows.append({"source": source, "target": step.name, "label": label,
                          **{k: sorted(v) for k, v in kinds.items()}})
    cells: dict[str, dict[str, Any]] = {}
    for view in workflow.cells:
        if view.cell_type != "code":
            continue
        warnings = [note for note in view.notes]
        warnings += [f"line {d.location.line}: {d.message}" if d.location.line else d.message
                     for d in workflow.diagnostics
                     if d.location.cell_index == view.index and d.severity == "warning"]
        warnings += [f.reason for f in workflow.fallbacks if f.cell == view.index]
        cells[view.cell_id] = {"index": view.index, "step": view.step, "role": view.role,
                               "warnings": warnings,
                               "inputs": [{"var": var, "from": ids.get(producer)}
                                          for var, producer in view.inputs]}
    return {
        "notebook": workflow.notebook_name,
        "svg": render_svg(nodes, edges, workflow.notebook_name),
        "steps": steps, "edges": flows, "cells": cells,
        "inputs": [{"name": p.name, "type": p.type, "default": p.default}
                   for p in workflow.parameters],
    }
