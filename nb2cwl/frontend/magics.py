"""IPython magics and `!shell` lines, converted by IPython's own input transformer.

Every magic is accepted: a step runs it with IPython's own shell, as the kernel does. What a
magic does to the program is the analysis' business (analysis/knowledge/magics.py).
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from IPython.core.inputtransformer2 import TransformerManager

from nb2cwl.errors import CellSyntaxError, Location
from nb2cwl.frontend.model import Magic

_transformer = TransformerManager()
TOO_DEEP = ("the cell is nested too deeply for Python to compile (it fails in Jupyter too); "
            "split the expression")


def convert_cell(source: str, where: Location) -> tuple[str, tuple[Magic, ...]]:
    """Return the cell's Python code and the magics in it."""
    try:
        code = _transformer.transform_cell(source)
    except SyntaxError as exc:  # IPython raises for malformed magic syntax
        raise CellSyntaxError(f"cannot convert IPython syntax: {exc.msg}",
                              _at(where, exc.lineno)) from None
    except (RecursionError, MemoryError):
        raise CellSyntaxError(TOO_DEEP, where) from None
    try:
        magics = tuple(find_magics(code))
    except (RecursionError, MemoryError):
        raise CellSyntaxError(TOO_DEEP, where) from None
    return code, magics


def find_magics(code: str) -> list[Magic]:
    """The get_ipython() calls IPython's transformer produced in `code`."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: list[Magic] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        if not (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name)
                and receiver.func.id == "get_ipython"):
            continue
        method = node.func.attr
        args = [a.value if isinstance(a, ast.Constant) else "" for a in node.args]
        if method == "run_line_magic" and args:
            found.append(Magic("line", str(args[0]), str(args[1] if len(args) > 1 else ""),
                               node.lineno))
        elif method == "run_cell_magic" and args:
            found.append(Magic("cell", str(args[0]), str(args[1] if len(args) > 1 else ""),
                               node.lineno))
        elif method in ("system", "getoutput"):
            found.append(Magic("shell", method, str(args[0] if args else ""), node.lineno))
    return found


def _at(where: Location, line: int | None) -> Location:
    return replace(where, line=line)


#: nb2cwl's own magics (nb2cwl/integrations/ipython): they drive nb2cwl from Jupyter, and a
#: workflow step never runs them. `%%nb2cwl step [--deployment NAME]` keeps its body, which
#: runs as the cell's code (on NAME).
_OWN_LINE = re.compile(r"^\s*%(?:nb2cwl\b|(?:re)?load_ext\s+nb2cwl\s*$)")
_OWN_CELL = re.compile(r"^\s*%%nb2cwl\b(.*)$")


def own_magics(source: str) -> tuple[str, str | None, int]:
    """`source` with nb2cwl's own magic lines turned into comments (line numbers kept), the
    deployment a `%%nb2cwl step --deployment NAME` first line asks for, and how many lines
    were turned."""
    lines = source.split("\n")
    deployment = None
    turned = 0
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        cell = _OWN_CELL.match(lines[first])
        if cell:
            words = cell.group(1).split()
            for option in ("--deployment", "-d"):
                if option in words[:-1]:
                    deployment = words[words.index(option) + 1]
            for word in words:
                if word.startswith("--deployment="):
                    deployment = word.split("=", 1)[1]
            lines[first] = "# " + lines[first].lstrip()
            turned += 1
    for number, line in enumerate(lines):
        if _OWN_LINE.match(line):
            lines[number] = "# " + line.lstrip()
            turned += 1
    return "\n".join(lines), deployment, turned
