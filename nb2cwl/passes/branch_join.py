"""Joining a light step to a branch: after heavy steps that run side by side (partition.py),
a light step that needs nothing the other branches make runs at the end of one of them,
instead of paying a boundary of its own and waiting for a free core.

A step joins a branch only where that is safe and pays:

- everything it needs comes from the branch or before it (so the joined step waits for
  nothing new), and every step that reads it waits for that branch already (so no step is
  held up, least of all the other branches);
- the definitions it replays are defined before the branch's first cell, in a cell the
  joined step runs in its place, or in the branch itself: a definition from another
  branch's cell would run before the branch's first cell, or not at all;
- it writes no file and reads no unknown ones: files stay with the steps that the file
  plan orders by their first cell;
- the branches then end no later than with a step of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nb2cwl.ir.model import Step, Workflow
from nb2cwl.passes.cost_model import Costs, about, costs_for, step_seconds


@dataclass(frozen=True)
class Graph:
    """Every step's ancestors as a bit set, and each step's own bit."""

    ancestors: dict[str, int]
    bit: dict[str, int]

    def independent(self, one: str, other: str) -> bool:
        return (one != other and not self.ancestors[one] & self.bit[other]
                and not self.ancestors[other] & self.bit[one])


def join_branches(workflow: Workflow, segments: list[list[Step]], branches: list[Step],
                  graph: Graph, movable: set[str], reached: set[str],
                  costs: Mapping[str, Costs], default: Costs) -> dict[str, list[str]]:
    """Move the steps that open a segment into the branch they may join, in `segments`.
    `branches`: the steps standing apart that may take steps, each alone in its segment;
    `movable`: the steps that may move; `reached`: the steps a swept parameter reaches (they
    join only branches it reaches too). Returns the reasons of each branch that took steps."""
    joined: dict[str, list[str]] = {}
    number = 0
    while number < len(segments):
        segment = segments[number]
        number += 1
        if segment[0] in branches:
            continue
        moved: list[Step] = []
        chosen: _Fit | None = None
        for step in segment:
            if step.name not in movable:
                break
            fit = _best_branch(workflow, [*moved, step], branches, segments, graph, reached,
                               costs, default)
            if fit is None or (chosen is not None and fit.branch is not chosen.branch):
                break
            moved.append(step)
            chosen = fit
        if chosen is None:
            continue
        _segment_of(chosen.branch, segments).extend(moved)
        del segment[:len(moved)]
        if not segment:
            number -= 1
            del segments[number]
        joined.setdefault(chosen.branch.name, []).append(chosen.reason(moved))
    return joined


@dataclass(frozen=True)
class _Fit:
    branch: Step
    ends: float  # when the branches end with the steps joined
    alone: float  # and with a step of their own
    waits_for: str  # what a step of their own would wait for

    def reason(self, moved: list[Step]) -> str:
        names = ", ".join(s.name for s in moved)
        seconds = sum(step_seconds(s) for s in moved)
        gain = (f"the branches then end after {about(self.ends)} instead of "
                f"{about(self.alone)}" if self.ends < self.alone else
                f"the branches end after {about(self.ends)} either way, with one step fewer")
        return (f"{names} ({about(seconds)} of work) joined it: it needs nothing the steps "
                f"beside make, and {gain}; a step of its own pays a boundary and waits for "
                f"{self.waits_for}")


def _best_branch(workflow: Workflow, moving: list[Step], branches: list[Step],
                 segments: list[list[Step]], graph: Graph, reached: set[str],
                 costs: Mapping[str, Costs], default: Costs) -> _Fit | None:
    """The branch `moving` would join, or None where no branch may take them or none gains."""
    last = moving[-1]
    if (last.is_skeleton_part or last.training is not None or last.writes_files
            or last.sees_all_files):
        return None
    own = sum(graph.bit[s.name] for s in moving)
    needs = 0
    for member in moving:
        needs |= graph.ancestors[member.name]
    needs &= ~own
    readers = [s.name for s in workflow.steps
               if graph.ancestors[s.name] & own and not graph.bit[s.name] & own]
    seconds = sum(step_seconds(s) for s in moving)
    fits = []
    for branch in branches:
        reach = graph.ancestors[branch.name] | graph.bit[branch.name]
        if (branch.first_cell > moving[0].first_cell or needs & ~reach
                or placement(branch) != placement(moving[0])
                or (branch.name in reached) != (moving[0].name in reached)
                or any(not graph.ancestors[r] & graph.bit[branch.name] for r in readers)
                or not _replays_in_place(workflow, moving, branch)):
            continue
        beside = [_seconds(o, segments) for o in branches
                  if graph.independent(o.name, branch.name)]
        if not beside:
            continue
        mine = _seconds(branch, segments)
        here = costs_for(branch, costs, default)
        running = [mine, *beside]
        needs_branch = bool(needs & graph.bit[branch.name])
        cores_full = len(running) >= here.cores
        # on their own they start once the branch they need has ended and a core is free
        start = max(min(running) if cores_full else 0.0, mine if needs_branch else 0.0)
        alone = max(*running, start + here.step_seconds + seconds)
        ends = max(*beside, mine + seconds)
        waits = ([f"{branch.name} to end"] if needs_branch else []) + (
            ["a free core"] if cores_full else [])
        if ends <= alone:
            fits.append(_Fit(branch, ends, alone, " and ".join(waits) or "nothing"))
    return min(fits, key=lambda fit: fit.ends) if fits else None


def _replays_in_place(workflow: Workflow, moving: list[Step], branch: Step) -> bool:
    """Every definition the moving steps replay is defined before the branch's first cell,
    in the branch or the moving steps, or in a quiet cell the joined step runs in place."""
    quiet = {c.index for c in workflow.quiet_cells}
    inside = {c.index for s in (branch, *moving) for c in s.cells}
    for step in moving:
        for key in step.replay:
            index = workflow.replay(key).cell_index
            if index >= branch.first_cell and index not in inside | quiet:
                return False
    return True


def placement(step: Step) -> tuple:
    """Where a step runs: steps placed apart never share a step."""
    return step.target, step.resources


def _segment_of(branch: Step, segments: list[list[Step]]) -> list[Step]:
    return next(segment for segment in segments if segment[0] is branch)


def _seconds(branch: Step, segments: list[list[Step]]) -> float:
    return sum(step_seconds(s) for s in _segment_of(branch, segments))
