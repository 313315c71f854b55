"""The strings an expression may evaluate to, where the code says: for file paths.

`"data.csv"`, `f"part{i}.csv"` inside `for i in range(8)`, `os.path.join(folder, name)` with
both known, `Path("out") / f"{name}.png"` for each name of a literal list, and an item of a
list the notebook filled with such strings (`for path in paths`). A name's possible values
are in the namespace state: `const_strings` (one), `choices` (one of several, e.g. a loop
variable) and `string_items` (what a list holds). An answer is a superset of what can happen,
or None: the analysis then says it cannot resolve the path.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

from astroid import nodes

from nb2cwl.analysis.names import root_name
from nb2cwl.analysis.state import NamespaceState

#: More possible values than this are not worth naming one by one: the path is unresolved.
MOST = 256
_PATHS = ("Path", "PurePath", "PosixPath")
_CONVERSIONS = {-1: lambda v: format(v, ""), 115: str, 114: repr, 97: ascii}


def string_values(node: nodes.NodeNG | None, state: NamespaceState) -> frozenset[str] | None:
    """Every string `node` may evaluate to, or None where the code does not say."""
    values = _values(node, state)
    if values is None or not all(isinstance(v, str) for v in values):
        return None
    return values  # type: ignore[return-value]


def name_values(name: str, state: NamespaceState) -> frozenset[str | int | float] | None:
    """The constants the global `name` may be bound to now, or None."""
    if name in state.choices:
        return state.choices[name]
    known = state.const_strings.get(name)
    return None if known is None else frozenset({known})


def iteration_values(iterable: nodes.NodeNG,
                     state: NamespaceState) -> frozenset[str | int | float] | None:
    """The constants a loop over `iterable` binds its variable to (`range(8)`, a literal list
    of constants, a list of known strings), or None."""
    if isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name) and (
            iterable.func.name == "range") and not iterable.keywords:
        bounds = [a.value for a in iterable.args
                  if isinstance(a, nodes.Const) and type(a.value) is int]
        if len(bounds) == len(iterable.args) and 1 <= len(bounds) <= 3 and (
                len(bounds) < 3 or bounds[2] != 0):
            numbers = range(*bounds)
            return frozenset(numbers) if len(numbers) <= MOST else None
        return None
    if isinstance(iterable, (nodes.List, nodes.Tuple, nodes.Set)):
        found: set[str | int | float] = set()
        for element in iterable.elts:
            values = _values(element, state)
            if values is None:
                return None
            found |= values
        return frozenset(found) if len(found) <= MOST else None
    if isinstance(iterable, nodes.Name) and iterable.name in state.string_items:
        return state.string_items[iterable.name]  # type: ignore[return-value]
    return None


def collection_strings(node: nodes.NodeNG, state: NamespaceState) -> frozenset[str] | None:
    """The strings a list, tuple or set `node` holds, when all are known: a literal, or a
    comprehension over a known loop (`[f"part{i}.csv" for i in range(8)]`)."""
    if isinstance(node, (nodes.List, nodes.Tuple, nodes.Set)):
        found: set[str] = set()
        for element in node.elts:
            values = string_values(element, state)
            if values is None:
                return None
            found |= values
        return frozenset(found)
    if isinstance(node, (nodes.ListComp, nodes.SetComp)) and len(node.generators) == 1:
        generator = node.generators[0]
        if not isinstance(generator.target, nodes.AssignName):
            return None
        items = iteration_values(generator.iter, state)
        if items is None:
            return None
        name = generator.target.name
        before = state.choices.get(name)
        state.choices[name] = items  # the comprehension's own variable, for its element
        try:
            return string_values(node.elt, state)  # filters only leave out some
        finally:
            if before is None:
                state.choices.pop(name, None)
            else:
                state.choices[name] = before
    return None


def _values(node: nodes.NodeNG | None,
            state: NamespaceState) -> frozenset[str | int | float] | None:
    if node is None:
        return None
    if isinstance(node, nodes.Const) and type(node.value) in (str, int, float):
        return frozenset({node.value})
    if isinstance(node, nodes.Name):
        return name_values(node.name, state)
    if isinstance(node, nodes.JoinedStr):
        return _joined(node, state)
    if isinstance(node, nodes.BinOp) and node.op in ("+", "/"):
        left, right = string_values(node.left, state), string_values(node.right, state)
        if left is None or right is None:
            return None
        return _combined([left, right], "".join if node.op == "+" else "/".join)
    if isinstance(node, nodes.Call):
        func = node.func
        name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
        if name in _PATHS and len(node.args) == 1 and not node.keywords:
            return string_values(node.args[0], state)
        if name in _PATHS and not node.args and not node.keywords:
            return frozenset({"."})  # the working directory
        if (name == "join" and isinstance(func, nodes.Attribute) and node.args
                and root_name(func.expr) in ("os", "path", "osp")):
            parts = [string_values(a, state) for a in node.args]
            if any(p is None for p in parts):
                return None
            return _combined(parts, _path_join)  # type: ignore[arg-type]
    return None


def _joined(node: nodes.JoinedStr, state: NamespaceState) -> frozenset[str] | None:
    parts: list[frozenset[str]] = []
    for value in node.values:
        if isinstance(value, nodes.Const):
            parts.append(frozenset({str(value.value)}))
        elif isinstance(value, nodes.FormattedValue) and value.format_spec is None:
            inner = _values(value.value, state)
            convert = _CONVERSIONS.get(value.conversion)
            if inner is None or convert is None:
                return None
            parts.append(frozenset(convert(v) for v in inner))
        else:
            return None
    return _combined(parts, "".join)


def _path_join(parts: tuple[str, ...]) -> str:
    return "/".join(part.rstrip("/") for part in parts if part)


def _combined(parts: list[frozenset[str]],
              join: Callable[[tuple[str, ...]], str]) -> frozenset[str] | None:
    """Every way of choosing one value of each part, joined; None past MOST of them."""
    size = 1
    for part in parts:
        size *= len(part)
    if size > MOST:
        return None
    return frozenset(join(chosen) for chosen in product(*parts))
