"""Tests for the DOT / Mermaid / SVG workflow graph renderers."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from nb2cwl.backends.graph import (
    GraphEdge,
    GraphNode,
    render_dot,
    render_graph,
    render_mermaid,
)
from nb2cwl.backends.graph_svg import render_svg

SVG = "{http://www.w3.org/2000/svg}"
TRICKY = 'say "hi" <b>&amp;</b>\nline two — ünïcødé 学習 \\ back`tick #1 | pipe'


def diamond() -> tuple[list[GraphNode], list[GraphEdge]]:
    nodes = [
        GraphNode("in:data", "data.csv", "input"),
        GraphNode("cell 1", "load\n(cell 1)", "step"),
        GraphNode("cell-2", "clean", "step"),
        GraphNode("cell.3", "features", "step"),
        GraphNode("cell_4", "train", "step"),
        GraphNode("out:report", "report.html", "output"),
    ]
    edges = [
        GraphEdge("in:data", "cell 1", "file:data.csv"),
        GraphEdge("cell 1", "cell-2", "df"),
        GraphEdge("cell 1", "cell.3", "df"),
        GraphEdge("cell-2", "cell_4", "df_clean"),
        GraphEdge("cell.3", "cell_4", "X, y"),
        GraphEdge("cell 1", "cell_4", "config"),  # skips a layer
        GraphEdge("cell_4", "out:report", ""),
    ]
    return nodes, edges


def _numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", text)]


def _bbox(shape: ET.Element) -> tuple[float, float, float, float]:
    """(x, y, width, height) of a polygon, path or ellipse Graphviz drew."""
    if shape.tag == f"{SVG}ellipse":
        cx, cy, rx, ry = (float(shape.get(k)) for k in ("cx", "cy", "rx", "ry"))
        return cx - rx, cy - ry, 2 * rx, 2 * ry
    values = _numbers(shape.get("points") or shape.get("d") or "")
    xs, ys = values[0::2], values[1::2]
    return min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)


def svg_boxes(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """Node id -> (x, y, width, height) of its shape, read back from the SVG."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        if "node" in g.get("class", "").split():
            shape = next(c for c in g if c.tag in (f"{SVG}polygon", f"{SVG}path",
                                                   f"{SVG}ellipse"))
            out[g.get("data-id")] = _bbox(shape)
    return out


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and \
        b[1] < a[1] + a[3]


@pytest.mark.parametrize("fmt", ["dot", "mmd", "svg"])
def test_deterministic(fmt: str) -> None:
    nodes, edges = diamond()
    first = render_graph(nodes, edges, "wf", fmt)
    again = render_graph(list(nodes), list(edges), "wf", fmt)
    assert first == again
    assert first.endswith("\n")


@pytest.mark.parametrize("fmt", ["dot", "mmd", "svg"])
def test_empty_graph(fmt: str) -> None:
    out = render_graph([], [], "empty", fmt)
    assert "empty" in out
    if fmt == "svg":
        root = ET.fromstring(out)
        assert float(root.get("width").removesuffix("pt")) > 0
        assert float(root.get("height").removesuffix("pt")) > 0


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match=r"'png'.*dot, mmd, svg"):
        render_graph([], [], "t", "png")


def test_cycle_raises() -> None:
    nodes = [GraphNode(x, x, "step") for x in "abc"]
    edges = [GraphEdge("a", "b", ""), GraphEdge("b", "c", ""), GraphEdge("c", "b", "")]
    with pytest.raises(ValueError, match=r"cycle through \['b', 'c'\]"):
        render_svg(nodes, edges, "t")
    with pytest.raises(ValueError, match="cycle"):
        render_graph(nodes, edges, "t", "svg")
    # the text formats need no layout and draw a cycle as it is
    assert '"c" -> "b";' in render_dot(nodes, edges, "t")
    assert "n_c --> n_b" in render_mermaid(nodes, edges, "t")


def test_self_loop_is_a_cycle() -> None:
    with pytest.raises(ValueError, match="cycle"):
        render_svg([GraphNode("a", "a", "step")], [GraphEdge("a", "a", "")], "t")


def test_bad_input_rejected() -> None:
    a = GraphNode("a", "a", "step")
    with pytest.raises(ValueError, match="duplicate"):
        render_dot([a, a], [], "t")
    with pytest.raises(ValueError, match="unknown node"):
        render_mermaid([a], [GraphEdge("a", "zz", "")], "t")
    with pytest.raises(ValueError, match="kind"):
        render_svg([GraphNode("b", "b", "widget")], [], "t")


