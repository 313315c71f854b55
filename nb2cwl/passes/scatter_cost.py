"""Whether scattering a loop pays: a scatter adds a split and a gather step, so it is made
only where running the items side by side saves more than those steps cost.

The decision needs the loop's real cost: a profile (`nb2cwl profile`), nb2cwl's own last run
into the same folder, or the timings JupyterLab recorded in the notebook. A loop whose cost is
only estimated is scattered, as before: an estimate cannot bound a library call or an unknown
iteration count, and a loop is never assumed cheap. What a step costs, and how many cores the
chunks share, come from the deployment's figures (cost_model.Costs).
"""

from __future__ import annotations

from collections.abc import Mapping

from nb2cwl.ir.model import Workflow
from nb2cwl.options import CompileOptions
from nb2cwl.passes.cost_model import SECONDS_FROM, Costs, about, costs_for, step_seconds

#: The steps a scatter adds to the loop's own: the split before it and the gather after it.
ADDED_STEPS = 2


def scatter_decisions(workflow: Workflow, costs: Mapping[str, Costs], default: Costs,
                      options: CompileOptions) -> tuple[dict[int, str], dict[int, str]]:
    """(the cells whose loop is kept in one step because a scatter would not pay, the cells
    whose loop is scattered), each with the figures that decided it (by cell index)."""
    kept: dict[int, str] = {}
    made: dict[int, str] = {}
    placed = any(pattern.startswith("@") for pattern, _ in (*options.targets, *options.resources))
    for step in workflow.steps:
        if step.plan is None or step.role != "cell" or len(step.cells) != 1:
            continue
        cell = step.cells[0]
        if placed or step.plan.asked:  # the user placed its parts, or @parallel_task asked
            made[cell.index] = "scattered as the notebook or its options ask"
            continue
        here = costs_for(step, costs, default)
        chunks = options.chunks or here.cores
        seconds = step_seconds(step)
        added = ADDED_STEPS * here.step_seconds
        gained = seconds - seconds / max(chunks, 1)
        figures = (f"the cell takes {about(seconds)} ({SECONDS_FROM[cell.seconds_from]}), so "
                   f"{max(chunks, 1)} chunks would save at most {gained:.2g} s, and its split "
                   f"and gather steps cost {about(added)} ({here.source})")
        pays = chunks > 1 and gained > added
        if cell.seconds_from == "estimate":
            made[cell.index] = (
                f"scattered on an estimate: {figures}" if pays else
                f"scattered though the code suggests only {about(seconds)} of work: a static "
                "estimate cannot bound a library call or a count known only when the cell "
                "runs, so the loop is not assumed cheap") + (
                "; from the next run on, its measured seconds decide")
        elif pays:
            made[cell.index] = f"scattered, as it pays: {figures}"
        else:
            kept[cell.index] = (f"line {step.plan.line}: the loop stays in one step, a "
                                f"scatter would not pay: {figures}")
    return kept, made
