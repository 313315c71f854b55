"""Render a workflow DAG as Graphviz DOT, a Mermaid flowchart or a standalone SVG (stdlib only)."""

from __future__ import annotations

import re
import unicodedata
from collections import deque
from dataclasses import dataclass
from itertools import pairwise
from xml.sax.saxutils import escape as _sax_escape

KINDS = ("step", "input", "output")
FORMATS = ("dot", "mmd", "svg")


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
    body = text.replace("\\", "\\\\").replace('"', '\\"')
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


# ----------------------------------------------------------------------------- SVG

_FONT = 13
_CHAR_W = 7.6  # approximate advance of one character of a 13px sans-serif font
_LINE_H = 17
_PAD_X, _PAD_Y = 12, 8
_MIN_W = 60
_H_GAP, _V_GAP = 40, 70
_MARGIN, _TITLE_H = 20, 40
_EDGE_FONT = 11
_EDGE_CHAR_W = 6.5
_FILL = {"step": "#dbe8f8", "input": "#dff2e1", "output": "#fdebd3"}
_STROKE = {"step": "#3b6ea8", "input": "#3c8c4a", "output": "#c07a1d"}
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    return _sax_escape(_BAD_XML.sub("", text), {'"': "&quot;"})


def _num(v: float) -> str:
    s = f"{v:.1f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _text_width(line: str, char_w: float) -> float:
    wide = ("W", "F")  # East Asian wide glyphs take two cells; combining marks none
    return char_w * sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in wide else 1
        for c in line
    )


Key = str | tuple[int, int]  # a node id, or (edge index, layer) for a dummy on a long edge
Box = tuple[float, float, float, float]  # centre x, top y, width, height


