"""Partitioning: which cells share a step. A boundary exists only where it pays or is needed.

It pays where two heavy steps are independent of each other: on a deployment with more than
one core they run side by side, and each saves more than a boundary costs (cost_model.py).
A step whose cost the code does not bound (a while loop, not yet measured) counts as heavy.
It is needed where a user asked for it (an nb2cwl:step tag), where the placement differs
(another deployment, other resources), around the parts of a scattered loop, and around a
training step. Everything else is fused, in notebook order: the steps between two boundaries
become one, except that light steps after heavy steps running side by side may join one of
them (branch_join.py). The analysis' "kept together" groups arrive as single steps already
and are never split. `granularity="cell"` keeps one step per cell (for debugging).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from nb2cwl.ir.model import Step, StepInput, Workflow
from nb2cwl.ir.validate import InvalidWorkflow, topological_order, validate_workflow
from nb2cwl.passes.branch_join import Graph, join_branches, placement
from nb2cwl.passes.cost_model import (
    Costs,
    Profile,
    about,
    costs_for,
    seconds_source,
    step_seconds,
    unbounded,
    value_bytes,
)

#: A step is heavy when it runs this many times longer than a boundary costs: splitting it
#: from an independent heavy step then gains more than the two boundaries cost.
HEAVY_FACTOR = 3.0
TAGGED = "step_"  # prefix of the steps named by nb2cwl:step= tags (passes/build.py)


def partition(workflow: Workflow, costs: Mapping[str, Costs], default: Costs,
              profile: Profile | None = None, granularity: str = "auto",
              swept: tuple[str, ...] = ()) -> Workflow:
    """Fuse the steps no boundary pays for (see the module docstring). In a sweep over the
    parameters `swept`, steps they reach never fuse with steps they do not: those run once."""
    if granularity == "cell" or len(workflow.steps) < 2:
        return embed_quiet_cells(workflow)
    steps = sorted(workflow.steps, key=lambda s: s.first_cell)
    graph = _graph(workflow)  # each step's ancestors, for both decisions below
    apart = _standing_apart(workflow, steps, graph, costs, default)
    reached = reached_by_sweep(workflow, set(swept))
    segments: list[list[Step]] = []
    for step in steps:
        alone = step.name in apart
        if (alone or not segments or segments[-1][0].name in apart
                or placement(segments[-1][0]) != placement(step)
                or (segments[-1][0].name in reached) != (step.name in reached)
                or _inside_span(step, apart, workflow)):
            segments.append([step])
        else:
            segments[-1].append(step)
    joined = _joined(workflow, segments, apart, graph, reached, costs, default)
    merged = embed_quiet_cells(_merged(workflow, segments, apart, costs, default, profile,
                                       joined))
    try:
        validate_workflow(merged)
    except InvalidWorkflow:  # an unusual shape (a tag spanning others): leave the steps be
        return embed_quiet_cells(workflow)
    return merged


def embed_quiet_cells(workflow: Workflow) -> Workflow:
    """A step whose cells surround cells that are no step (definitions, comments) runs them
    in their place, as Jupyter does: a function redefined between two of its cells is the
    old one for the first and the new one for the second. Its replays keep only what is
    defined before its first cell."""
    if not workflow.quiet_cells:
        return workflow
    steps = []
    for step in workflow.steps:
        first, last = step.first_cell, step.cells[-1].index
        between = [c for c in workflow.quiet_cells if first < c.index < last]
        if step.is_skeleton_part or not between:
            steps.append(step)
            continue
        cells = tuple(sorted((*step.cells, *between), key=lambda c: c.index))
        replay = tuple(key for key in step.replay
                       if not first <= workflow.replay(key).cell_index <= last)
        steps.append(replace(step, cells=cells, replay=replay))
    return replace(workflow, steps=tuple(steps))


def _standing_apart(workflow: Workflow, steps: list[Step], graph: Graph,
                    costs: Mapping[str, Costs],
                    default: Costs) -> dict[str, str]:
    """Steps that keep boundaries on both sides, with the reason."""
    reasons: dict[str, str] = {}
    for step in steps:
        if step.is_skeleton_part:
            reasons[step.name] = "a part of a scattered loop"
        elif step.name.startswith(TAGGED):
            reasons[step.name] = "asked for by an nb2cwl:step tag"
        elif step.training is not None:
            reasons[step.name] = "a training step, run under its own strategy"
    heavy = {s.name: step_seconds(s) for s in steps
             if (step_seconds(s) >= HEAVY_FACTOR * costs_for(s, costs, default).step_seconds
                 or unbounded(s)) and costs_for(s, costs, default).cores > 1}
    if len(heavy) < 2:
        return reasons
    for name, seconds in heavy.items():
        for other, other_seconds in heavy.items():
            if graph.independent(name, other) and name not in reasons:
                step = workflow.step(name)
                boundary = costs_for(step, costs, default)
                loop = unbounded(step)
                if loop:
                    reasons[name] = (f"runs beside {other} (neither needs the other): its cost "
                                     f"has no bound in the code ({loop}), so it is not assumed "
                                     f"cheap; a boundary costs {about(boundary.step_seconds)} "
                                     "here, and from the next run on its measured seconds "
                                     "decide")
                    continue
                if unbounded(workflow.step(other)):  # no bound: at least as long as this one
                    other_seconds = max(other_seconds, seconds)
                gain = min(seconds, other_seconds) - 2 * boundary.step_seconds
                reasons[name] = (f"runs beside {other} (neither needs the other): "
                                 f"{about(seconds)} of work ({seconds_source(step)}), a "
                                 f"boundary costs {about(boundary.step_seconds)} here, so "
                                 f"{about(gain)} gained")
    return reasons


def reached_by_sweep(workflow: Workflow, swept: set[str]) -> set[str]:
    """The steps a swept parameter reaches: those that take its value, and every step that
    takes something from one of them."""
    if not swept:
        return set()
    reached: set[str] = set()
    for name in topological_order(workflow):
        step = workflow.step(name)
        if swept & set(step.parameters) or reached & set(step.depends_on()):
            reached.add(name)
    return reached


def _graph(workflow: Workflow) -> Graph:
    """Every step's ancestors as a bit set (bit i: the i-th step of a topological order)."""
    order = topological_order(workflow)
    bit = {name: 1 << number for number, name in enumerate(order)}
    found: dict[str, int] = {}
    for name in order:
        mask = 0
        for producer in workflow.step(name).depends_on():
            mask |= found[producer] | bit[producer]
        found[name] = mask
    return Graph(found, bit)


