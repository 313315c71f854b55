"""The kernel's history: `_`, `__`, `___` (the last results), `In`, `Out`, `_i3`, `_5`.

In Jupyter, a cell that shows a result also binds it to `_` (and moves the older ones to
`__` and `___`). A cell reading `_` reads the result of the last cell that showed one before
it; every such cell then hands `_` on. Only notebooks that read these names pay for it. The
input and output history (`In`, `Out`, `_ih`, `_5`...) depends on every cell before: a cell
reading it makes the notebook run as one step.
"""

from __future__ import annotations

import re

from nb2cwl.analysis.effects import Effects
from nb2cwl.analysis.knowledge.magics import HISTORY_NAMES, NONE_RETURNING, RESULT_NAMES
from nb2cwl.frontend.model import Cell

_NUMBERED = re.compile(r"^_(i{1,3})?\d+$")


def kernel_history(cells: list[tuple[Cell, Effects]]) -> None:
    """Add the reads and writes of the kernel's history to the cells that use it. Passing an
    old value through (`for _ in items:`) is no use of it."""
    bound: set[str] = set()
    uses_results = False
    for _, fx in cells:
        for name in sorted(fx.reads - bound):
            if name in HISTORY_NAMES or _NUMBERED.match(name):
                fx.opaque_namespace.append(
                    (0, f"{name} is the kernel's input or output history, which depends on "
                        "every cell run before"))
            elif name in RESULT_NAMES and name not in fx.passes_through:
                uses_results = True
        bound |= fx.writes
    if not uses_results:
        return
    own_print = any("print" in fx.writes for _, fx in cells)  # not the builtin, returning None
    for cell, fx in cells:
        if shows_result(cell.code, none_returning=() if own_print else NONE_RETURNING):
            # may bind `_` (a result of None does not): the older values pass through
            fx.reads |= set(RESULT_NAMES) - fx.writes
            fx.writes |= set(RESULT_NAMES)


def shows_result(code: str, none_returning: tuple[str, ...] = ()) -> bool:
    """True when a cell's last statement is an expression not silenced by `;`, other than a
    call of a builtin `none_returning` names (`print(...)` shows no result)."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return False
    last = tree.body[-1].value
    if isinstance(last, ast.Call) and isinstance(last.func, ast.Name) and (
            last.func.id in none_returning):
        return False
    lines = [line.split("#", 1)[0].rstrip() for line in code.rstrip().splitlines()]
    lines = [line for line in lines if line]
    return not (lines and lines[-1].endswith(";"))
