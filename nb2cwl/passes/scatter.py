"""Rewrite a cell with a safe loop into split -> scatter(map) over chunks -> gather."""

from __future__ import annotations

from dataclasses import replace

from nb2cwl.ir.model import Fallback, Step, StepInput, Workflow

CHUNKS = "skeleton:chunks"
RESULTS = "skeleton:results"
PREFIX = "skeleton:prefix"
PSEUDO = (CHUNKS, RESULTS, PREFIX)


def scatter_loops(workflow: Workflow, chunks: int = 0) -> Workflow:
    """Split every step whose cell holds a recognised map; keep the rest as it is."""
    steps: list[Step] = []
    renamed: dict[str, str] = {}
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
        if step.writes_files or (step.sees_all_files and not _only_reads(step)):
            fallbacks.append(Fallback(cell, f"line {plan.line}: the cell writes files; the loop "
                                            "runs sequentially"))
            steps.append(replace(step, plan=None))
            continue
        plan = replace(plan, chunks=chunks)
        split, mapper, gather = _rewrite(replace(step, plan=plan), plan)
        renamed[step.name] = gather.name
        steps += [split, mapper, gather]
        skeletons.append(f"cell {cell}: {plan.form} -> {plan.method} over chunks "
                         f"({split.name} -> {mapper.name} -> {gather.name})")
    steps = [_rename_inputs(s, renamed) for s in steps]
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
                      | _rng(step)) - set(plan.loop_locals) - {"__nb2cwl_item__"}
                     - set(PSEUDO)) | set(plan.keep_locals))
    split = replace(step, name=f"{step.name}_split", outputs=(*handed, CHUNKS, PREFIX),
                    role="split", alias_groups=(), reasons=(
                        f"line {plan.line}: {plan.form}: runs the code before it and cuts the "
                        "collection into chunks",))
    own = StepInput
    mapper = replace(
        step, name=f"{step.name}_map",
        inputs=tuple([own(name, split.name, step.first_cell) for name in plan.reads
                      if name in handed] + [own(CHUNKS, split.name, step.first_cell)] + files),
        outputs=(RESULTS,), role="map", alias_groups=(), reasons=(
            f"runs the per-item code once per chunk ({plan.method})",))
    gather = replace(
        step, name=f"{step.name}_gather",
        inputs=tuple([own(name, split.name, step.first_cell) for name in handed]
                     + [own(RESULTS, mapper.name, step.first_cell),
                        own(PREFIX, split.name, step.first_cell)] + files),
        role="gather", reasons=("puts the results back in the original order and runs the "
                                "rest of the cell",))
    return split, mapper, gather


def _rng(step: Step) -> set[str]:
    return {i.var for i in step.inputs if i.var.startswith("rng:")} | {
        v for v in step.outputs if v.startswith("rng:")}


def _rename_inputs(step: Step, renamed: dict[str, str]) -> Step:
    if not renamed:
        return step
    inputs = tuple(
        replace(i, producer=renamed.get(i.producer, i.producer)) if i.var not in PSEUDO else i
        for i in step.inputs)
    return replace(step, inputs=inputs)
