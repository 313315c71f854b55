"""The kind of each expression of the code each replica runs, and the edits operators need
(a mean or constant added to a sum counts as its share)."""

from __future__ import annotations

import ast
from collections.abc import Callable

from nb2cwl.passes.batch_kinds.kinds import HELPER, REDUCED, B, C, E, M, S, U, Unsafe
from nb2cwl.passes.batch_kinds.scope import Scope


class ExpressionKinds:
    """Mixin for `ReplicaCode`: the kinds of expressions."""

    loop_batch: set[str]

    # provided by ReplicaCode and its other mixins
    at: Callable[[Scope, ast.AST], str]
    wrap: Callable[..., None]
    assign: Callable[[ast.expr, str, Scope, ast.stmt], None]
    call: Callable[[ast.Call, Scope], str]

    def expr(self, node: ast.expr, scope: Scope) -> str:
        kind = self._expr(node, scope)
        return kind

    def _expr(self, node: ast.expr, scope: Scope) -> str:
        if isinstance(node, ast.Constant):
            return C
        if isinstance(node, ast.Name):
            known = scope.kind(node.id)
            if known is not None:
                return known
            if node.id in self.loop_batch:
                raise Unsafe(f"{self.at(scope, node)}: the step reads the batch `{node.id}` from "
                             "outside instead of taking it as an argument")
            return C  # a global: a model, an optimizer, a constant
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value, scope)
            if base == E and node.attr in ("shape",):
                return "shape"
            if base in (E, S, M, B) and node.attr in ("T", "mT"):
                return U
            return base if base != "shape" else U
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value, scope)
            index = self.expr(node.slice, scope)
            if base == "shape":
                return B if _is_zero(node.slice) else C
            if base == "shape_tensor":
                return B if _is_zero(node.slice) else C
            if base == C:
                return C if index == C else (E if index == E else U)
            if base == E:
                if index == C and _keeps_batch(node.slice):
                    return E
                return U
            if base in REDUCED and index == C:
                return base
            return U
        if isinstance(node, ast.BinOp):
            return self._binop(node.op, self.expr(node.left, scope),
                               self.expr(node.right, scope), node.left, node.right, scope,
                               node)
        if isinstance(node, ast.UnaryOp):
            kind = self.expr(node.operand, scope)
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                return kind
            return kind if kind in (C, E) else U
        if isinstance(node, ast.BoolOp):
            kinds = {self.expr(v, scope) for v in node.values}
            return C if kinds == {C} else (E if kinds <= {C, E} else U)
        if isinstance(node, ast.Compare):
            kinds = {self.expr(v, scope) for v in [node.left, *node.comparators]}
            return C if kinds == {C} else (E if kinds <= {C, E} else U)
        if isinstance(node, ast.IfExp):
            if self.expr(node.test, scope) != C:
                return U
            a, b = self.expr(node.body, scope), self.expr(node.orelse, scope)
            return a if a == b else U
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            kinds = {self.expr(e.value if isinstance(e, ast.Starred) else e, scope)
                     for e in node.elts}
            return C if kinds <= {C} else (E if kinds == {E} else U)
        if isinstance(node, ast.Dict):
            kinds = {self.expr(v, scope) for v in node.values if v is not None}
            return C if kinds <= {C} else U
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            inner = Scope({}, scope.function, scope.unit, outer=scope)
            for generator in node.generators:
                if self.expr(generator.iter, inner) != C:
                    return U
                self.assign(generator.target, C, inner, ast.Pass(lineno=node.lineno))
                for condition in generator.ifs:
                    if self.expr(condition, inner) != C:
                        return U
            return self.expr(node.elt, inner)
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        if isinstance(node, ast.JoinedStr):
            kinds = {self.expr(v, scope) for v in node.values}
            return C if kinds <= {C} else U
        if isinstance(node, ast.FormattedValue):
            return self.expr(node.value, scope)
        if isinstance(node, ast.Slice):
            parts = [p for p in (node.lower, node.upper, node.step) if p is not None]
            return C if all(self.expr(p, scope) == C for p in parts) else U
        if isinstance(node, ast.Lambda):
            return C
        if isinstance(node, ast.NamedExpr):
            kind = self.expr(node.value, scope)
            self.assign(node.target, kind, scope, ast.Pass(lineno=node.lineno))
            return kind
        return U

    def _binop(self, op: ast.operator, a: str, b: str, left: ast.expr, right: ast.expr,
               scope: Scope, node: ast.AST) -> str:
        if isinstance(op, (ast.Add, ast.Sub)):
            if a == b and a in (C, E, S, M):
                return a
            if {a, b} == {E, C}:
                return E
            if {a, b} == {M, C}:
                return M
            if a == S and b in (M, C):  # the mean or constant counted once: as its share
                self.wrap(scope.unit, right, f"{HELPER}.share(")
                return S
            if b == S and a in (M, C):
                self.wrap(scope.unit, left, f"{HELPER}.share(")
                return S
            return U
        if isinstance(op, ast.Mult):
            if a == C:
                return b if b in (C, E, S, M) else U
            if b == C:
                return a if a in (E, S, M) else U
            return E if a == b == E else U
        if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)):
            if b == C:
                return a if a in (C, E, S, M) else U
            if a == S and b == B and isinstance(op, ast.Div):
                return M  # a sum over the replica's examples divided by their count
            if a == E and b == E:
                return E
            if a in (C, E) and b == E:
                return E
            return U
        if isinstance(op, ast.Pow):
            return a if b == C and a in (C, E) else U
        if isinstance(op, ast.MatMult):
            if a == E and b == C:
                return E
            return C if a == b == C else U
        return C if a == b == C else U


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def _keeps_batch(index: ast.expr) -> bool:
    """`x[:, 0]`, `x[..., :3]`: indexing that keeps every example."""
    first = index.elts[0] if isinstance(index, ast.Tuple) and index.elts else index
    if isinstance(first, ast.Slice):
        return first.lower is None and first.upper is None and first.step is None and \
            isinstance(index, ast.Tuple)
    return isinstance(first, ast.Constant) and first.value is Ellipsis
