"""Invariants every Workflow must satisfy before a back end reads it."""

from __future__ import annotations

import re

from nb2cwl.ir.model import Workflow

_CWL_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class InvalidWorkflow(ValueError):
    """The IR breaks an invariant (a bug in a pass, or contradictory user directives)."""


def topological_order(workflow: Workflow) -> list[str]:
    """Step names so that every step comes after the steps it loads from; raise on a cycle."""
    pending = {s.name: set(s.depends_on()) for s in workflow.steps}
    order: list[str] = []
    while pending:
        ready = sorted(name for name, deps in pending.items() if not deps - set(order))
        if not ready:
            cycle = ", ".join(sorted(pending))
            raise InvalidWorkflow(f"the steps depend on each other in a cycle: {cycle}")
        for name in ready:
            order.append(name)
            del pending[name]
    return order


def validate_workflow(workflow: Workflow) -> None:
    """Raise InvalidWorkflow if step names, ports or the step graph are inconsistent."""
    names = [s.name for s in workflow.steps]
    if len(set(names)) != len(names):
        raise InvalidWorkflow(f"duplicate step names: {sorted(names)}")
    for step in workflow.steps:
        if not _CWL_ID.match(step.name):
            raise InvalidWorkflow(f"step name {step.name!r} is not a valid CWL identifier")
        for item in step.inputs:
            if item.producer is None:
                continue
            if item.producer not in names:
                raise InvalidWorkflow(f"{step.name} loads {item.var} from unknown {item.producer}")
            producer = workflow.step(item.producer)
            if item.var not in producer.outputs and not item.var.startswith("file:"):
                raise InvalidWorkflow(f"{step.name} loads {item.var}, which {producer.name} "
                                      "does not output")
        known = {r.key for r in workflow.replays}
        for key in step.replay:
            if key not in known:
                raise InvalidWorkflow(f"{step.name} replays unknown definition {key}")
    topological_order(workflow)
