"""The names of one function (or of a lifted loop body) as the batch-kind analysis walks it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from nb2cwl.passes.batch_kinds.program import Program
from nb2cwl.passes.batch_kinds.unit import Unit


@dataclass
class Scope:
    """The names of one function (or of the lifted loop body) as the analysis walks it."""

    kinds: dict[str, str]
    function: ast.FunctionDef | None  # None: the lifted body of a loop
    unit: Unit
    nested: dict[str, ast.FunctionDef] = field(default_factory=dict)
    outer: Scope | None = None
    returns: list[str] = field(default_factory=list)
    local_names: set[str] = field(default_factory=set)
    layers: set[str] = field(default_factory=set)  # local names holding Keras layers/models
    entry: bool = False  # the step function itself: what it returns leaves the replicas

    def is_layer(self, name: str, program: Program) -> bool:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.layers:
                return True
            if name in scope.kinds:
                return False
            scope = scope.outer
        return name in program.layers

    def kind(self, name: str) -> str | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.kinds:
                return scope.kinds[name]
            scope = scope.outer
        return None
