"""Property: a random small notebook prints the same, cell by cell, as a workflow and in order.

Notebooks come from a grammar of assignments, aliases, mutations, functions (late-bound
globals, argument mutation), loops, conditionals, comprehensions and prints; the reference is
the cells run top to bottom in one namespace. CI runs a few examples
(NB2CWL_PROPERTY_EXAMPLES, default 5); benchmarks/RESULTS.md reports a larger run.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from equivalence import run_with_workflow
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import notebook

EXAMPLES = int(os.environ.get("NB2CWL_PROPERTY_EXAMPLES", "5"))


@dataclass
class Names:
    """What the program defined so far (so every generated line runs)."""

    ints: list[str] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)
    readers: list[str] = field(default_factory=list)  # f(v) -> v + a global int
    appenders: list[str] = field(default_factory=list)  # f(lst) appends to its argument
    counter: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


def _int_expr(data: st.DataObject, names: Names) -> str:
    options = [str(data.draw(st.integers(-5, 9)))]
    if names.ints:
        options.append(data.draw(st.sampled_from(names.ints)))
        options.append(f"{data.draw(st.sampled_from(names.ints))} + "
                       f"{data.draw(st.integers(1, 4))}")
    if names.lists:
        lst = data.draw(st.sampled_from(names.lists))
        options += [f"len({lst})", f"sum({lst})"]
    if names.readers and names.ints:
        options.append(f"{data.draw(st.sampled_from(names.readers))}"
                       f"({data.draw(st.sampled_from(names.ints))})")
    return data.draw(st.sampled_from(options))


def _statement(data: st.DataObject, names: Names) -> str:
    kinds = ["int", "list"]
    if names.lists:
        kinds += ["mutate", "alias", "comprehension", "loop"]
    if names.ints:
        kinds += ["augment", "if", "reader"]
    if names.lists and names.appenders:
        kinds.append("appender_call")
    if names.lists:
        kinds.append("appender_def")
    kind = data.draw(st.sampled_from(kinds))
    if kind == "int":
        value = _int_expr(data, names)
        name = names.fresh("a")
        names.ints.append(name)
        return f"{name} = {value}"
    if kind == "list":
        first, second = _int_expr(data, names), _int_expr(data, names)
        name = names.fresh("L")
        names.lists.append(name)
        return f"{name} = [{first}, {second}]"
    lst = data.draw(st.sampled_from(names.lists)) if names.lists else ""
    if kind == "mutate":
        return data.draw(st.sampled_from([
            f"{lst}.append({_int_expr(data, names)})",
            f"{lst}[0] = {_int_expr(data, names)}",
            f"{lst} += [{_int_expr(data, names)}]",
            f"{lst}.sort()",
            f"{lst}.extend({data.draw(st.sampled_from(names.lists))})",
        ]))
    if kind == "alias":
        name = names.fresh("L")
        names.lists.append(name)
        return f"{name} = {lst}"
    if kind == "comprehension":
        name = names.fresh("L")
        if names.readers:
            body = f"{data.draw(st.sampled_from(names.readers))}(x)"
        else:
            body = "x * 2"
        statement = f"{name} = [{body} for x in {lst}]"
        names.lists.append(name)
        return statement
    if kind == "loop":
        target = data.draw(st.sampled_from(names.ints)) if names.ints else None
        if target is None:
            target = names.fresh("a")
            names.ints.append(target)
            return f"{target} = 0\nfor x in {lst}:\n    {target} += x"
        return f"for x in {lst}:\n    {target} += x"
    if kind == "augment":
        return f"{data.draw(st.sampled_from(names.ints))} += {_int_expr(data, names)}"
    if kind == "if":
        condition = data.draw(st.sampled_from(names.ints))
        target = data.draw(st.sampled_from(names.ints))
        return f"if {condition} > 3:\n    {target} = {_int_expr(data, names)}"
    if kind == "reader":
        name = names.fresh("f")
        global_int = data.draw(st.sampled_from(names.ints))
        names.readers.append(name)
        return f"def {name}(v):\n    return v + {global_int}"
    if kind == "appender_def":
        name = names.fresh("g")
        names.appenders.append(name)
        return f"def {name}(lst):\n    lst.append(1)"
    return f"{data.draw(st.sampled_from(names.appenders))}({lst})"


def _cells(data: st.DataObject) -> list[str]:
    names = Names()
    cells = []
    for _ in range(data.draw(st.integers(3, 6))):
        lines = [_statement(data, names) for _ in range(data.draw(st.integers(1, 3)))]
        shown = names.ints + names.lists
        if shown:
            picked = data.draw(st.lists(st.sampled_from(shown), min_size=1, max_size=3,
                                        unique=True))
            lines.append(f"print({', '.join(picked)})")
        cells.append("\n".join(lines))
    return cells


def _top_to_bottom(cells: list[str]) -> dict[int, list[str]]:
    namespace: dict = {"__name__": "__main__"}
    outputs: dict[int, list[str]] = {}
    for number, cell in enumerate(cells):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(cell, f"<cell {number}>", "exec"), namespace)
        text = buffer.getvalue()
        outputs[number + 1] = [f"stdout: {text}" if text else ""]
    return outputs


@pytest.mark.streamflow
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_notebooks_print_the_same_as_top_to_bottom(data: st.DataObject) -> None:
    cells = _cells(data)
    expected = _top_to_bottom(cells)
    with tempfile.TemporaryDirectory(prefix="nb2cwl-property-") as tmp:
        path = notebook(Path(tmp) / "random.ipynb", cells)
        actual, _ = run_with_workflow(path, Path(tmp) / "run")
    assert actual == expected, "\n\n".join(cells)
