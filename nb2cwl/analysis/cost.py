"""A static estimate of how long a cell runs, for deciding where a step boundary pays.

Only orders of magnitude matter: a step boundary costs about a tenth of a second, so the
question is whether a cell is cheap (most are), or heavy enough that running it beside
another heavy cell gains more than a boundary costs. The estimate counts the work of each
statement, multiplies loop bodies by their iteration counts (known for `range(<constant>)`
and literal collections, assumed otherwise), follows calls into the notebook's own
functions, and charges known-heavy calls (`time.sleep(n)`, model fitting). A profile of a
real run (`nb2cwl profile`), or the timings JupyterLab records in the notebook, replace it.

A `while` loop (in the cell, or in a function of the notebook it calls) runs until a condition
the code alone cannot count, and a function that calls itself as often as its arguments make
it: their cost has no bound, and they are not assumed cheap. The estimate
says where it is (`Estimate.unbounded`); the partitioning treats the cell as heavy until a run
has measured it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

#: Seconds per expression node run once (CPython evaluates a few tens of millions a second).
NODE_SECONDS = 4e-8
#: Iterations assumed where a loop's count cannot be read off the code.
UNKNOWN_ITERATIONS = 100
#: Method calls that usually do real work (training, inference, transformations).
HEAVY_METHODS = {"fit": 0.5, "fit_transform": 0.5, "train": 0.5, "predict": 0.1,
                 "evaluate": 0.1, "transform": 0.05, "read_csv": 0.05, "savefig": 0.1}
#: Any other call into a library.
LIBRARY_CALL_SECONDS = 1e-3
_DEPTH = 4


@dataclass(frozen=True)
class Estimate:
    """A cell's estimated seconds, and the loop that makes them no bound, if any."""

    seconds: float
    unbounded: str = ""  # "a while loop at line 3", "fib() calls itself", ...


def estimate_cell(code: str, functions: dict[str, ast.AST] | None = None) -> Estimate:
    """Seconds the cell's code takes, roughly (see the module docstring).

    `functions` are the notebook's function definitions by name (for calls into them).
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return Estimate(0.0)
    estimator = _Estimator(functions or {})
    seconds = estimator.body(tree.body)
    return Estimate(seconds, estimator.unbounded[0] if estimator.unbounded else "")


def function_definitions(code: str) -> dict[str, ast.AST]:
    """The top-level function definitions of a cell's code, by name."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    return {node.name: node for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


class _Estimator:
    def __init__(self, functions: dict[str, ast.AST]) -> None:
        self.functions = functions
        self.depth = 0
        self.seen: dict[str, float] = {}
        self.calling: list[str] = []  # the notebook's functions being followed, innermost last
        self.unbounded: list[str] = []  # while loops met, in order

    def body(self, statements: list[ast.stmt]) -> float:
        return sum(self.statement(s) for s in statements)

    def statement(self, node: ast.stmt) -> float:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                             ast.Import, ast.ImportFrom)):
            return NODE_SECONDS  # defining is cheap; calls are counted where they happen
        if isinstance(node, (ast.For, ast.AsyncFor)):
            per_item = self.body(node.body) + self.expression(node.target)
            return self.expression(node.iter) + _count(node.iter) * per_item
        if isinstance(node, ast.While):
            if not (isinstance(node.test, ast.Constant) and not node.test.value):
                self.unbounded.append(_where_while(node.lineno, self.calling))
            return UNKNOWN_ITERATIONS * (self.body(node.body) + self.expression(node.test))
        total = 0.0
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                total += self.statement(child)
            else:
                total += self.expression(child)
        return total + NODE_SECONDS

    def expression(self, node: ast.AST) -> float:
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            per_item = sum(self.expression(p) for p in parts)
            for generator in reversed(node.generators):  # the outer loop last
                tests = sum(self.expression(c) for c in generator.ifs)
                per_item = (self.expression(generator.iter)
                            + _count(generator.iter) * (per_item + tests))
            return per_item
        if isinstance(node, ast.Call):
            return self.call(node)
        total = NODE_SECONDS
        for child in ast.iter_child_nodes(node):
            total += self.expression(child)
        return total

    def call(self, node: ast.Call) -> float:
        arguments = sum(self.expression(a) for a in [*node.args,
                                                     *(k.value for k in node.keywords)])
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = self.expression(func.value)
            if func.attr == "sleep" and node.args and isinstance(node.args[0], ast.Constant):
                value = node.args[0].value
                return receiver + arguments + (float(value) if isinstance(
                    value, (int, float)) else 0.0)
            return receiver + arguments + HEAVY_METHODS.get(func.attr, LIBRARY_CALL_SECONDS)
        if isinstance(func, ast.Name) and func.id in self.functions:
            return arguments + self._function(func.id)
        return arguments + NODE_SECONDS * 2

    def _function(self, name: str) -> float:
        if name in self.calling:  # recursion: as many calls as its arguments make
            self.unbounded.append(f"{name}() calls itself" + (
                f" (through {self.calling[-1]}())" if self.calling[-1] != name else ""))
        if name in self.seen:
            return self.seen[name]
        if self.depth >= _DEPTH:
            return NODE_SECONDS
        self.seen[name] = NODE_SECONDS  # a recursive call: counted once
        self.depth += 1
        self.calling.append(name)
        try:
            cost = self.body(self.functions[name].body)  # type: ignore[attr-defined]
        finally:
            self.depth -= 1
            self.calling.pop()
        self.seen[name] = cost
        return cost


def _where_while(line: int, calling: list[str]) -> str:
    """The while loop at `line`, in the cell or in the functions `calling` (outermost first)."""
    if not calling:
        return f"a while loop at line {line}"
    through = f", which {calling[0]}() calls" if len(calling) > 1 else ""
    return f"a while loop in {calling[-1]}() at line {line} of its cell{through}"


def _count(iterable: ast.AST) -> int:
    """Iterations of a loop over `iterable`, when the code says (range(5), [1, 2, 3])."""
    if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
        return max(len(iterable.elts), 1)
    if (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
            and iterable.func.id in ("range", "enumerate", "zip", "reversed", "sorted",
                                     "list")):
        if iterable.func.id != "range":
            return _count(iterable.args[0]) if iterable.args else UNKNOWN_ITERATIONS
        bounds = [a.value for a in iterable.args
                  if isinstance(a, ast.Constant) and isinstance(a.value, int)]
        if len(bounds) == len(iterable.args) and bounds:
            start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (
                bounds[0], bounds[1], bounds[2] if len(bounds) > 2 else 1)
            return max(len(range(start, stop, step or 1)), 1)
    return UNKNOWN_ITERATIONS
