"""The step graph as SVG, laid out by Graphviz's dot.

Graphviz comes with pygraphviz, whose wheels bundle it: nothing to install beside nb2cwl. The
layout is the DOT text `render_dot` writes (the same shapes, colours and legend); dot places
the boxes in layers, routes the edges and puts their labels where they do not overprint each
other. Each node's group then gets the attributes the Jupyter graph view reads: `data-id`, and
for a step `data-step` and `data-where` (class `nb2cwl-node`: it can be clicked); a node that
shows a step's run status (the executed notebook: the last step's) gets `data-step` too
(class `nb2cwl-shows-status`), and each legend entry `data-where` (class `legend`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from nb2cwl.backends.graph import (
    LEGEND_PREFIX,
    GraphEdge,
    GraphNode,
    check_acyclic,
    render_dot,
)

_SVG = "http://www.w3.org/2000/svg"
_XLINK = "http://www.w3.org/1999/xlink"


def render_svg(nodes: list[GraphNode], edges: list[GraphEdge], title: str) -> str:
    """The graph laid out top to bottom by Graphviz, as an SVG document."""
    import pygraphviz

    check_acyclic(nodes, edges)  # a layered layout of a cycle would hide it
    dot = render_dot(nodes, edges, title)
    graph = pygraphviz.AGraph(string=dot)
    with _quiet_stderr():
        svg = graph.draw(format="svg", prog="dot")
    return _annotated(svg.decode("utf-8"), nodes)


def _annotated(svg: str, nodes: list[GraphNode]) -> str:
    ET.register_namespace("", _SVG)
    ET.register_namespace("xlink", _XLINK)
    root = ET.fromstring(svg)
    by_id = {n.id: n for n in nodes}
    for group in root.iter(f"{{{_SVG}}}g"):
        if group.get("class") != "node":
            continue
        title = group.find(f"{{{_SVG}}}title")
        name = "".join(title.itertext()) if title is not None else ""
        group.attrib.pop("id", None)  # node1, node2...: unique in one graph only, not a page
        if name.startswith(LEGEND_PREFIX):
            if title is not None:
                group.remove(title)  # its name is no one's to read
            group.set("class", "legend")
            group.set("data-where", name[len(LEGEND_PREFIX):])
            continue
        node = by_id.get(name)
        if node is None:
            continue
        group.set("data-id", node.id)
        if node.kind == "step":
            group.set("class", "node step nb2cwl-node nb2cwl-shows-status")
            group.set("data-step", node.id)
            if node.where:
                group.set("data-where", node.where)
        elif node.follows:
            group.set("class", f"node {node.kind} nb2cwl-shows-status")
            group.set("data-step", node.follows)
        else:
            group.set("class", f"node {node.kind}")
    for group in root.iter(f"{{{_SVG}}}g"):
        if group.get("class") in ("graph", "edge"):
            group.attrib.pop("id", None)
    return ET.tostring(root, encoding="unicode") + "\n"


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Graphviz's bundled fontconfig may warn, on its first use in a process, about a newer
    system configuration it does not know (Debian 12's "reset-dirs"): a line on standard
    error that says nothing about the graph. Where nothing else can write meanwhile (one
    thread), it goes nowhere."""
    if threading.active_count() > 1:
        yield
        return
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
