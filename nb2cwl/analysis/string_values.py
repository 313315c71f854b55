"""The strings an expression may evaluate to, where the code says: for file paths.

`"data.csv"`, `f"part{i}.csv"` inside `for i in range(8)`, `os.path.join(folder, name)` with
both known, `Path("out") / f"{name}.png"` for each name of a literal list, and an item of a
list the notebook filled with such strings (`for path in paths`). A name's possible values
are in the namespace state: `const_strings` (one), `choices` (one of several, e.g. a loop
variable) and `string_items` (what a list holds). An answer is a superset of what can happen,
or None: the analysis then says it cannot resolve the path.

Where a name is not the notebook's global as the state knows it now, its value is unknown:
a comprehension's or a function's own names (`hidden`), and, in a function body, which runs
when called, every global but a constant string the notebook binds once (`constants_only`);
in a generator
expression, which runs when consumed, every name (`no_names`). A list's strings are followed
only for a plain list (`plain_lists`): one the notebook uses nowhere but in
`xs = [...]`, `xs.append(...)`, `for x in xs`, `print(xs)` and `len(xs)`, outside functions,
classes and generator expressions. In a notebook with code the analysis cannot read (exec,
a star import, `%run`: `NotebookNames.opaque`), no name's strings are followed at all.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable, Collection, Iterable
from itertools import product
from pathlib import PurePosixPath

from astroid import nodes

from nb2cwl.analysis.knowledge import magics as mk
from nb2cwl.analysis.state import NamespaceState, NotebookNames

#: More possible values than this are not worth naming one by one: the path is unresolved.
MOST = 256
_PATHS = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath",
                    "pathlib.PurePosixPath"})
_CONVERSIONS = {-1: lambda v: format(v, ""), 115: str, 114: repr, 97: ascii}
_OS_PATH = ("os.path", "posixpath")

Value = str | int | float


def string_values(node: nodes.NodeNG | None, state: NamespaceState,
                  hidden: Collection[str] = (), constants_only: bool = False,
                  no_names: bool = False) -> frozenset[str] | None:
    """Every string `node` may evaluate to, or None where the code does not say."""
    return _Reader(state, hidden, constants_only, no_names).strings(node)


def notebook_names(codes: Iterable[str]) -> NotebookNames:
    """What the notebook's code, each cell's in order, says of its names (see the module
    docstring)."""
    plain: dict[str, bool] = {}
    bindings: dict[str, int] = {}
    declared: set[str] = set()
    for code in codes:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError):
            return NotebookNames(opaque=True)
        parents = {child: parent for parent in ast.walk(tree)
                   for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(tree):
            if _opaque(node):
                return NotebookNames(opaque=True)
            for name in _bound_names(node):
                bindings[name] = bindings.get(name, 0) + 1
            if isinstance(node, ast.Call) and _magic(node):
                for argument in node.args[1:]:  # `%time xs.extend(ys)`: code in a string
                    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                        for word in re.findall(r"[A-Za-z_]\w*", argument.value):
                            plain[word] = False
                            bindings[word] = 2
                            declared.add(word)
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    plain[name] = False
                    bindings[name] = 2
                    declared.add(name)
            if isinstance(node, ast.Name):
                plain[node.id] = plain.get(node.id, True) and _plain_use(node, parents)
    return NotebookNames(frozenset(name for name, kept in plain.items() if kept),
                         frozenset(name for name, count in bindings.items() if count == 1),
                         frozenset(declared))


def _bound_names(node: ast.AST) -> list[str]:
    """The names `node` binds (or unbinds), in any scope."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    return []


#: Names and attributes through which code reads or binds globals the analysis cannot see.
_NAMESPACE_NAMES = frozenset({"exec", "eval", "globals", "locals", "vars", "__import__",
                              "__builtins__", "__main__", "builtins"})
_NAMESPACE_ATTRIBUTES = frozenset({"exec", "eval", "user_ns", "user_global_ns", "push", "ex",
                                   "ev", "run_cell", "run_code", "magic", "f_globals",
                                   "_getframe", "modules", "__dict__", "__builtins__"})
