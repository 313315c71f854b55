"""The walk over the code each replica runs: kinds given and edits recorded.

`ReplicaCode` holds the walk's state and the edits; what it does with statements, expressions,
calls of the notebook's functions and calls of library functions is in the mixins it is made
of (`statements`, `expressions`, `calls`, `library_calls`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from nb2cwl.passes.batch_kinds.calls import CallKinds
from nb2cwl.passes.batch_kinds.expressions import ExpressionKinds
from nb2cwl.passes.batch_kinds.library_calls import LibraryCallKinds
from nb2cwl.passes.batch_kinds.program import Program
from nb2cwl.passes.batch_kinds.scope import Scope
from nb2cwl.passes.batch_kinds.statements import StatementKinds
from nb2cwl.passes.batch_kinds.unit import Unit


@dataclass
class Findings:
    """What the analysis found in the replicas' code."""

    gradients: int = 0  # tape.gradient calls all-reduced
    applies: int = 0  # optimizer updates


class ReplicaCode(StatementKinds, ExpressionKinds, CallKinds, LibraryCallKinds):
    """Walks the code each replica runs, giving kinds and recording the edits it needs."""

    def __init__(self, program: Program, loop_batch: set[str], recording: bool = True,
                 where: Callable[[Unit, int], str] | None = None) -> None:
        self.program = program
        self.where = where or (lambda unit, line: f"cell {unit.cell}, line {line}")
        self.loop_batch = loop_batch  # names holding the global batch where the loop runs
        self.recording = recording  # False: only the kinds (code that runs once, unchanged)
        self.findings = Findings()
        self._analysed: dict[tuple[int, tuple[tuple[str, str], ...]], str] = {}
        self._active: list[int] = []
        self._captures: list[set[tuple[str, int, int, str]]] = []  # edits of the functions
        self._rewrites: dict[int, set[tuple[str, int, int, str]]] = {}  # being analysed

    def at(self, scope: Scope, node: ast.AST) -> str:
        """Where `node` is, as the user reads it."""
        return self.where(scope.unit, node.lineno)  # type: ignore[attr-defined]

    def wrap(self, unit: Unit, node: ast.AST, opening: str, closing: str = ")") -> None:
        start, end = unit.span(node)
        self.edit(unit, start, start, opening)
        self.edit(unit, end, end, closing)

    def edit(self, unit: Unit, start: int, end: int, text: str) -> None:
        if self._captures:
            self._captures[-1].add((unit.key, start, end, text))
        if self.recording:
            unit.edit(start, end, text)
