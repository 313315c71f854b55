"""Which cells share a step: those the analysis keeps together, those a user tags with one
name (`nb2cwl:step=NAME`, Kale's `step:`), or the whole notebook where a cell's namespace is
opaque; a merge that would hand a later step a value it did not see is refused, and where
Kale's order and the inferred one differ, a note says so."""

from __future__ import annotations

from nb2cwl.analysis.dataflow import Dataflow
from nb2cwl.errors import Diagnostic, DirectiveError
from nb2cwl.frontend.model import shown_cells
from nb2cwl.frontend.reader import safe_name
from nb2cwl.ir.model import Step

#: The one step of a notebook whose namespace the analysis cannot follow.
WHOLE_NOTEBOOK = "whole_notebook"


def kale_order(flow: Dataflow, steps: list[Step]) -> list[Diagnostic]:
    """Where Kale's prev: tags and the inferred dependencies of a Kale step disagree."""
    notes: list[Diagnostic] = []
    by_cell = {cell.index: step for step in steps for cell in step.cells}
    kale_of = {step.name: flow.cell(step.first_cell).analysis.directives.kale_step
               for step in steps}
    for cell_flow in flow.cells:
        directives = cell_flow.analysis.directives
        if not directives.kale_prev or cell_flow.index not in by_cell:
            continue
        step = by_cell[cell_flow.index]
        needs = sorted({kale_of.get(p) or p for p in step.depends_on()})
        declared = sorted(set(directives.kale_prev))
        if needs == declared:
            continue
        found = ", ".join(needs) or "nothing from another step"
        notes.append(Diagnostic(
            "kale-prev", f"Kale's prev: tags say step {directives.kale_step or step.name} "
            f"follows {', '.join(declared)}; nb2cwl finds it needs {found}, and orders the "
            "steps by what they need", flow.analysis.notebook.location(cell_flow.analysis.cell),
            "note"))
    return notes


def group_cells(flow: Dataflow, whole: bool) -> tuple[dict[int, str], dict[str, tuple]]:
    """The step each cell runs in, and why cells share a step.

    Cells join when the analysis keeps them together (a contiguous range) or a user tags them
    with the same name; definition-only and empty cells are no step of their own unless
    tagged."""
    runs = [c for c in flow.cells
            if (not (c.analysis.definition_only or c.analysis.empty)
                or c.analysis.directives.step_name is not None)]
    if whole:  # the safe form: every cell in order, in one step, as in Jupyter
        return {c.index: WHOLE_NOTEBOOK for c in flow.cells}, {}
    parent = {c.index: c.index for c in runs}

    def find(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    def union(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    tagged: dict[str, int] = {}
    for cell_flow in runs:
        wanted = cell_flow.analysis.directives.step_name
        if wanted is not None:
            if wanted in tagged:
                union(cell_flow.index, tagged[wanted])
            tagged.setdefault(wanted, cell_flow.index)
    why: dict[int, list[str]] = {}
    for kept in flow.together:
        members = [c.index for c in runs if kept.first <= c.index <= kept.last]
        for index in members[1:]:
            union(index, members[0])
        if members:
            why.setdefault(members[0], []).extend(kept.describe())
    components: dict[int, list[int]] = {}
    for cell_flow in runs:
        components.setdefault(find(cell_flow.index), []).append(cell_flow.index)
    step_of: dict[int, str] = {}
    reasons: dict[str, tuple] = {}
    for members in components.values():
        members.sort()
        tags = [flow.cell(i).analysis.directives.step_name for i in members]
        tag = next((t for t in tags if t is not None), None)
        if tag is not None:
            name = step_name(tag)
        elif len(members) > 1:
            name = f"cells_{members[0]}_to_{members[-1]}"
        else:
            name = f"cell_{members[0]}"
        for index in members:
            step_of[index] = name
        kept = [r for i in members for r in why.get(i, [])]
        if kept:
            reasons[name] = tuple(f"kept together: {r}" for r in dict.fromkeys(kept))
    return step_of, reasons



def check_merges(flow: Dataflow, step_of: dict[int, str], notebook: str) -> None:
    """A merged step must not hand an outside cell a value a later cell in it overwrote."""
    members: dict[str, list] = {}
    for cell_flow in flow.cells:
        if cell_flow.index in step_of:
            members.setdefault(step_of[cell_flow.index], []).append(cell_flow)
    merged = {name for name, cells in members.items() if len(cells) > 1}
    cells_by_index = {c.index: c.analysis.cell for c in flow.cells}
    for cell_flow in flow.cells:
        for item in cell_flow.inputs:
            if item.producer is None:
                continue
            step = step_of.get(item.producer)
            if step not in merged or step_of.get(cell_flow.index) == step:
                continue
            later = [c for c in members[step]
                     if c.index > item.producer and _defines(c, item.var)]
            if later:
                raise DirectiveError(
                    f"cells tagged nb2cwl:step={step} cannot run as one step: "
                    f"{cell_flow.analysis.cell.shown} needs {item.var} as "
                    f"{shown_cells([cells_by_index[item.producer]])} left it, but "
                    f"{later[0].analysis.cell.shown} in the same step changes it afterwards",
                    flow.analysis.notebook.location(cell_flow.analysis.cell))


def _defines(cell_flow, var: str) -> bool:
    fx = cell_flow.analysis.effects
    if var.startswith("file:"):
        return var[5:] in fx.file_writes
    return var in fx.writes or var in fx.mutates or var in fx.deletes or var in fx.rng


def step_name(wanted: str) -> str:
    """A CWL-safe step id for a user's nb2cwl:step=NAME that no generated id can equal."""
    return "step_" + safe_name(wanted).replace("-", "_")
