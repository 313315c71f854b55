"""The statements of the code each replica runs: bindings, control flow, returns, and calls
made for their effects (made once, with the global batch's values) or to apply gradients."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from nb2cwl.passes.batch_kinds.kinds import COMBINE, HELPER, C, M, S, U, Unsafe
from nb2cwl.passes.batch_kinds.program import Program
from nb2cwl.passes.batch_kinds.scope import Scope
from nb2cwl.passes.batch_kinds.unit import Unit

if TYPE_CHECKING:
    from nb2cwl.passes.batch_kinds.replica_code import Findings

_EFFECTS = frozenset({"print", "summary", "tensorflow.print"})  # library calls with effects


class StatementKinds:
    """Mixin for `ReplicaCode`: the kinds and edits of statements."""

    program: Program
    findings: Findings

    # provided by ReplicaCode and its other mixins
    at: Callable[[Scope, ast.AST], str]
    wrap: Callable[..., None]
    edit: Callable[[Unit, int, int, str], None]
    expr: Callable[[ast.expr, Scope], str]
    _binop: Callable[[ast.operator, str, str, ast.expr, ast.expr, Scope, ast.AST], str]
    _library: Callable[[str], bool]
    _user_function: Callable[[ast.expr, Scope], ast.FunctionDef | None]

    def body(self, statements: list[ast.stmt], scope: Scope) -> None:
        for statement in statements:
            self.statement(statement, scope)

    def statement(self, node: ast.stmt, scope: Scope) -> None:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            if value is None:
                return
            kind = self.expr(value, scope)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                self.assign(target, kind, scope, node)
        elif isinstance(node, ast.AugAssign):
            if not isinstance(node.target, ast.Name):
                raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node)}` changes an object "
                             "outside the step on every replica")
            current = scope.kind(node.target.id) or C
            added = self.expr(node.value, scope)
            if isinstance(node.op, (ast.Add, ast.Sub)) and added == S and current in (M, C):
                raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node)}` adds a sum over "
                             "the batch to a value every replica holds; write it as "
                             f"`{node.target.id} = {node.target.id} + ...`")
            kind = self._binop(node.op, current, added, node.target, node.value, scope, node)
            self.assign(node.target, kind, scope, node)
        elif isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Call):
                self.effect_call(node.value, scope)
            else:
                self.expr(node.value, scope)
        elif isinstance(node, ast.With):
            for item in node.items:
                manager = item.context_expr
                name = self.program.qualified(manager.func if isinstance(manager, ast.Call)
                                              else manager) or ""
                if not name.startswith(("tensorflow.", "keras.")):
                    raise Unsafe(f"{self.at(scope, node)}: `with {ast.unparse(manager)}` would "
                                 "be entered on every replica; nb2cwl runs TensorFlow's own "
                                 "context managers (GradientTape, name_scope, device) there")
                kind = self.expr(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, C if kind != U else U, scope, node)
            self.body(node.body, scope)
        elif isinstance(node, (ast.If, ast.While)):
            kind = self.expr(node.test, scope)
            if kind != C:
                raise Unsafe(f"{self.at(scope, node)}: the condition `{ast.unparse(node.test)}` "
                             "depends on the batch: each replica sees only its share of it "
                             "and they may take different branches")
            self.body(node.body, scope)
            self.body(node.orelse, scope)
        elif isinstance(node, ast.For):
            kind = self.expr(node.iter, scope)
            if kind != C:
                raise Unsafe(f"{self.at(scope, node)}: the loop over `{ast.unparse(node.iter)}` "
                             "depends on the batch")
            self.assign(node.target, C, scope, node)
            self.body(node.body, scope)
            self.body(node.orelse, scope)
        elif isinstance(node, ast.Return):
            self.returned(node, scope)
        elif isinstance(node, ast.Try):
            self.body(node.body, scope)
            for handler in node.handlers:
                self.body(handler.body, scope)
            self.body(node.orelse, scope)
            self.body(node.finalbody, scope)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node)}`: every replica would "
                         f"change {', '.join(node.names)}")
        elif isinstance(node, ast.FunctionDef):
            scope.nested[node.name] = node
            scope.kinds[node.name] = C
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue, ast.Import, ast.ImportFrom)):
            return
        elif isinstance(node, ast.Assert):
            self.expr(node.test, scope)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node)}` changes an "
                                 "object outside the step on every replica")
        elif isinstance(node, ast.Raise):
            return
        else:
            raise Unsafe(f"{self.at(scope, node)}: nb2cwl does not run a "
                         f"`{type(node).__name__}` statement on replicas")

    def assign(self, target: ast.expr, kind: str, scope: Scope, node: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            scope.kinds[target.id] = kind
            scope.local_names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.assign(element.value if isinstance(element, ast.Starred) else element,
                            kind, scope, node)
        else:
            raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node).splitlines()[0]}` changes "
                         "an object outside the step on every replica")

    def returned(self, node: ast.Return, scope: Scope) -> None:
        if node.value is None:
            return
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        kinds = [self.expr(v, scope) for v in values]
        for value, kind in zip(values, kinds, strict=True):
            if kind == U and scope.entry:
                raise Unsafe(f"{self.at(scope, value)}: cannot tell how the returned "
                             f"`{ast.unparse(value)}` depends on the batch (a per-example "
                             "value, a mean or a sum over the batch)")
            if kind in COMBINE and scope.entry:
                self.wrap(scope.unit, value, f"{HELPER}.total(", f", {COMBINE[kind]!r})")
        scope.returns.append(kinds[0] if len(kinds) == 1 else (C if set(kinds) == {C} else U))

    # --- calls made for their effects ---

    def effect_call(self, call: ast.Call, scope: Scope) -> None:
        func = call.func
        name = self.program.qualified(func) or ""
        attribute = func.attr if isinstance(func, ast.Attribute) else None
        if attribute in ("apply_gradients", "apply", "minimize"):
            self.optimizer_update(call, scope)
            return
        if attribute == "watch":  # tape.watch(x): each replica's tape
            self.expr(call, scope)
            return
        if self._library(name) and name.rsplit(".", 1)[-1] not in _EFFECTS \
                and not name.startswith("tensorflow.summary"):
            self.expr(call, scope)  # a library function for its value, which is dropped
            return
        function = self._user_function(func, scope)
        if function is not None:
            self.expr(call, scope)  # its body is analysed (and its effects made once)
            return
        # anything else has effects outside the step: once, with the global batch's values
        kinds = [self.expr(a.value if isinstance(a, ast.Starred) else a, scope)
                 for a in call.args] + [self.expr(k.value, scope) for k in call.keywords]
        if isinstance(func, ast.Attribute):
            self.expr(func.value, scope)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            raise Unsafe(f"{self.at(scope, call)}: `{ast.unparse(call)}` passes * or ** "
                         "arguments nb2cwl cannot split")
        for argument, kind in zip([*call.args, *(k.value for k in call.keywords)], kinds,
                                  strict=True):
            if kind == U:
                raise Unsafe(f"{self.at(scope, call)}: cannot tell how `{ast.unparse(argument)}`"
                             f", passed to {ast.unparse(func)}, depends on the batch")
        unit = scope.unit
        start, func_end = unit.span(func)
        paren = unit.code.index("(", func_end)
        self.edit(unit, start, start, f"{HELPER}.once(")
        self.edit(unit, paren, paren + 1, ", " if call.args or call.keywords else "")
        for argument, kind in zip([*call.args, *(k.value for k in call.keywords)], kinds,
                                  strict=True):
            if kind in COMBINE:
                self.wrap(unit, argument, f"{HELPER}.total(", f", {COMBINE[kind]!r})")

    def optimizer_update(self, call: ast.Call, scope: Scope) -> None:
        kinds = [self.expr(a, scope) for a in call.args] + [
            self.expr(k.value, scope) for k in call.keywords]
        if isinstance(call.func, ast.Attribute):
            self.expr(call.func.value, scope)
        if call.func.attr == "minimize":  # type: ignore[attr-defined]
            raise Unsafe(f"{self.at(scope, call)}: optimizer.minimize computes its own gradients; "
                         "nb2cwl distributes tape.gradient + apply_gradients")
        if any(k != C for k in kinds):
            raise Unsafe(f"{self.at(scope, call)}: the gradients applied by "
                         f"`{ast.unparse(call.func)}` do not come from a GradientTape of the "
                         "step (nb2cwl all-reduces those)")
        self.findings.applies += 1
