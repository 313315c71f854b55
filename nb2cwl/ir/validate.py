"""Invariants every Workflow must satisfy before a back end reads it."""

from __future__ import annotations

import re

from nb2cwl.ir.model import Workflow

_CWL_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class InvalidWorkflow(ValueError):
    """The IR breaks an invariant (a bug in a pass, or contradictory user directives)."""


def topological_order(workflow: Workflow) -> list[str]:
    """Step names so that every step comes after the steps it loads from; raise on a cycle."""
    waiting = {s.name: len(set(s.depends_on())) for s in workflow.steps}
    consumers: dict[str, list[str]] = {}
    for step in workflow.steps:
        for producer in set(step.depends_on()):
            consumers.setdefault(producer, []).append(step.name)
    ready = sorted(name for name, count in waiting.items() if count == 0)
    order: list[str] = []
    while ready:
        name = ready.pop()
        order.append(name)
        for consumer in consumers.get(name, []):
            waiting[consumer] -= 1
            if waiting[consumer] == 0:
                ready.append(consumer)
    if len(order) != len(waiting):
        cycle = ", ".join(sorted(set(waiting) - set(order)))
        raise InvalidWorkflow(f"the steps depend on each other in a cycle: {cycle}")
    return order


def validate_workflow(workflow: Workflow) -> None:
    """Raise InvalidWorkflow if step names, ports or the step graph are inconsistent."""
    names = [s.name for s in workflow.steps]
    if len(set(names)) != len(names):
        raise InvalidWorkflow(f"duplicate step names: {sorted(names)}")
    by_name = {s.name: s for s in workflow.steps}
    known = {r.key for r in workflow.replays}
    for step in workflow.steps:
        if not _CWL_ID.match(step.name):
            raise InvalidWorkflow(f"step name {step.name!r} is not a valid CWL identifier")
        for item in step.inputs:
            if item.producer is None:
                continue
            if item.producer not in by_name:
                raise InvalidWorkflow(f"{step.name} loads {item.var} from unknown {item.producer}")
            producer = by_name[item.producer]
            if item.var not in producer.outputs and not item.var.startswith("file:"):
                raise InvalidWorkflow(f"{step.name} loads {item.var}, which {producer.name} "
                                      "does not output")
        for key in step.replay:
            if key not in known:
                raise InvalidWorkflow(f"{step.name} replays unknown definition {key}")
    topological_order(workflow)