def _joined(workflow: Workflow, segments: list[list[Step]], apart: dict[str, str],
            graph: Graph, reached: set[str], costs: Mapping[str, Costs],
            default: Costs) -> dict[str, list[str]]:
    """Light steps after steps that run side by side join one of them (branch_join.py)."""
    if len(apart) < 2:
        return {}
    movable = {s.name for s in workflow.steps
               if s.name not in apart and not s.name.startswith(TAGGED)}
    branches = [segment[0] for segment in segments
                if segment[0].name in apart and len(segment) == 1
                and not segment[0].is_skeleton_part and segment[0].training is None
                and not segment[0].name.startswith(TAGGED)]
    return join_branches(workflow, segments, branches, graph, movable, reached,
                         costs, default)



def _inside_span(step: Step, apart: dict[str, str], workflow: Workflow) -> bool:
    """A step whose first cell lies between the cells of a step standing apart (a tag over
    scattered cells): fusing across it could make steps depend on each other in a cycle."""
    for name in apart:
        other = workflow.step(name)
        if other.first_cell < step.first_cell < other.cells[-1].index:
            return True
    return False


def _merged(workflow: Workflow, segments: list[list[Step]], apart: dict[str, str],
            costs: Mapping[str, Costs], default: Costs, profile: Profile | None,
            joined: Mapping[str, list[str]]) -> Workflow:
    renamed: dict[str, str] = {}
    fused: list[Step] = []
    for segment in segments:
        host = segment[0].name
        if host in joined:
            merged = _merge(segment, workflow, costs, default, profile,
                            why=(f"a step of its own: {apart[host]}", *joined[host]))
            renamed.update({member.name: merged.name for member in segment})
            fused.append(merged)
            continue
        if len(segment) == 1:
            step = segment[0]
            why = apart.get(step.name)
            fused.append(replace(step, reasons=(*step.reasons, f"a step of its own: {why}"))
                         if why else step)
            continue
        merged = _merge(segment, workflow, costs, default, profile)
        renamed.update({member.name: merged.name for member in segment})
        fused.append(merged)
    fused = [_rename(s, renamed) for s in fused]
    fused = [replace(s, reasons=tuple(_beside_renamed(r, renamed) for r in s.reasons))
             for s in fused]
    fused.sort(key=lambda s: s.first_cell)
    names = {cell.index: s.name for s in fused for cell in s.cells}
    cells = tuple(replace(v, step=names.get(v.index, v.step)) for v in workflow.cells)
    return replace(workflow, steps=tuple(fused), cells=cells)


