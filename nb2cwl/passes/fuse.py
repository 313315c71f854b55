"""Fuse linear chains of steps that gain no parallelism from being separate."""

from __future__ import annotations

from dataclasses import replace

from nb2cwl.ir.model import Step, StepInput, Workflow


def fuse_linear_chains(workflow: Workflow) -> Workflow:
    """Merge every chain A -> B -> C where each step feeds only the next and each is fed only
    by the previous one (same deployment), in one pass over the steps."""
    steps = list(workflow.steps)
    consumers: dict[str, list[Step]] = {s.name: [] for s in steps}
    for step in steps:
        for producer in step.depends_on():
            consumers[producer].append(step)
    following: dict[str, Step] = {}
    for step in steps:
        after = consumers[step.name]
        if len(after) == 1 and _fusable(step, after[0]):
            following[step.name] = after[0]
    preceded = {nxt.name for nxt in following.values()}
    renamed: dict[str, str] = {}
    fused: list[Step] = []
    for step in steps:
        if step.name in preceded:
            continue  # part of a chain that starts earlier
        chain = [step]
        while chain[-1].name in following:
            chain.append(following[chain[-1].name])
        if len(chain) == 1:
            fused.append(step)
            continue
        merged = _merge(chain)
        renamed.update({member.name: merged.name for member in chain})
        fused.append(merged)
    fused = [_rename(s, renamed) for s in fused]
    fused.sort(key=lambda s: s.first_cell)
    names = {cell.index: s.name for s in fused for cell in s.cells}
    cells = tuple(replace(v, step=names.get(v.index, v.step)) for v in workflow.cells)
    return replace(workflow, steps=tuple(fused), cells=cells)


def _fusable(producer: Step, consumer: Step) -> bool:
    return (not producer.is_skeleton_part and not consumer.is_skeleton_part
            and consumer.depends_on() == (producer.name,)
            and producer.target == consumer.target
            and producer.training is None and consumer.training is None)


def _merge(chain: list[Step]) -> Step:
    inside = {step.name for step in chain}
    inputs: dict[str, StepInput] = {}
    replay: dict[str, None] = {}
    groups: set[tuple[str, ...]] = set()
    reasons: list[str] = []
    for step in chain:
        for item in step.inputs:
            if item.producer not in inside:
                inputs.setdefault(item.var, item)
        replay.update(dict.fromkeys(step.replay))
        groups |= set(step.alias_groups)
        reasons += step.reasons
    cells = tuple(cell for step in chain for cell in step.cells)
    last = chain[-1]
    reasons.append(f"fused {', '.join(s.name for s in chain)}: a linear chain gains nothing "
                   "from separate steps")
    return Step(
        name=f"cells_{cells[0].index}_to_{cells[-1].index}",
        cells=cells,
        inputs=tuple(sorted(inputs.values(), key=lambda i: i.var)),
        outputs=last.outputs,
        replay=tuple(replay),
        alias_groups=tuple(sorted(groups)),
        writes_files=any(s.writes_files for s in chain),
        sees_all_files=any(s.sees_all_files for s in chain),
        target=last.target,
        reasons=tuple(reasons),
        resources=last.resources,
    )


def _rename(step: Step, names: dict[str, str]) -> Step:
    if not any(i.producer in names for i in step.inputs):
        return step
    inputs = tuple(
        replace(i, producer=names.get(i.producer, i.producer)) if i.producer else i
        for i in step.inputs)
    return replace(step, inputs=inputs)
