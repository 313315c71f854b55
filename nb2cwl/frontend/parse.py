"""Syntax checking of converted cell code, with the cell and line of the error."""

from __future__ import annotations

import ast
from dataclasses import replace

from nb2cwl.errors import CellSyntaxError, Location


def check_syntax(code: str, source: str, where: Location) -> None:
    """Raise CellSyntaxError naming the cell and line when `code` is not valid Python."""
    try:
        ast.parse(code)
    except SyntaxError as exc:
        line = exc.lineno
        text = ""
        if line is not None:
            lines = source.splitlines()
            if 0 < line <= len(lines):
                text = f": {lines[line - 1].strip()[:80]}"
        message = f"SyntaxError: {exc.msg}{text}"
        raise CellSyntaxError(message, replace(where, line=line)) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        kind = type(exc).__name__
        raise CellSyntaxError(f"the cell cannot be parsed ({kind}): it is nested too deeply for "
                              "Python to compile; split the expression", where) from None
    try:
        compile(code, "<cell>", "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except (RecursionError, MemoryError):
        raise CellSyntaxError("the cell is nested too deeply for Python to compile; split the "
                              "expression", where) from None
