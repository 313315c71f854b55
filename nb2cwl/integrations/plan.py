"""What "Run changed" would run again: the cells an edit affects, and the steps holding them.

A cell is affected (stale) when, since the notebook's last finished run, its source changed,
what it reads now comes from another cell, or a cell it depends on is affected: a cell whose
values or files it reads, whose definitions its step replays, or whose settings its step
replays. A step runs again when one of its cells is affected, or when its cells are grouped
otherwise than in the last run; every other step is reused (the rerun cache finds the same
code and inputs). The run itself decides by content, so a step the plan expects to run again
may still be reused (its inputs came out the same).
"""

from __future__ import annotations

from typing import Any

from nb2cwl.ir.model import CellCode, Workflow


def cell_sources(workflow: Workflow) -> dict[str, str]:
    """Each code cell's source by id (the cells steps run and those replayed in their place)."""
    return {cell.cell_id: cell.source for cell in workflow.code_cells().values()}


def _signatures(workflow: Workflow) -> dict[str, tuple[Any, ...]]:
    """What makes a cell compute the same: its source and where each value it reads comes
    from."""
    sources = cell_sources(workflow)
    ids = {view.index: view.cell_id for view in workflow.cells}
    return {view.cell_id: (sources.get(view.cell_id), view.role,
                           tuple(sorted((var, ids.get(p, "")) for var, p in view.inputs)))
            for view in workflow.cells if view.cell_type == "code"}


def _dependencies(workflow: Workflow) -> dict[str, set[str]]:
    """For each code cell, the cells whose effects it may see (see the module's docstring)."""
    ids = {view.index: view.cell_id for view in workflow.cells}
    step_of = {cell.cell_id: step for step in workflow.steps for cell in step.cells}
    found: dict[str, set[str]] = {}
    for view in workflow.cells:
        if view.cell_type != "code":
            continue
        deps = {ids[p] for _, p in view.inputs if p is not None and p in ids}
        deps |= {ids[i] for i in view.replayed_from if i in ids}
        step = step_of.get(view.cell_id)
        if step is not None:
            deps |= {ids[workflow.replay(key).cell_index] for key in step.replay
                     if workflow.replay(key).cell_index in ids}
            deps |= {ids[s.cell_index] for s in workflow.settings
                     if s.cell_index < step.first_cell and s.cell_index in ids}
        deps.discard(view.cell_id)
        found[view.cell_id] = deps
    return found


def _grouping(step_cells: tuple[CellCode, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((cell.cell_id, cell.code) for cell in step_cells)


def plan_changes(now: Workflow, last: Workflow | None,
                 last_run: str | None = None) -> dict[str, Any]:
    """The plan of "Run changed": stale cells, and which steps would run again and why."""
    current = _signatures(now)
    if last is None:
        stale = set(current)
        changed = set(stale)
    else:
        before = _signatures(last)
        changed = {cell for cell, signature in current.items() if before.get(cell) != signature}
        stale = set(changed)
        dependencies = _dependencies(now)
        grew = True
        while grew:
            grew = False
            for cell, deps in dependencies.items():
                if cell not in stale and deps & stale:
                    stale.add(cell)
                    grew = True
    index = {view.cell_id: view.index for view in now.cells}
    earlier = {_grouping(step.cells) for step in last.steps} if last is not None else set()
    steps = []
    for step in now.steps:
        cells = [cell.cell_id for cell in step.cells]
        edited = [c for c in cells if c in changed]
        affected = [c for c in cells if c in stale]
        if last is None:
            rerun, reason = True, "no earlier finished run"
        elif edited:
            rerun, reason = True, f"{now.shown_cells(index[c] for c in edited)} changed"
        elif affected:
            rerun, reason = True, "needs cells that changed"
        elif _grouping(step.cells) not in earlier:
            rerun, reason = True, "its cells are grouped into steps otherwise than last time"
        else:
            rerun, reason = False, "unchanged: reused"
        steps.append({"name": step.name, "cells": cells, "rerun": rerun, "reason": reason})
    return {"last_run": last_run,
            "stale_cells": [c for c in current if c in stale],
            "rerun_count": sum(1 for step in steps if step["rerun"]),
            "steps": steps}