def test_dot_escaping_and_shapes() -> None:
    nodes = [
        GraphNode('id "q"\\', TRICKY, "step"),
        GraphNode("in", "x", "input"),
        GraphNode("out", "y", "output"),
    ]
    edges = [GraphEdge("in", 'id "q"\\', 'lab"el\nz'), GraphEdge('id "q"\\', "out", "")]
    dot = render_dot(nodes, edges, 'ti"tle')
    assert dot.startswith('digraph "ti\\"tle" {')
    assert "rankdir=TB" in dot
    # Graphviz reads entities in labels: the text `&amp;` is written `&amp;amp;`
    assert '"id \\"q\\"\\\\" [label="say \\"hi\\" <b>&amp;amp;</b>\\nline two — ünïcødé 学習' in dot
    assert '"in" -> "id \\"q\\"\\\\" [label="lab\\"el\\nz"];' in dot
    assert '"id \\"q\\"\\\\" -> "out";' in dot
    step_line = next(line for line in dot.splitlines() if line.startswith('  "id'))
    assert "shape=box" in step_line
    in_line = next(line for line in dot.splitlines() if line.startswith('  "in" ['))
    assert "shape=box" not in in_line
    # no raw newline may survive inside a quoted string: every statement is one line
    body = dot.splitlines()[1:-1]
    assert all(line.startswith("  ") and line.endswith(";") for line in body)


def test_mermaid_escaping() -> None:
    nodes = [GraphNode("a", TRICKY, "step"), GraphNode("b", "b", "output")]
    mmd = render_mermaid(nodes, [GraphEdge("a", "b", 'x "y" | z')], "my\ntitle")
    lines = mmd.splitlines()
    assert lines[0] == "%% my title"
    assert lines[1] == "flowchart TD"
    node_a = next(line for line in lines if line.strip().startswith("n_a["))
    assert node_a.strip() == (
        'n_a["say #quot;hi#quot; #lt;b#gt;#amp;amp;#lt;/b#gt;<br/>line two — ünïcødé 学習 '
        '\\ back#96;tick #35;1 #124; pipe"]'
    )
    assert '-->|"x #quot;y#quot; #124; z"| n_b' in mmd
    assert '"' not in node_a.strip()[5:-2]  # only the delimiting quotes remain


def test_mermaid_ids_sanitised_and_unique() -> None:
    ids = ["a b", "a-b", "a_b", "a.b", "a_b_2", "end", "1x", "ü"]
    nodes = [GraphNode(i, i, "step") for i in ids]
    edges = [GraphEdge("a b", "a-b", ""), GraphEdge("a-b", "a_b_2", "")]
    mmd = render_mermaid(nodes, edges, "t")
    defined = [re.match(r"\s+(\S+?)\[", line) for line in mmd.splitlines()]
    got = [m.group(1) for m in defined if m]
    assert len(got) == len(ids) == len(set(got))
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", g) and not g[0].isdigit() for g in got)
    assert "end" not in got
    mapping = dict(zip(ids, got, strict=True))
    assert f"{mapping['a b']} --> {mapping['a-b']}" in mmd
    assert f"{mapping['a-b']} --> {mapping['a_b_2']}" in mmd


def test_mermaid_styles_inputs_and_outputs() -> None:
    nodes, edges = diamond()
    mmd = render_mermaid(nodes, edges, "wf")
    assert ":::wfInput" in mmd and ":::wfOutput" in mmd
    assert '-->|"df"|' in mmd
    assert "n_cell_4 --> n_out_report" in mmd


def test_svg_escaping_well_formed() -> None:
    nodes = [GraphNode('<id & "x">', TRICKY, "step"), GraphNode("o", "<out>", "output")]
    svg = render_svg(nodes, [GraphEdge('<id & "x">', "o", 'a<b & "c"\nd')], '<T & "q">')
    root = ET.fromstring(svg)  # well-formed despite the markup characters
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert '<T & "q">' in texts
    assert 'say "hi" <b>&amp;</b>' in texts  # one <text> per label line
    assert "line two — ünïcødé 学習 \\ back`tick #1 | pipe" in texts
    assert 'a<b & "c"' in texts and "d" in texts
    assert '<id & "x">' in svg_boxes(svg)


def test_svg_one_group_per_node_and_edge() -> None:
    nodes, edges = diamond()
    root = ET.fromstring(render_svg(nodes, edges, "wf"))
    groups = [g for g in root.iter(f"{SVG}g") if "node" in g.get("class", "").split()]
    assert sorted(g.get("data-id") for g in groups) == sorted(n.id for n in nodes)
    assert len([g for g in root.iter(f"{SVG}g") if g.get("class") == "edge"]) == len(edges)
    fills = {next(c for c in g if c.tag != f"{SVG}title").get("fill") for g in groups}
    assert len(fills) == 3  # steps, inputs and outputs are styled apart
    steps = [g for g in groups if "nb2cwl-node" in g.get("class").split()]
    assert sorted(g.get("data-step") for g in steps) == ["cell 1", "cell-2", "cell.3", "cell_4"]


