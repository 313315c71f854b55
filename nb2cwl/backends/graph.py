"""Render a workflow DAG as Graphviz DOT, a Mermaid flowchart or a standalone SVG (stdlib only)."""

from __future__ import annotations

import graphlib
import re
from dataclasses import dataclass

KINDS = ("step", "input", "output")
FORMATS = ("dot", "mmd", "svg")
#: The DOT names of the legend's entries (one per deployment): LEGEND_PREFIX + the name.
LEGEND_PREFIX = "legend:"


@dataclass(frozen=True)
class GraphNode:
    """A node of the workflow graph: a step, a workflow input or a workflow output."""

    id: str
    label: str
    kind: str
    where: str | None = None  # a step's deployment: steps are coloured by where they run
    follows: str | None = None  # the step whose run status a live view shows on this node


@dataclass(frozen=True)
class GraphEdge:
    """A directed dependency between two nodes, labelled with what flows along it."""

    source: str
    target: str
    label: str


def _validate(nodes: list[GraphNode], edges: list[GraphEdge]) -> None:
    seen: set[str] = set()
    for n in nodes:
        if n.id in seen:
            raise ValueError(f"duplicate graph node id {n.id!r}")
        if n.kind not in KINDS:
            raise ValueError(f"node {n.id!r} has kind {n.kind!r}; expected one of {KINDS}")
        seen.add(n.id)
    for e in edges:
        for end in (e.source, e.target):
            if end not in seen:
                raise ValueError(f"edge {e.source!r} -> {e.target!r} names unknown node {end!r}")


def check_acyclic(nodes: list[GraphNode], edges: list[GraphEdge]) -> None:
    """ValueError when the edges make a cycle (a workflow is a DAG), naming its nodes."""
    needs: dict[str, set[str]] = {n.id: set() for n in nodes}
    for e in edges:
        needs[e.target].add(e.source)
    try:
        graphlib.TopologicalSorter(needs).prepare()
    except graphlib.CycleError as error:
        cycle = sorted(set(error.args[1]))
        raise ValueError(f"workflow graph has a cycle through {cycle}") from None


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


#: Fill and stroke of the steps of each deployment, in the order of their names, where the
#: steps run in more than one (else every step has the first).
_PLACES = [("#dbe8f8", "#3b6ea8"), ("#efe0f7", "#7b4aa0"), ("#fff4c2", "#a08200"),
           ("#ffdcdc", "#b03a3a"), ("#d9f2f2", "#2a8080"), ("#e8e8e8", "#555555")]


def _colours(nodes: list[GraphNode]) -> dict[str, tuple[str, str]]:
    """Each deployment's fill and stroke; empty when the steps all run in one."""
    places = sorted({n.where for n in nodes if n.kind == "step" and n.where})
    if len(places) < 2:
        return {}
    return {place: _PLACES[i % len(_PLACES)] for i, place in enumerate(places)}


# ----------------------------------------------------------------------------- DOT

_DOT_STYLE = {
    "step": 'shape=box, style="rounded,filled", fillcolor="#dbe8f8", color="#3b6ea8"',
    "input": 'shape=ellipse, style=filled, fillcolor="#dff2e1", color="#3c8c4a"',
    "output": 'shape=note, style=filled, fillcolor="#fdebd3", color="#c07a1d"',
}


def _dot_str(text: str) -> str:
    # Graphviz reads HTML entities in labels (`&amp;` would show as `&`): `&` stays itself
    body = text.replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "\\n".join(_lines(body)) + '"'


