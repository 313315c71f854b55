"""The step graph of a workflow as nodes and edges for the renderers in graph.py."""

from __future__ import annotations

from nb2cwl.backends.deployments import ASSEMBLE
from nb2cwl.backends.graph import GraphEdge, GraphNode
from nb2cwl.ir.model import Workflow


def workflow_graph(workflow: Workflow) -> tuple[list[GraphNode], list[GraphEdge]]:
    """Steps as boxes, external files as inputs, the executed notebook as the output."""
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    for number, (path, _) in enumerate(workflow.external_files):
        nodes.append(GraphNode(f"external_{number}", path, "input"))
    for parameter in workflow.parameters:  # the workflow's inputs, with type and default
        nodes.append(GraphNode(f"parameter_{parameter.name}",
                               f"{parameter.name}: {parameter.type}\n= {parameter.default!r}",
                               "input"))
    for step in workflow.steps:
        cells = workflow.shown_cells(c.index for c in step.cells)
        scatter = ""
        if step.role == "map" and step.plan is not None:
            method = step.plan.method
            scatter = "\nscatter" + ("" if method == "scatter" else f" ({method})")
        where = step.target or "local"
        nodes.append(GraphNode(step.name, f"{step.name}\n{cells}{scatter}\non {where}",
                               "step", where))
        by_source: dict[str, list[str]] = {}
        external = workflow.external_numbers
        for item in step.inputs:
            if item.var == "skeleton:prefix":
                continue  # the split's report: bookkeeping, not data
            if item.producer is not None:
                source = item.producer
            elif item.var.startswith("file:") and item.var[5:] in external:
                source = f"external_{external[item.var[5:]]}"
            else:
                continue
            by_source.setdefault(source, []).append(item.var.removeprefix("skeleton:"))
        for name in step.parameters:
            by_source.setdefault(f"parameter_{name}", []).append(name)
        for source, names in sorted(by_source.items()):
            edges.append(GraphEdge(source, step.name, ", ".join(sorted(names))))
    # built by the last step: a live view shows that step's status on it
    nodes.append(GraphNode("executed_notebook", "executed notebook", "output",
                           follows=ASSEMBLE))
    for step in workflow.steps:
        if not any(step.name in other.depends_on() for other in workflow.steps):
            edges.append(GraphEdge(step.name, "executed_notebook", ""))
    return nodes, edges
