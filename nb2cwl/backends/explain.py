"""The explain view: steps, edges and the reasons behind them, as text or JSON."""

from __future__ import annotations

from typing import Any

from nb2cwl.backends.chunk_containers import CHUNK_SUFFIX, first_target
from nb2cwl.backends.deployments import DeploymentPlan
from nb2cwl.ir.model import Step, Workflow


def explain_data(workflow: Workflow, plan: DeploymentPlan | None = None) -> dict[str, Any]:
    """Machine-readable explanation; cell indices count every cell, markdown included. With
    the deployment plan, each step says where it runs and what it asks for there."""
    cells = []
    for view in workflow.cells:
        if view.cell_type != "code":
            continue
        cells.append({
            "index": view.index,
            "prompt": view.prompt,  # In [n] after a Run All, as reasons and skeletons name it
            "id": view.cell_id,
            "role": view.role,
            "step": view.step,
            "inputs": [{"var": var, "producer": producer} for var, producer in view.inputs],
            "replayed_definitions_from": list(view.replayed_from),
            "notes": list(view.notes),
        })
    steps = [
        {
            "name": s.name,
            "cells": [c.index for c in s.cells],
            "inputs": [{"var": i.var, "producer_step": i.producer, "producer": i.producer_cell}
                       for i in s.inputs],
            "outputs": list(s.outputs),
            "depends_on": list(s.depends_on()),
            "replays": list(s.replay),
            "parameters": list(s.parameters),
            "target": s.target,
            "reasons": list(s.reasons),
            "training": _training(workflow, s),
            **({"placement": placement(s, plan)} if plan is not None else {}),
        }
        for s in workflow.steps
    ]
    return {
        "notebook": workflow.notebook_name,
        "cells": cells,
        "steps": steps,
        "edges": [{"var": e.var, "producer": e.producer_cell, "consumer": e.consumer_cell}
                  for e in workflow.edges],
        "external_files": [{"path": p, "type": k} for p, k in workflow.external_files],
        "skeletons": list(workflow.skeletons),
        "fallbacks": [{"cell": f.cell, "reason": f.reason, "hazard": f.hazard, "fix": f.fix}
                      for f in workflow.fallbacks],
        "settings": [{"cell": s.cell_index, "line": s.line, "code": s.code,
                      "changes": list(s.kinds), "replayed_once_imported": list(s.owners)}
                     for s in workflow.settings],
        "skipped_magics": list(workflow.skipped_magics),
        "preload": list(workflow.preload),
        "parameters": [{"name": p.name, "type": p.type, "default": p.default,
                        "cell": p.cell_index, "line": p.line} for p in workflow.parameters],
        "runtime": RUNTIME,
        "diagnostics": [d.to_json() for d in workflow.diagnostics],
    }


def _training(workflow: Workflow, step: Step) -> dict[str, Any] | None:
    """The training a step runs: what it is, where, and whether it is distributed (or why
    not); None for a step that trains nothing."""
    plan = step.training
    if plan is not None:
        origin = None
        if plan.origin is not None:
            origin = _place(workflow, *plan.origin)
        return {"kind": plan.kind, **_place(workflow, plan.cell, plan.line),
                "within": plan.within, "inside": origin, "step_function": plan.step_function,
                "models": list(plan.models), "distributed": plan.distributed,
                "reason": plan.reason}
    cells = {c.index for c in step.cells}
    for fallback in workflow.fallbacks:
        if fallback.training and fallback.cell in cells:
            return {"kind": fallback.training, **_place(workflow, fallback.cell, fallback.line),
                    "within": None, "inside": None, "step_function": None, "models": [],
                    "distributed": False, "reason": fallback.reason}
    return None


def placement(step: Step, plan: DeploymentPlan) -> dict[str, Any]:
    """Where `step` runs: the deployment, its type, and on Slurm the nodes and tasks per node
    its job asks for, with why."""
    target = next((b["target"] for b in plan.bindings if b["step"] == f"/{step.name}"),
                  next(b["target"] for b in plan.bindings if b["step"] == "/"))
    containers = len(target) if isinstance(target, list) else 0
    target = first_target(target)
    entry = plan.deployments.get(target["deployment"], {})
    found: dict[str, Any] = {"deployment": target["deployment"], "type": entry.get("type"),
                             "service": target.get("service")}
    if containers:
        found["deployment"] = target["deployment"].rsplit(CHUNK_SUFFIX, 1)[0]
        found["containers"] = containers
    if entry.get("type") == "slurm":
        service = (entry.get("config", {}).get("services") or {}).get(target.get("service"), {})
        found["nodes"] = int(service.get("nodes", 1))
        found["tasks_per_node"] = int(service.get("ntasksPerNode", 1))
        if service.get("cpusPerTask"):
            found["cores_per_task"] = service["cpusPerTask"]
    if step.training is not None and step.resources.nodes > 1:
        found["why"] = (f"training across {step.resources.nodes} nodes: one worker per node "
                        "(srun starts them; MultiWorkerMirroredStrategy joins them)")
    elif containers:
        found["why"] = (f"a chunk of the scattered loop: {containers} containers, one per "
                        "chunk, so the chunks run side by side, each with the cores it asks for")
    elif step.role == "map":
        found["why"] = ("a chunk of the scattered loop: each chunk is a job of its own, so "
                        "the chunks run side by side wherever the cluster has room")
    else:
        found["why"] = "one task: the step asks for nothing more"
    return found