def render_dot(nodes: list[GraphNode], edges: list[GraphEdge], title: str) -> str:
    """Render the graph as a Graphviz DOT ``digraph`` laid out top to bottom."""
    _validate(nodes, edges)
    out = [
        f"digraph {_dot_str(title)} {{",
        f"  graph [rankdir=TB, label={_dot_str(title)}, labelloc=t, fontname=Helvetica];",
        "  node [fontname=Helvetica, fontsize=11];",
        "  edge [fontname=Helvetica, fontsize=9];",
    ]
    colours = _colours(nodes)
    for n in nodes:
        style = _DOT_STYLE[n.kind]
        if n.kind == "step" and n.where in colours:
            fill, stroke = colours[n.where]
            style = f'shape=box, style="rounded,filled", fillcolor="{fill}", color="{stroke}"'
        out.append(f"  {_dot_str(n.id)} [label={_dot_str(n.label)}, {style}];")
    for e in edges:
        attrs = f" [label={_dot_str(e.label)}]" if e.label else ""
        out.append(f"  {_dot_str(e.source)} -> {_dot_str(e.target)}{attrs};")
    if colours:  # what the colours mean
        out.append('  subgraph cluster_legend {\n    label="where steps run"; style=dashed; '
                   'color="#999999"; fontsize=9;')
        for place, (fill, stroke) in colours.items():
            out.append(f"    {_dot_str(LEGEND_PREFIX + place)} [label="
                       f"{_dot_str('runs on ' + place)}, shape=box, style=\"rounded,filled\", "
                       f'fillcolor="{fill}", color="{stroke}", fontsize=9];')
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------- Mermaid

_MMD_ENTITIES = [
    ("#", "#35;"), ("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"),
    ("|", "#124;"), ("`", "#96;"),
]  # fmt: skip


def _mmd_text(text: str) -> str:
    for raw, entity in _MMD_ENTITIES:  # "#" first so inserted entities stay intact
        text = text.replace(raw, entity)
    return "<br/>".join(_lines(text))


def _mermaid_ids(nodes: list[GraphNode]) -> dict[str, str]:
    used: set[str] = set()
    ids: dict[str, str] = {}
    for n in nodes:
        # the prefix avoids keywords such as "end" and ids starting with a digit
        base = "n_" + re.sub(r"[^A-Za-z0-9_]", "_", n.id)
        cand, i = base, 2
        while cand in used:
            cand, i = f"{base}_{i}", i + 1
        used.add(cand)
        ids[n.id] = cand
    return ids


def render_mermaid(nodes: list[GraphNode], edges: list[GraphEdge], title: str) -> str:
    """Render the graph as a Mermaid ``flowchart TD`` with sanitised, unique node ids."""
    _validate(nodes, edges)
    ids = _mermaid_ids(nodes)
    out = [
        "%% " + " ".join(_lines(title)),
        "flowchart TD",
        "    classDef wfInput fill:#dff2e1,stroke:#3c8c4a",
        "    classDef wfOutput fill:#fdebd3,stroke:#c07a1d",
    ]
    colours = _colours(nodes)
    classes = {place: f"on{i}" for i, place in enumerate(colours)}
    out += [f"    classDef {classes[place]} fill:{fill},stroke:{stroke}"
            for place, (fill, stroke) in colours.items()]
    for n in nodes:
        text = f'["{_mmd_text(n.label)}"]'
        if n.kind == "step":
            where = f":::{classes[n.where]}" if n.where in classes else ""
            out.append(f"    {ids[n.id]}{text}{where}")
        else:  # stadium shape plus a colour class for workflow inputs and outputs
            cls = "wfInput" if n.kind == "input" else "wfOutput"
            out.append(f"    {ids[n.id]}({text}):::{cls}")
    for e in edges:
        arrow = f'-->|"{_mmd_text(e.label)}"|' if e.label else "-->"
        out.append(f"    {ids[e.source]} {arrow} {ids[e.target]}")
    return "\n".join(out) + "\n"


def render_graph(nodes: list[GraphNode], edges: list[GraphEdge], title: str, fmt: str) -> str:
    """Dispatch on fmt in {"dot", "mmd", "svg"}; raise ValueError naming the format and choices."""
    if fmt == "dot":
        return render_dot(nodes, edges, title)
    if fmt == "mmd":
        return render_mermaid(nodes, edges, title)
    if fmt == "svg":
        from nb2cwl.backends.graph_svg import render_svg

        return render_svg(nodes, edges, title)
    raise ValueError(f"unknown graph format {fmt!r}; choose one of {', '.join(FORMATS)}")