_NAMESPACE_MAGICS = frozenset(
    name for table in (mk.LINE_MAGICS, mk.CELL_MAGICS) for name, kind in table.items()
    if kind == mk.NAMESPACE)


def _opaque(node: ast.AST) -> bool:
    """Code that may bind any name: a star import, exec(), globals(), IPython's namespace
    (`user_ns`, `%run`, `%store -r`, `%pylab`), a frame's or a module's globals."""
    if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
        return True
    if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            a.name.split(".")[0] in _NAMESPACE_NAMES for a in node.names):
        return True  # import builtins, import __main__
    if isinstance(node, ast.Name) and node.id in _NAMESPACE_NAMES:
        return True
    if isinstance(node, ast.Attribute) and node.attr in _NAMESPACE_ATTRIBUTES:
        return True
    return isinstance(node, ast.Call) and _magic(node) and isinstance(
        node.args[0], ast.Constant) and node.args[0].value in _NAMESPACE_MAGICS


def _magic(node: ast.Call) -> bool:
    return (isinstance(node.func, ast.Attribute) and node.args
            and node.func.attr in ("run_line_magic", "run_cell_magic"))


def _plain_use(node: ast.Name, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    scope = parent
    while scope is not None:
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                              ast.ClassDef, ast.GeneratorExp)):
            return False  # it runs later, or elsewhere
        scope = parents.get(scope)
    if isinstance(node.ctx, ast.Store):
        return (isinstance(parent, ast.Assign) and parent.targets == [node]
                and isinstance(parent.value, (ast.List, ast.Set, ast.ListComp, ast.SetComp))
                and isinstance(parents.get(parent), ast.Module))
    if isinstance(node.ctx, ast.Del):
        return False
    if isinstance(parent, ast.Attribute) and parent.attr in ("append", "add"):
        call = parents.get(parent)
        return isinstance(call, ast.Call) and call.func is parent
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        return True
    if not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)):
        return False
    if parent.func.id == "map":  # map(pd.read_csv, paths) only iterates them
        return parent.args[1:] == [node]
    return node in parent.args and parent.func.id in ("print", "len")


def name_values(name: str, state: NamespaceState) -> frozenset[Value] | None:
    """The constants the global `name` may be bound to now, or None."""
    if name in state.choices:
        return state.choices[name] or None
    known = state.const_strings.get(name)
    return None if known is None else frozenset({known})


def iteration_values(iterable: nodes.NodeNG, state: NamespaceState) -> frozenset[Value] | None:
    """The constants a loop over `iterable` binds its variable to (`range(8)`, a literal list
    of constants, a list of known strings), or None."""
    return _Reader(state, (), False).items(iterable)