def _merge(segment: list[Step], workflow: Workflow, costs: Mapping[str, Costs],
           default: Costs, profile: Profile | None,
           why: tuple[str, ...] = ()) -> Step:
    inside = {step.name for step in segment}
    inputs: dict[str, StepInput] = {}
    replay: dict[str, None] = {}
    groups: set[tuple[str, ...]] = set()
    reasons: list[str] = []
    own = {cell.index for step in segment for cell in step.cells}
    for step in segment:
        for item in step.inputs:
            if item.producer not in inside:
                inputs.setdefault(item.var, item)
        # a definition a cell of the fused step makes runs there, in its place (replayed
        # first, an import would come before the settings its cell makes ahead of it)
        replay.update(dict.fromkeys(key for key in step.replay
                                    if workflow.replay(key).cell_index not in own))
        groups |= set(step.alias_groups)
        reasons += [r for r in step.reasons if r not in reasons]
    outputs = sorted({item.var for other in workflow.steps if other.name not in inside
                      for item in other.inputs if item.producer in inside})
    cells = tuple(cell for step in segment for cell in step.cells)
    seconds = sum(step_seconds(s) for s in segment)
    boundary = costs_for(segment[0], costs, default)
    crossing = sum(value_bytes(s, var, profile) for s in segment for var in s.outputs)
    reasons += why or [
        f"fused {len(segment)} steps ({workflow.shown_cells(c.index for c in cells)}): "
        f"{about(seconds)} of work with no independent heavy step beside it, so no boundary "
        f"among them pays (one costs {about(boundary.step_seconds)}"
        + (f", plus {about(crossing / boundary.bytes_per_second)} for the values" if crossing
           else "") + f"; {boundary.source})"]
    first = segment[0]
    return Step(
        name=_fused_name(sorted(cell.index for cell in cells), workflow),
        cells=cells,
        inputs=tuple(sorted(inputs.values(), key=lambda i: i.var)),
        outputs=tuple(outputs),
        replay=tuple(replay),
        alias_groups=tuple(sorted(groups)),
        writes_files=any(s.writes_files for s in segment),
        sees_all_files=any(s.sees_all_files for s in segment),
        target=first.target,
        reasons=tuple(reasons),
        resources=first.resources,
        parameters=tuple(p.name for p in workflow.parameters
                         if any(p.name in s.parameters for s in segment)),
        defines=tuple(sorted({name for s in segment for name in s.defines})),
    )


def _beside_renamed(reason: str, renamed: Mapping[str, str]) -> str:
    """A reason naming the step it runs beside by that step's name after fusing."""
    for old, new in renamed.items():
        reason = reason.replace(f"runs beside {old} (", f"runs beside {new} (")
    return reason


def _fused_name(indices: list[int], workflow: Workflow) -> str:
    """`cells_1_to_3`; `cells_1_and_3` where another step runs the cells between."""
    others = {c.index for s in workflow.steps for c in s.cells} - set(indices)
    runs: list[list[int]] = []
    for index in indices:
        if runs and not any(runs[-1][-1] < other < index for other in others):
            runs[-1].append(index)
        else:
            runs.append([index])
    return "cells_" + "_and_".join(
        str(run[0]) if len(run) == 1 else f"{run[0]}_to_{run[-1]}" for run in runs)


def _rename(step: Step, names: dict[str, str]) -> Step:
    if not any(i.producer in names for i in step.inputs):
        return step
    inputs: dict[str, StepInput] = {}
    for item in step.inputs:
        producer = names.get(item.producer, item.producer) if item.producer else None
        inputs.setdefault(item.var, replace(item, producer=producer))
    return replace(step, inputs=tuple(sorted(inputs.values(), key=lambda i: i.var)))