def _placement_text(found: dict[str, Any]) -> str:
    where = f"{found['deployment']} ({found['type']}"
    where += f", service {found['service']})" if found.get("service") else ")"
    if "nodes" in found:
        nodes, tasks = found["nodes"], found["tasks_per_node"]
        where += (f": {nodes} node{'s' if nodes > 1 else ''} x {tasks} "
                  f"task{'s' if tasks > 1 else ''}")
        if found.get("cores_per_task"):
            where += f", {found['cores_per_task']} cores per task"
    return f"runs on {where}; {found['why']}"


def _place(workflow: Workflow, cell: int, line: int) -> dict[str, Any]:
    """A cell and line, with the script's own line for a script."""
    view = next((v for v in workflow.cells if v.index == cell), None)
    file_line = view.file_line(line) if view is not None else None
    return {"cell": cell, "line": line, **({"file_line": file_line} if file_line else {})}


#: How a step runs its cells (runtime/kernel_shell.py, runtime/plain_shell.py).
RUNTIME = ("each step runs its cells with IPython's own shell, as the Jupyter kernel does "
           "(magics, display formatting, matplotlib's inline backend), where IPython is "
           "installed in the step's environment; elsewhere as plain Python, with a warning in "
           "the step's log")


def explain_text(workflow: Workflow, plan: DeploymentPlan | None = None) -> str:
    """Human-readable explanation; with the deployment plan, where each step runs when that
    is not this machine alone."""
    shown = plan is not None and any(
        placement(s, plan)["type"] != "local" for s in workflow.steps)
    cells_of = workflow.shown_cells
    numbered = ("" if any(v.first_line is not None for v in workflow.cells) else
                "; cells are numbered In [n] as Jupyter numbers them after a Run All")
    lines = [f"{workflow.notebook_name}: {len(workflow.steps)} steps", f"({RUNTIME}{numbered})"]
    if workflow.parameters:
        lines.append(f"\ninputs (parameters {cells_of([workflow.parameter_cell])}; "
                     "nb2cwl run -p NAME VALUE, or job.yml):")
        lines += [f"  {p.name}: {p.type} = {p.default!r}" for p in workflow.parameters]
    for step in workflow.steps:
        cells = workflow.shown_cells(c.index for c in step.cells)
        after = ", ".join(step.depends_on()) or "nothing (can start at once)"
        lines.append(f"\nstep {step.name}  ({cells})  on {step.target or 'local'}  "
                     f"after: {after}")
        for item in step.inputs:
            origin = (f"{cells_of([item.producer_cell])} ({item.producer})" if item.producer
                      else "beside the notebook (workflow input)")
            lines.append(f"  needs {item.var:<24} from {origin}")
        if step.parameters:
            lines.append(f"  takes parameters {', '.join(step.parameters)}")
        if step.replay:
            lines.append(f"  replays definitions {', '.join(step.replay)}")
        if shown:
            lines.append(f"  {_placement_text(placement(step, plan))}")
        for reason in step.reasons:
            lines.append(f"  why: {reason}")
    replayed = [v for v in workflow.cells if v.role == "definitions"]
    if replayed:
        lines.append("\ndefinition-only cells (imports, functions, classes), replayed where "
                     "needed: " + cells_of(v.index for v in replayed))
    skipped = [v for v in workflow.cells if v.role == "skipped"]
    if skipped:
        lines.append("skipped cells: " + cells_of(v.index for v in skipped))
    notes = [(v.index, n) for v in workflow.cells for n in v.notes]
    if notes:
        lines.append("\nnotes:")
        lines.extend(f"  {cells_of([index])}: {note}" for index, note in notes)
    if workflow.settings:
        lines.append("\nsettings replayed in later steps (before the first of their cells that "
                     "follows, once what they configure is imported there):")
        for setting in workflow.settings:
            first = setting.code.strip().splitlines()[0][:70]
            lines.append(f"  {cells_of([setting.cell_index])} line {setting.line}: {first}  "
                         f"({', '.join(setting.kinds)})")
    if workflow.preload:
        lines.append("imported once for every local step, before any (the notebook opens "
                     "with them): " + ", ".join(workflow.preload))
    if workflow.skipped_magics:
        lines.append("magics not run in steps: " + ", ".join(
            f"%{m}" for m in workflow.skipped_magics) + " (see the warnings below)")
    script = any(v.first_line is not None for v in workflow.cells)
    for fallback in workflow.fallbacks:  # a script's: at its own lines
        where = workflow.notebook_name if script else cells_of([fallback.cell])
        lines.append(f"fallback at {where}: {fallback.reason}")
        if fallback.fix:
            lines.append(f"  to run it in parallel: {fallback.fix}")
    for diagnostic in workflow.diagnostics:
        lines.append(str(diagnostic))
    return "\n".join(lines) + "\n"
