"""Rewrite a cell with a safe loop into split -> scatter(map) over chunks -> gather."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import replace

from nb2cwl.analysis.skeletons.model import HAZARDS
from nb2cwl.ir.model import Fallback, Step, StepInput, Workflow, carries_value

CHUNKS = "skeleton:chunks"
RESULTS = "skeleton:results"
PREFIX = "skeleton:prefix"
PSEUDO = (CHUNKS, RESULTS, PREFIX)


def scatter_loops(workflow: Workflow, chunks: int = 0,
                  sequential: Mapping[int, str] | None = None,
                  made: Mapping[int, str] | None = None) -> Workflow:
    """Split every step whose cell holds a recognised map; keep the rest as it is, and the
    cells `sequential` names (a scatter would not pay, with that reason). `made`: why each
    scatter was made (the figures), which its split step gives."""
    steps: list[Step] = []
    renamed: dict[str, str] = {}
    early: dict[str, tuple[str, set[str]]] = {}  # cell step -> (its split, values ready there)
    fallbacks = list(workflow.fallbacks)
    skeletons = list(workflow.skeletons)
    for step in workflow.steps:
        plan = step.plan
        if plan is None or step.role != "cell" or len(step.cells) != 1:
            steps.append(step)
            continue
        cell = step.cells[0].index
        # names the loop binds keep their last value for the rest of the cell and later cells
        keep = tuple(sorted(set(plan.keep_locals) | (set(step.outputs) & set(plan.loop_locals))))
        plan = replace(plan, keep_locals=keep)
        if sequential and cell in sequential:
            fallbacks.append(Fallback(cell, sequential[cell], line=plan.line))
            steps.append(replace(step, plan=None))
            continue
        if step.writes_files or (step.sees_all_files and not _only_reads(step)):
            limit = HAZARDS["cell_writes_files"]
            fallbacks.append(Fallback(cell, f"line {plan.line}: {limit.what}; the loop runs "
                                            "sequentially", line=plan.line,
                                      hazard="cell_writes_files", fix=limit.fix))
            steps.append(replace(step, plan=None))
            continue
        plan = replace(plan, chunks=chunks)
        split, mapper, gather = _rewrite(replace(step, plan=plan), plan)
        if made and cell in made:
            split = replace(split, reasons=(*split.reasons, made[cell]))
        renamed[step.name] = gather.name
        early[step.name] = (split.name, _ready_after_split(step, plan, split))
        steps += [split, mapper, gather]
        balanced = (f", chunks balanced by the {len(plan.item_seconds)} items' seconds "
                    "measured in the last run" if plan.item_seconds else "")
        skeletons.append(f"{workflow.shown_cells([cell])}: {plan.form} -> {plan.method} over "
                         f"chunks ({split.name} -> {mapper.name} -> {gather.name}){balanced}")
    steps = [_rename_inputs(s, renamed, early) for s in steps]
    names = {c.index: s.name for s in steps for c in s.cells if s.role in ("cell", "gather")}
    cells = tuple(replace(v, step=names.get(v.index, v.step)) for v in workflow.cells)
    return replace(workflow, steps=tuple(steps), fallbacks=tuple(fallbacks),
                   skeletons=tuple(skeletons), cells=cells)


def _only_reads(step: Step) -> bool:
    return not step.writes_files


def _rewrite(step: Step, plan) -> tuple[Step, Step, Step]:
    values = [i for i in step.inputs if not i.var.startswith("file:")]
    files = [i for i in step.inputs if i.var.startswith("file:")]
    loaded = {i.var for i in values}
    # the split hands on every value of the cell the map or the gather may need
    handed = sorted(((loaded | set(plan.reads) | set(plan.accumulators) | set(step.outputs)
                      | _rng(step) | _bound_before_read_after(plan))
                     - set(plan.loop_locals) - {"__nb2cwl_item__"} - set(PSEUDO))
                    | set(plan.keep_locals))
    # the values it hands on that share objects go in one file, as the cell's own would
    split = replace(step, name=f"{step.name}_split", outputs=(*handed, CHUNKS, PREFIX),
                    role="split", defines=(), reasons=(
                        f"line {plan.line}: {plan.form}: runs the code before it and cuts the "
                        "collection into chunks" + (
                            ", each with about the same seconds of work by what every item "
                            "took in the last run" if plan.item_seconds else ""),))
    own = StepInput
    mapper = replace(
        step, name=f"{step.name}_map",
        inputs=tuple([own(name, split.name, step.first_cell) for name in plan.reads
                      if name in handed] + [own(CHUNKS, split.name, step.first_cell)] + files),
        outputs=(RESULTS,), role="map", alias_groups=(), defines=(), reasons=(
            f"runs the per-item code once per chunk ({plan.method})",))
    gather = replace(
        step, name=f"{step.name}_gather",
        inputs=tuple([own(name, split.name, step.first_cell) for name in handed]
                     + [own(RESULTS, mapper.name, step.first_cell),
                        own(PREFIX, split.name, step.first_cell)] + files),
        role="gather", reasons=("puts the results back in the original order and runs the "
                                "rest of the cell",))
    return split, mapper, gather


def _bound_before_read_after(plan) -> set[str]:
    """Names the cell binds before the loop and reads after it (`k = 5`, loop, `print(k)`)."""
    try:
        before, after = ast.parse(plan.prefix_code), ast.parse(plan.gather_code)
    except SyntaxError:
        return set()
    bound: set[str] = set()
    for node in ast.walk(before):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    return bound & {n.id for n in ast.walk(after) if isinstance(n, ast.Name)}


def _rng(step: Step) -> set[str]:
    return {i.var for i in step.inputs if i.var.startswith("rng:")} | {
        v for v in step.outputs if v.startswith("rng:")}


def _ready_after_split(step: Step, plan, split: Step) -> set[str]:
    """Values the cell defines before the loop that nothing after it touches.

    Steps that need only those take them from the split and do not wait for the loop.
    """
    try:
        later = {n.id for n in ast.walk(ast.parse(plan.gather_code)) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()
    later |= set(plan.accumulators) | set(plan.loop_locals) | set(plan.keep_locals)
    for group in step.alias_groups:
        if later & set(group):
            later |= set(group)
    return {v for v in step.outputs if v in split.outputs and v not in later
            and carries_value(v) and not v.startswith("rng:")}


def _rename_inputs(step: Step, renamed: dict[str, str],
                   early: dict[str, tuple[str, set[str]]]) -> Step:
    if not renamed:
        return step
    inputs = []
    for item in step.inputs:
        if item.var in PSEUDO or item.producer not in renamed:
            inputs.append(item)
        elif item.var in early.get(item.producer, ("", set()))[1]:
            inputs.append(replace(item, producer=early[item.producer][0]))
        else:
            inputs.append(replace(item, producer=renamed[item.producer]))
    return replace(step, inputs=tuple(inputs))