def _layers(nodes: list[GraphNode], edges: list[GraphEdge]) -> dict[str, int]:
    """Layer of each node: length of the longest path from a source; ValueError on a cycle."""
    preds: dict[str, list[str]] = {n.id: [] for n in nodes}
    succs: dict[str, list[str]] = {n.id: [] for n in nodes}
    for e in edges:
        preds[e.target].append(e.source)
        succs[e.source].append(e.target)
    indeg = {v: len(p) for v, p in preds.items()}
    queue = deque(n.id for n in nodes if indeg[n.id] == 0)
    layer: dict[str, int] = {}
    while queue:
        v = queue.popleft()
        layer[v] = max((layer[u] + 1 for u in preds[v]), default=0)
        for w in succs[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                queue.append(w)
    if len(layer) < len(nodes):
        stuck = [n.id for n in nodes if n.id not in layer]
        raise ValueError(f"workflow graph has a cycle through {stuck}")
    return layer


def _sweeps(n_rows: int):
    """Rows to revisit in three sweeps (down, up, down), with the direction of each."""
    for sweep in range(3):
        down = sweep % 2 == 0
        for r in range(1, n_rows) if down else range(n_rows - 2, -1, -1):
            yield r, down


def _place_row(row: list[Key], want: dict[Key, float], width: dict[Key, float]) -> None:
    """Move centres in ``want`` towards their wishes, keeping order and a gap between boxes."""
    fwd: list[float] = []
    for i, v in enumerate(row):  # pack left to right: push right where needed
        lo = fwd[-1] + (width[row[i - 1]] + width[v]) / 2 + _H_GAP if i else want[v]
        fwd.append(max(want[v], lo))
    bwd = [want[v] for v in row]
    for i in range(len(row) - 2, -1, -1):  # pack right to left: push left where needed
        bwd[i] = min(bwd[i], bwd[i + 1] - (width[row[i + 1]] + width[row[i]]) / 2 - _H_GAP)
    for i, v in enumerate(row):  # the mean of two feasible placements is feasible
        want[v] = (fwd[i] + bwd[i]) / 2


def _layout(nodes: list[GraphNode], edges: list[GraphEdge]):
    """Boxes of nodes and dummies, the (top, height) of each row, and each edge's chain."""
    layer = _layers(nodes, edges)
    rows: list[list[Key]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    preds: dict[Key, list[Key]] = {}
    succs: dict[Key, list[Key]] = {}
    for n in nodes:
        rows[layer[n.id]].append(n.id)
        preds[n.id], succs[n.id] = [], []
    chains: list[list[Key]] = []
    for i, e in enumerate(edges):  # long edges pass through one dummy per layer they cross
        dummies: list[Key] = [(i, r) for r in range(layer[e.source] + 1, layer[e.target])]
        chain = [e.source, *dummies, e.target]
        for d in dummies:
            rows[d[1]].append(d)
            preds[d], succs[d] = [], []
        for a, b in pairwise(chain):
            succs[a].append(b)
            preds[b].append(a)
        chains.append(chain)
    pos = {v: (i + 0.5) / len(row) for row in rows for i, v in enumerate(row)}
    for r, down in _sweeps(len(rows)):  # order within rows by barycentre of neighbours
        nbrs = preds if down else succs

        def key(item: tuple[int, Key], nbrs=nbrs) -> tuple[float, int]:
            i, v = item
            ns = nbrs[v]
            return (sum(pos[u] for u in ns) / len(ns) if ns else pos[v], i)

        rows[r] = [v for _, v in sorted(enumerate(rows[r]), key=key)]
        pos.update((v, (i + 0.5) / len(rows[r])) for i, v in enumerate(rows[r]))
    label = {n.id: _lines(n.label) for n in nodes}
    w: dict[Key, float] = {d: 14.0 for d in preds}
    h: dict[Key, float] = {d: 0.0 for d in preds}
    for v, ls in label.items():
        w[v] = max(_MIN_W, max(_text_width(s, _CHAR_W) for s in ls) + 2 * _PAD_X)
        h[v] = len(ls) * _LINE_H + 2 * _PAD_Y
    cx: dict[Key, float] = {}
    x = 0.0
    for v in rows[0] if rows else []:
        cx[v], x = x + w[v] / 2, x + w[v] + _H_GAP
    for r, down in _sweeps(len(rows)):  # children under parents, parents over children, ...
        nbrs = preds if down else succs
        want = {}
        for v in rows[r]:
            ns = [u for u in nbrs[v] if u in cx]
            want[v] = sum(cx[u] for u in ns) / len(ns) if ns else cx.get(v, 0.0)
        _place_row(rows[r], want, w)
        cx.update(want)
    boxes: dict[Key, Box] = {}
    bands: list[tuple[float, float]] = []
    top = float(_MARGIN + _TITLE_H)
    for row in rows:
        row_h = max(h[v] for v in row)
        for v in row:  # a dummy spans its whole row; the edge runs straight through it
            boxes[v] = (cx[v], top + (row_h - h[v]) / 2, w[v], h[v] or row_h)
        bands.append((top, row_h))
        top += row_h + _V_GAP
    return boxes, bands, chains, layer


def _curve_x_at(x0: float, y0: float, x1: float, y1: float, y: float) -> float:
    """x where the vertical-tangent cubic from (x0, y0) to (x1, y1) reaches height y."""
    f = min(1.0, max(0.0, (y - y0) / (y1 - y0))) if y1 != y0 else 0.5
    lo, hi = 0.0, 1.0
    for _ in range(30):  # y(t) = y0 + (y1 - y0) * (1.5 t (1 - t) + t^3) is monotonic
        t = (lo + hi) / 2
        lo, hi = (t, hi) if 1.5 * t * (1 - t) + t**3 < f else (lo, t)
    t = (lo + hi) / 2
    return x0 + (x1 - x0) * (3 * (1 - t) * t * t + t**3)


def _svg_text(x: float, y: float, lines: list[str], size: float, extra: str = "") -> str:
    return "".join(
        f'<text x="{_num(x)}" y="{_num(y + k * (size + 4))}" font-size="{_num(size)}" '
        f'text-anchor="middle"{extra}>{_xml(s)}</text>'
        for k, s in enumerate(lines)
    )


def render_svg(nodes: list[GraphNode], edges: list[GraphEdge], title: str) -> str:
    """Render the graph as a standalone SVG with a layered top-to-bottom layout."""
    _validate(nodes, edges)
    boxes, bands, chains, layer = _layout(nodes, edges)
    xs = [0.0] + [b[0] - b[2] / 2 for b in boxes.values()]
    xe = [0.0] + [b[0] + b[2] / 2 for b in boxes.values()]
    bottom = bands[-1][0] + bands[-1][1] if bands else float(_MARGIN + _TITLE_H)
    port: dict[tuple[int, int], float] = {}  # spread the ends of edges along a box's side
    for side, hop in ((0, 1), (-1, -2)):
        groups: dict[Key, list[int]] = {}
        for i, chain in enumerate(chains):
            groups.setdefault(chain[side], []).append(i)
        for v, idx in groups.items():
            idx.sort(key=lambda i, hop=hop: (boxes[chains[i][hop]][0], i))
            cx, _, bw, _ = boxes[v]
            for k, i in enumerate(idx):
                port[(i, side)] = cx - bw / 2 + bw * (k + 1) / (len(idx) + 1)
    parts: list[str] = []
    labels: list[str] = []
    for i, (e, chain) in enumerate(zip(edges, chains, strict=True)):
        src, dst = boxes[e.source], boxes[e.target]
        pts = [(port[(i, 0)], src[1] + src[3])]
        for d in chain[1:-1]:
            pts += [(boxes[d][0], boxes[d][1]), (boxes[d][0], boxes[d][1] + boxes[d][3])]
        pts.append((port[(i, -1)], dst[1]))
        path = f"M{_num(pts[0][0])},{_num(pts[0][1])}"
        for j, ((x0, y0), (x1, y1)) in enumerate(pairwise(pts)):
            mid = (y0 + y1) / 2
            path += f" L{_num(x1)},{_num(y1)}" if j % 2 else (
                f" C{_num(x0)},{_num(mid)} {_num(x1)},{_num(mid)} {_num(x1)},{_num(y1)}"
            )  # fmt: skip
        parts.append(
            f'<g class="nb2cwl-edge" data-source="{_xml(e.source)}" '
            f'data-target="{_xml(e.target)}"><path class="edge" d="{path}" fill="none" '
            'stroke="#555" stroke-width="1.3" marker-end="url(#arrow)"/></g>'
        )
        if e.label:  # in the gap just below the source's row
            lines = _lines(e.label)
            top, row_h = bands[layer[e.source]]
            my = top + row_h + _V_GAP / 2
            mx = _curve_x_at(*pts[0], *pts[1], my)
            my -= (len(lines) - 1) * (_EDGE_FONT + 4) / 2 - _EDGE_FONT / 3
            half = max(_text_width(s, _EDGE_CHAR_W) for s in lines) / 2
            xs.append(mx - half)
            xe.append(mx + half)
            halo = ' class="edge-label" fill="#333" stroke="#fff" stroke-width="3" '
            labels.append(_svg_text(mx, my, lines, _EDGE_FONT, halo + 'paint-order="stroke"'))
    parts += labels
    colours = _colours(nodes)
    for n in nodes:
        cx, top, bw, bh = boxes[n.id]
        rx = 4 if n.kind == "step" else min(14, bh / 2)
        lines = _lines(n.label)
        fill, stroke = colours.get(n.where or "", (_FILL[n.kind], _STROKE[n.kind])) \
            if n.kind == "step" else (_FILL[n.kind], _STROKE[n.kind])
        where = f' data-where="{_xml(n.where)}"' if n.where else ""
        parts.append(
            (f'<g class="node step nb2cwl-node nb2cwl-shows-status" data-id="{_xml(n.id)}" '
             f'data-step="{_xml(n.id)}"{where}>' if n.kind == "step" else
             f'<g class="node {n.kind} nb2cwl-shows-status" data-id="{_xml(n.id)}" '
             f'data-step="{_xml(n.follows)}">' if n.follows else
             f'<g class="node {n.kind}" data-id="{_xml(n.id)}">')
            + f'<title>{_xml(n.id)}</title>'
            f'<rect class="node" x="{_num(cx - bw / 2)}" y="{_num(top)}" width="{_num(bw)}" '
            f'height="{_num(bh)}" rx="{_num(rx)}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="1.5"/>'
            + _svg_text(cx, top + _PAD_Y + _LINE_H - 4, lines, _FONT)
            + "</g>"
        )
    if colours:
        legend, right = _legend(colours, min(xs), bottom)
        parts += legend
        xe.append(right)
        bottom += _LEGEND_H
    title_line = " ".join(_lines(title))
    lo, hi = min(xs), max(xe)
    half = max((hi - lo) / 2, _text_width(title_line, 8.5) / 2)
    mid = (lo + hi) / 2
    lo, hi = mid - half - _MARGIN, mid + half + _MARGIN
    width, height = hi - lo, bottom + _MARGIN
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" height="{_num(height)}" '
        f'viewBox="{_num(lo)} 0 {_num(width)} {_num(height)}" '
        'font-family="Helvetica, Arial, sans-serif">\n'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>\n'
        f'<rect class="background" x="{_num(lo)}" y="0" width="{_num(width)}" '
        f'height="{_num(height)}" fill="#fff"/>\n'
        f'<text class="title" x="{_num(mid)}" y="{_num(_MARGIN + 10)}" font-size="15" '
        f'font-weight="bold" text-anchor="middle">{_xml(title_line)}</text>\n'
    )
    return head + "\n".join(parts) + ("\n" if parts else "") + "</svg>\n"


_LEGEND_H = 24


def _legend(colours: dict[str, tuple[str, str]], left: float,
            top: float) -> tuple[list[str], float]:
    """A row of swatches under the graph, each deployment's colour and name; its right end."""
    parts, x = [], left
    for place, (fill, stroke) in colours.items():
        text = f"runs on {place}"
        parts.append(
            f'<g class="legend" data-where="{_xml(place)}"><rect x="{_num(x)}" '
            f'y="{_num(top + 6)}" width="14" height="12" rx="2" fill="{fill}" '
            f'stroke="{stroke}"/><text x="{_num(x + 20)}" y="{_num(top + 16)}" '
            f'font-size="{_EDGE_FONT}" text-anchor="start">{_xml(text)}</text></g>')
        x += 34 + _text_width(text, _EDGE_CHAR_W)
    return parts, x


_RENDERERS = {"dot": render_dot, "mmd": render_mermaid, "svg": render_svg}


def render_graph(nodes: list[GraphNode], edges: list[GraphEdge], title: str, fmt: str) -> str:
    """Dispatch on fmt in {"dot", "mmd", "svg"}; raise ValueError naming the format and choices."""
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown graph format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return _RENDERERS[fmt](nodes, edges, title)
