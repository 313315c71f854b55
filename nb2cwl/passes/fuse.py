"""Fuse linear chains of steps that gain no parallelism from being separate."""

from __future__ import annotations

from dataclasses import replace

from nb2cwl.ir.model import Step, StepInput, Workflow


def fuse_linear_chains(workflow: Workflow) -> Workflow:
    """Merge a step into its only consumer when that consumer loads from nothing else."""
    steps = list(workflow.steps)
    changed = True
    while changed:
        changed = False
        for producer in steps:
            if producer.is_skeleton_part:
                continue
            consumers = [s for s in steps if producer.name in s.depends_on()]
            if len(consumers) != 1:
                continue
            consumer = consumers[0]
            if consumer.is_skeleton_part:
                continue
            if consumer.depends_on() != (producer.name,) or producer.target != consumer.target:
                continue
            merged = _merge(producer, consumer)
            steps = [_rename(s, {producer.name: merged.name, consumer.name: merged.name})
                     for s in steps if s.name not in (producer.name, consumer.name)]
            steps.append(merged)
            steps.sort(key=lambda s: s.first_cell)
            changed = True
            break
    names = {c: s.name for s in steps for c in (cell.index for cell in s.cells)}
    cells = tuple(replace(v, step=names.get(v.index, v.step)) for v in workflow.cells)
    return replace(workflow, steps=tuple(steps), cells=cells)


def _merge(first: Step, second: Step) -> Step:
    inputs = {i.var: i for i in first.inputs}
    for item in second.inputs:
        if item.producer != first.name:
            inputs.setdefault(item.var, item)
    replay = dict.fromkeys([*first.replay, *second.replay])
    cells = (*first.cells, *second.cells)
    name = f"cells_{cells[0].index}_to_{cells[-1].index}"
    reasons = (*first.reasons, *second.reasons,
               f"fused {first.name} into {second.name}: a linear chain gains nothing from "
               "separate steps")
    return Step(
        name=name,
        cells=cells,
        inputs=tuple(sorted(inputs.values(), key=lambda i: i.var)),
        outputs=second.outputs,
        replay=tuple(replay),
        alias_groups=tuple(sorted(set(first.alias_groups) | set(second.alias_groups))),
        writes_files=first.writes_files or second.writes_files,
        sees_all_files=first.sees_all_files or second.sees_all_files,
        target=second.target,
        reasons=reasons,
    )


def _rename(step: Step, names: dict[str, str]) -> Step:
    inputs = tuple(
        StepInput(i.var, names.get(i.producer, i.producer) if i.producer else None,
                  i.producer_cell)
        for i in step.inputs
    )
    return replace(step, inputs=inputs)