def test_svg_layers_and_canvas() -> None:
    nodes, edges = diamond()
    svg = render_svg(nodes, edges, "a title that is rather long for such a small graph")
    boxes = svg_boxes(svg)
    for e in edges:  # every node is drawn entirely below all of its predecessors
        _, sy, _, sh = boxes[e.source]
        assert boxes[e.target][1] > sy + sh
    assert boxes["cell-2"][1] == boxes["cell.3"][1]  # same layer, same row
    assert boxes["cell_4"][1] > boxes["cell-2"][1]
    for a in boxes:  # no two boxes overlap
        for b in boxes:
            assert a == b or not _overlap(boxes[a], boxes[b]), (a, b)
    root = ET.fromstring(svg)
    assert float(root.get("width").rstrip("pt")) > 0


def test_edge_labels_do_not_overprint_each_other_or_the_boxes() -> None:
    """Two long labels on edges side by side (the complaint: labels ran together)."""
    nodes = [GraphNode("s", "split", "step"), GraphNode("m", "map", "step"),
             GraphNode("g", "gather", "step")]
    edges = [GraphEdge("s", "m", "bootstrap_slopes, chunks, df"),
             GraphEdge("s", "g", "batches, bootstrap_slopes, df, high, low"),
             GraphEdge("m", "g", "results")]
    root = ET.fromstring(render_svg(nodes, edges, "t"))
    labels = []
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "edge":
            continue
        for text in g.iter(f"{SVG}text"):
            size = float(text.get("font-size"))
            width = 0.6 * size * len("".join(text.itertext()))
            labels.append((float(text.get("x")) - width / 2, float(text.get("y")) - size,
                           width, size))
    assert len(labels) == 3
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            assert not _overlap(a, b), (a, b)
    for box in svg_boxes(ET.tostring(root, encoding="unicode")).values():
        for label in labels:
            assert not _overlap(box, label), (box, label)


def test_multiline_labels_make_taller_wider_boxes() -> None:
    nodes = [GraphNode("a", "x", "step"), GraphNode("b", "a much longer label\nand\nmore", "step")]
    boxes = svg_boxes(render_svg(nodes, [], "t"))
    assert boxes["b"][2] > boxes["a"][2] and boxes["b"][3] > boxes["a"][3]


def test_explain_and_graph_show_where_each_step_runs(tmp_path) -> None:
    """Through the CLI: explain names each step's deployment; the graph labels it, colours
    the steps by it and shows the colours' legend, in SVG, DOT and Mermaid."""
    import subprocess
    import sys

    import nbformat

    cells = ["import time\ntime.sleep(2)\na = 1", "import time\ntime.sleep(2)\nb = 2",
             "print(a + b)"]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)

    def nb2cwl(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "nb2cwl", *args, str(path), "--target",
                               "cell_1=docker"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    explained = nb2cwl("explain")
    headers = [line for line in explained.splitlines() if line.startswith("step ")]
    assert any("(In [2])  on docker  after:" in h for h in headers), headers
    assert any("on local  after:" in h for h in headers), headers
    svg_path = tmp_path / "g.svg"
    nb2cwl("graph", "-o", str(svg_path))
    root = ET.fromstring(svg_path.read_text())
    steps = {g.get("data-step"): g for g in root.iter(f"{SVG}g")
             if "step" in (g.get("class") or "").split()}
    assert steps["cell_1"].get("data-where") == "docker"
    fills = {g.get("data-where"): g.find(f"{SVG}path").get("fill") for g in steps.values()}
    assert len(set(fills.values())) == 2, fills  # one colour per deployment
    legend = {g.get("data-where"): "".join(g.itertext()).strip() for g in root.iter(f"{SVG}g")
              if g.get("class") == "legend"}
    assert legend == {"docker": "runs on docker", "local": "runs on local"}
    texts = "".join(steps["cell_1"].itertext())
    assert "on docker" in texts
    dot = tmp_path / "g.dot"
    nb2cwl("graph", "-o", str(dot))
    assert "on docker" in dot.read_text() and dot.read_text().count("fillcolor=") >= 3
    mmd = tmp_path / "g.mmd"
    nb2cwl("graph", "-o", str(mmd))
    assert ":::on0" in mmd.read_text() and ":::on1" in mmd.read_text()