def changed_in_loop(loop: nodes.For | nodes.While, state: NamespaceState) -> None:
    """Forget the strings of the names the loop may rebind, and of the lists it may change
    or read otherwise than `xs.append(s)`: its body is walked once, so a read in it would
    see only what was known before the loop, not what an earlier iteration left."""
    parts = [*loop.body, *loop.orelse, loop.test if isinstance(loop, nodes.While) else None]
    iterated = loop.iter.name if isinstance(loop, nodes.For) and isinstance(
        loop.iter, nodes.Name) else None
    for part in parts:
        if part is None:
            continue
        for call in part.nodes_of_class(nodes.Call):  # any call may run a function that
            for name in state.names.declared_global:  # rebinds a global it declares
                state.forget_strings_of(name)
            if (isinstance(call.func, nodes.Name) and call.func.name in _NAMESPACE_NAMES) or (
                    isinstance(call.func, nodes.Attribute)
                    and call.func.attrname in ("run_line_magic", "run_cell_magic")):
                state.forget_strings()  # exec(), %time x = ..., %run: any name
        if any(isinstance(node, nodes.ImportFrom) and any(n == "*" for n, _ in node.names)
               for node in part.nodes_of_class(nodes.ImportFrom)):
            state.forget_strings()
        for used in part.nodes_of_class(nodes.Name):  # `g()`, `map(g, xs)`, `@g`: what the
            summary = state.functions.get(used.name)  # notebook's function may rebind
            for name in summary.effects.writes if summary is not None else ():
                state.forget_strings_of(name)
        for node in part.nodes_of_class((nodes.AssignName, nodes.DelName, nodes.Name,
                                         nodes.FunctionDef, nodes.ClassDef, nodes.Import,
                                         nodes.ImportFrom)):
            if isinstance(node, (nodes.Import, nodes.ImportFrom)):
                names = [alias or name.split(".")[0] for name, alias in node.names]
            elif isinstance(node, nodes.Name):
                appended = (isinstance(node.parent, nodes.Attribute)
                            and node.parent.attrname in ("append", "add")
                            and isinstance(node.parent.parent, nodes.Call)
                            and node.parent.parent.func is node.parent)
                if not appended or node.name == iterated:  # `for p in ps: ps.append(q)`
                    state.string_items.pop(node.name, None)
                continue
            else:
                names = [node.name]
            for name in names:
                state.forget_strings_of(name)


def collection_strings(node: nodes.NodeNG, state: NamespaceState) -> frozenset[str] | None:
    """The strings a list, tuple or set `node` holds, when all are known: a literal, or a
    comprehension over a known loop (`[f"part{i}.csv" for i in range(8)]`)."""
    reader = _Reader(state, (), False)
    if isinstance(node, (nodes.List, nodes.Tuple, nodes.Set)):
        return reader.union(node.elts, strings=True)  # type: ignore[return-value]
    if isinstance(node, (nodes.ListComp, nodes.SetComp)) and len(node.generators) == 1:
        generator = node.generators[0]
        if not isinstance(generator.target, nodes.AssignName):
            return None
        items = reader.items(generator.iter)
        if items is None:
            return None
        reader.bound = {generator.target.name: items}  # filters only leave some out
        return reader.strings(node.elt)
    return None


