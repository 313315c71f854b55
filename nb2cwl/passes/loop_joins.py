"""A scattered loop's split and gather join the steps beside them where no boundary pays.

A scattered loop is three steps: the split (the cell's code before the loop, then the
collection cut into chunks), the map (the chunks, side by side) and the gather (the results
back in order, then the rest of the cell). Each boundary costs a process start and the values
written and read again. The split joins the step before it when that step feeds only this
loop: nothing else waits for it, so nothing waits longer. The gather joins the step after it
when that step is the only one waiting for the gather and needs nothing the gather does not
have first. A joined split runs its other cells first, the loop's cell last; a joined gather
runs the loop's cell first, then the others.
"""

from __future__ import annotations

from dataclasses import replace

from nb2cwl.ir.model import Step, StepInput, Workflow
from nb2cwl.ir.validate import InvalidWorkflow, topological_order, validate_workflow
from nb2cwl.passes.partition import TAGGED, reached_by_sweep

APART = "a step of its own: a part of a scattered loop"  # partition.py's reason, no longer true
JOINED = ("joined with the step before it ({cells}), which feeds only this loop: "
          "a boundary there would only add a process start and the values written and read "
          "again")
JOINED_AFTER = ("joined with the step after it ({cells}), the only one waiting for the "
                "loop: a boundary there would only add a process start and the values written "
                "and read again")


def join_loop_parts(workflow: Workflow, swept: tuple[str, ...] = ()) -> Workflow:
    """Join every scattered loop's split and gather with their neighbours where allowed."""
    sweeping = reached_by_sweep(workflow, set(swept))
    # gathers first: the step after a loop often needs what the step before it made, and
    # once it is the gather's, that step feeds only the loop
    for gather in [s for s in workflow.steps if s.role == "gather"]:
        joined = _join_gather(workflow, workflow.step(gather.name), sweeping)
        workflow = joined if joined is not None else workflow
    for split in [s for s in workflow.steps if s.role == "split"]:
        joined = _join_split(workflow, workflow.step(split.name), sweeping)
        workflow = joined if joined is not None else workflow
    return workflow


def _joinable(step: Step, part: Step, sweeping: set[str]) -> bool:
    """A plain cell step placed where the loop's part runs, in or out of a sweep with it."""
    return (step.role == "cell" and step.training is None and step.plan is None
            and not step.name.startswith(TAGGED)
            and (step.target, step.resources) == (part.target, part.resources)
            and (step.name in sweeping) == (part.name in sweeping))


def _ancestors(workflow: Workflow) -> dict[str, set[str]]:
    """Every step's ancestors: the steps it waits for, directly or not."""
    found: dict[str, set[str]] = {}
    for name in topological_order(workflow):
        found[name] = set()
        for producer in workflow.step(name).depends_on():
            found[name] |= {producer} | found[producer]
    return found


def _consumers(workflow: Workflow, name: str) -> set[str]:
    return {s.name for s in workflow.steps if name in s.depends_on()}


def _join_split(workflow: Workflow, split: Step, sweeping: set[str]) -> Workflow | None:
    base = split.name.removesuffix("_split")
    producers = split.depends_on()
    if not producers:
        return None
    above = _ancestors(workflow)
    # the producer every other producer comes before: the step the split waits for last
    last = [p for p in producers if set(producers) - {p} <= above[p]]
    if len(last) != 1:
        return None
    before = workflow.step(last[0])
    if not _joinable(before, split, sweeping) or not _consumers(workflow, before.name) <= {
            split.name, f"{base}_map", f"{base}_gather"}:
        return None
    quiet = [c for c in workflow.quiet_cells
             if before.cells[-1].index < c.index < split.first_cell]
    cells = (*before.cells, *quiet, split.cells[0])
    joined = _joined(before, split, (*before.cells, *quiet), cells,
                     JOINED.format(cells=workflow.shown_cells(c.index for c in before.cells)))
    return _replaced(workflow, {before.name: joined, split.name: joined}, joined)


def _join_gather(workflow: Workflow, gather: Step, sweeping: set[str]) -> Workflow | None:
    waiting = _consumers(workflow, gather.name)
    if len(waiting) != 1:
        return None
    after = workflow.step(next(iter(waiting)))
    if not _joinable(after, gather, sweeping):
        return None
    if not set(after.depends_on()) - {gather.name} <= _ancestors(workflow)[gather.name]:
        return None  # it needs a step that runs beside the loop: the gather would wait for it
    quiet = [c for c in workflow.quiet_cells
             if gather.first_cell < c.index < after.first_cell]
    cells = (gather.cells[0], *quiet, *after.cells)
    joined = _joined(gather, after, (*quiet, *after.cells), cells,
                     JOINED_AFTER.format(cells=workflow.shown_cells(c.index for c in after.cells)),
                     first_is_part=True)
    return _replaced(workflow, {gather.name: joined, after.name: joined}, joined)


def _joined(first: Step, second: Step, whole: tuple, cells: tuple, reason: str,
            first_is_part: bool = False) -> Step:
    """`first` and `second` as one step, named and shaped as the loop's part among them.
    `whole`: the cells it runs whole (the loop's cell runs only its part); the definitions
    they make run in place, no longer replayed first."""
    part, other = (first, second) if first_is_part else (second, first)
    inside = {first.name, second.name}
    inputs: dict[str, StepInput] = {}
    for item in (*first.inputs, *second.inputs):
        if item.producer not in inside:
            inputs.setdefault(item.var, item)
    own = {c.index for c in whole}
    replay = [k for k in dict.fromkeys((*first.replay, *second.replay))
              if int(k.split(":")[0]) not in own]
    return replace(
        part, cells=cells,
        inputs=tuple(sorted(inputs.values(), key=lambda i: i.var)),
        outputs=tuple(dict.fromkeys((*first.outputs, *second.outputs))),
        replay=tuple(replay),
        alias_groups=tuple(sorted(set(first.alias_groups) | set(second.alias_groups))),
        writes_files=first.writes_files or second.writes_files,
        sees_all_files=first.sees_all_files or second.sees_all_files,
        parameters=tuple(dict.fromkeys((*first.parameters, *second.parameters))),
        defines=tuple(sorted(set(first.defines) | set(second.defines))),
        reasons=(*[r for r in part.reasons if r != APART], reason,
                 *other.reasons))


def _replaced(workflow: Workflow, names: dict[str, Step], joined: Step) -> Workflow | None:
    steps: list[Step] = []
    for step in workflow.steps:
        if step.name in names:
            if joined not in steps:
                steps.append(joined)
            continue
        steps.append(replace(step, inputs=tuple(
            replace(i, producer=joined.name) if i.producer in names else i
            for i in step.inputs)))
    steps.sort(key=lambda s: s.first_cell)
    where = {c.index: s.name for s in steps for c in s.cells if s.role != "map"}
    cells = tuple(replace(v, step=where.get(v.index, v.step)) for v in workflow.cells)
    result = replace(workflow, steps=tuple(steps), cells=cells)
    try:
        validate_workflow(result)
    except InvalidWorkflow:  # an unusual shape: leave the steps as they were
        return None
    return result
