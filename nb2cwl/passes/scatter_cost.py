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
from nb2cwl.passes.cost_model import SECONDS_FROM, Costs, costs_for, step_seconds

#: The steps a scatter adds to the loop's own: the split before it and the gather after it.
ADDED_STEPS = 2


def unpaying_scatters(workflow: Workflow, costs: Mapping[str, Costs], default: Costs,
                      options: CompileOptions) -> dict[int, str]:
    """The cells whose loop is kept in one step because a scatter would not pay, with the
    figures that decided it (by cell index)."""
    if any(pattern.startswith("@") for pattern, _ in (*options.targets, *options.resources)):
        return {}  # the user placed the scatter's parts (@map=...): they asked for it
    kept: dict[int, str] = {}
    for step in workflow.steps:
        if (step.plan is None or step.plan.asked or step.role != "cell"
                or len(step.cells) != 1):
            continue  # no scatter, or the notebook asked for it (@parallel_task)
        cell = step.cells[0]
        if cell.seconds_from == "estimate":
            continue
        here = costs_for(step, costs, default)
        chunks = options.chunks or here.cores
        seconds = step_seconds(step)
        gained = seconds - seconds / max(chunks, 1)
        added = ADDED_STEPS * here.step_seconds
        if chunks > 1 and gained > added:
            continue
        kept[cell.index] = (
            f"line {step.plan.line}: the loop stays in one step, a scatter would not pay: the "
            f"cell takes about {seconds:.2g} s ({SECONDS_FROM[cell.seconds_from]}), so "
            f"{max(chunks, 1)} chunks would save at most {gained:.2g} s, and its split and "
            f"gather steps cost about {added:.2g} s ({here.source})")
    return kept