class _Reader:
    def __init__(self, state: NamespaceState, hidden: Collection[str],
                 constants_only: bool, no_names: bool = False) -> None:
        self.state = state
        self.hidden = hidden
        self.constants_only = constants_only
        self.no_names = no_names
        self.bound: dict[str, frozenset[Value]] = {}  # a comprehension's own variable

    def strings(self, node: nodes.NodeNG | None) -> frozenset[str] | None:
        values = self.values(node)
        if not values or not all(isinstance(v, str) for v in values):
            return None  # (no value at all: the code cannot run, or the state is wrong)
        return values  # type: ignore[return-value]

    def items(self, iterable: nodes.NodeNG) -> frozenset[Value] | None:
        if isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name) and (
                iterable.func.name == "range") and not iterable.keywords and (
                "range" not in self.state.bound):
            bounds = [a.value for a in iterable.args
                      if isinstance(a, nodes.Const) and type(a.value) is int]
            if len(bounds) == len(iterable.args) and 1 <= len(bounds) <= 3 and (
                    len(bounds) < 3 or bounds[2] != 0):
                numbers = range(*bounds)
                return frozenset(numbers) if 0 < len(numbers) <= MOST else None
            return None
        if isinstance(iterable, (nodes.List, nodes.Tuple, nodes.Set)):
            found = self.union(iterable.elts, strings=False)
            return found if found and len(found) <= MOST else None
        if isinstance(iterable, nodes.Name) and not self.constants_only and (
                not self.no_names and iterable.name not in self.hidden):
            return (None if self.state.names.opaque
                    else self.state.string_items.get(iterable.name) or None)
        return None

    def union(self, elements: list[nodes.NodeNG], strings: bool) -> frozenset[Value] | None:
        """What the elements may be, together (strings only: `strings`); None where one is
        not known."""
        found: set[Value] = set()
        for element in elements:
            values = self.strings(element) if strings else self.values(element)
            if values is None:
                return None
            found |= values
        return frozenset(found)

    def values(self, node: nodes.NodeNG | None) -> frozenset[Value] | None:
        if node is None:
            return None
        if isinstance(node, nodes.Const) and type(node.value) in (str, int, float):
            return frozenset({node.value})
        if isinstance(node, nodes.Name):
            return self._name(node.name)
        if isinstance(node, nodes.JoinedStr):
            return self._joined(node)
        if isinstance(node, nodes.BinOp) and node.op in ("+", "/"):
            left, right = self.strings(node.left), self.strings(node.right)
            if left is None or right is None:
                return None
            if node.op == "+":
                return _combined([left, right], "".join)
            return _combined([left, right], _path_join)  # a pathlib path: `out / "x.csv"`
        if isinstance(node, nodes.Call):
            return self._call(node)
        return None

    def _name(self, name: str) -> frozenset[Value] | None:
        if name in self.bound:
            return self.bound[name]
        if name in self.hidden or self.no_names or self.state.names.opaque:
            return None
        if self.constants_only:  # a function's body: the value when it is called
            known = self.state.const_strings.get(name)
            if known is None or name not in self.state.names.bound_once:
                return None
            return frozenset({known})
        return name_values(name, self.state)

    def _call(self, node: nodes.Call) -> frozenset[Value] | None:
        func = node.func
        name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
        if node.keywords:
            return None
        if self._qualified(func) in _PATHS:
            if not node.args:
                return frozenset({"."})  # the working directory
            parts = [self.strings(a) for a in node.args]
            if any(p is None for p in parts):
                return None
            return _combined(parts, _path_join)  # type: ignore[arg-type]
        if name == "join" and isinstance(func, nodes.Attribute) and node.args and (
                self._is_os_path(func.expr)):
            parts = [self.strings(a) for a in node.args]
            if any(p is None for p in parts):
                return None
            return _combined(parts, lambda chosen: posixpath.join(*chosen))  # type: ignore
        return None

    def _qualified(self, node: nodes.NodeNG) -> str | None:
        """`Path` imported from pathlib, `pathlib.Path`: the dotted name; else None."""
        imports = self.state.imports
        if isinstance(node, nodes.Name):
            return imports.get(node.name)
        if isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name):
            module = imports.get(node.expr.name)
            return None if module is None else f"{module}.{node.attrname}"
        return None

    def _is_os_path(self, node: nodes.NodeNG) -> bool:
        """`os.path`, or a name imported as it (`from os import path`, `import os.path as
        osp`)."""
        imports = self.state.imports
        if isinstance(node, nodes.Attribute) and node.attrname == "path":
            return isinstance(node.expr, nodes.Name) and imports.get(node.expr.name) == "os"
        return isinstance(node, nodes.Name) and imports.get(node.name) in _OS_PATH

    def _joined(self, node: nodes.JoinedStr) -> frozenset[Value] | None:
        parts: list[frozenset[str]] = []
        for value in node.values:
            if isinstance(value, nodes.Const):
                parts.append(frozenset({str(value.value)}))
            elif isinstance(value, nodes.FormattedValue) and value.format_spec is None:
                inner = self.values(value.value)
                convert = _CONVERSIONS.get(value.conversion)
                if inner is None or convert is None:
                    return None
                parts.append(frozenset(convert(v) for v in inner))
            else:
                return None
        return _combined(parts, "".join)


def _path_join(parts: tuple[str, ...]) -> str:
    """What pathlib makes of the parts: joined (an absolute part starts anew), normalised."""
    return str(PurePosixPath(*parts))


def _combined(parts: list[frozenset[str]],
              join: Callable[[tuple[str, ...]], str]) -> frozenset[str] | None:
    """Every way of choosing one value of each part, joined; None past MOST of them."""
    size = 1
    for part in parts:
        size *= len(part)
    if size > MOST or size == 0:
        return None
    return frozenset(join(chosen) for chosen in product(*parts))
