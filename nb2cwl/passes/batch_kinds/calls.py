"""Calls in the code each replica runs: of the notebook's functions and methods (their bodies
analysed with the arguments' kinds), of a tape's gradient (all-reduced), and of objects."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from nb2cwl.passes.batch_kinds.kinds import HELPER, REDUCED, B, C, E, M, U, Unsafe
from nb2cwl.passes.batch_kinds.program import Program
from nb2cwl.passes.batch_kinds.scope import Scope
from nb2cwl.passes.batch_kinds.unit import Unit

if TYPE_CHECKING:
    from nb2cwl.passes.batch_kinds.replica_code import Findings

#: Methods that change their object (used for their value, they would run on every replica).
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear",
                       "update", "add", "discard", "setdefault", "assign", "assign_add",
                       "assign_sub", "write", "send", "put"})


class CallKinds:
    """Mixin for `ReplicaCode`: the kinds of calls, and the functions they analyse."""

    program: Program
    findings: Findings
    where: Callable[[Unit, int], str]
    _analysed: dict[tuple[int, tuple[tuple[str, str], ...]], str]
    _active: list[int]
    _captures: list[set[tuple[str, int, int, str]]]
    _rewrites: dict[int, set[tuple[str, int, int, str]]]

    # provided by ReplicaCode and its other mixins
    at: Callable[[Scope, ast.AST], str]
    wrap: Callable[..., None]
    expr: Callable[[ast.expr, Scope], str]
    body: Callable[[list[ast.stmt], Scope], None]
    library_call: Callable[[str, ast.Call, list[ast.expr], dict[str, ast.expr], Scope], str]
    _library: Callable[[str], bool]
    _loss_object: Callable[[str, Scope], str | None]

    def call(self, call: ast.Call, scope: Scope) -> str:
        func = call.func
        args = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
        keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
        if isinstance(func, ast.Attribute) and func.attr == "gradient" and args:
            return self.gradient(call, scope)
        name = self.program.qualified(func)
        if name is not None and self._library(name):
            return self.library_call(name, call, args, keywords, scope)
        if name is not None and name.startswith("keras.losses.") and \
                name.rsplit(".", 1)[-1][:1].islower():
            kinds = [self.expr(a, scope) for a in args] + [
                self.expr(v, scope) for v in keywords.values()]
            return E if E in kinds and set(kinds) <= {E, C} else (C if set(kinds) <= {C}
                                                                   else U)
        if isinstance(func, ast.Name):
            if func.id in ("len",) and args:
                return B if self.expr(args[0], scope) == E else C
            if func.id in ("float", "int", "bool", "abs"):
                return self.expr(args[0], scope) if args else C
            if func.id in ("zip", "list", "tuple", "enumerate", "range", "sum", "min", "max",
                           "sorted", "reversed", "isinstance", "getattr", "hasattr", "str",
                           "repr", "format", "round", "iter", "dict", "set", "type", "id"):
                kinds = {self.expr(a, scope) for a in args}
                if func.id == "sum" and kinds <= {C}:
                    return C
                return C if kinds <= {C} else U
            if func.id == "next":
                raise Unsafe(f"{self.at(scope, call)}: `{ast.unparse(call)}` inside the step: "
                             "each replica would draw batches of its own")
            loss = self._loss_object(func.id, scope)
            if loss is not None:
                kinds = {self.expr(a, scope) for a in [*args, *keywords.values()]}
                if kinds <= {C}:
                    return C
                return loss if kinds <= {E, C} else U
        function = self._user_function(func, scope)
        if function is not None:
            return self.user_call(function, call, args, keywords, scope)
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value, scope)
            kinds = {self.expr(a, scope) for a in [*args, *keywords.values()]}
            if base == E:
                if func.attr in ("numpy", "astype", "reshape", "__array__") and kinds <= {C}:
                    return E
                return U
            if base in REDUCED:
                return base if func.attr in ("numpy", "item", "__float__") else U
            if base == B:
                return B if func.attr in ("numpy", "item") else U
            if base != C:
                return U
            if func.attr in _MUTATORS:
                raise Unsafe(f"{self.at(scope, call)}: `{ast.unparse(call)}` changes "
                             f"{ast.unparse(func.value)} on every replica")
            if kinds <= {C}:
                return C
            methods = self.program.methods.get(func.attr, [])
            if methods:  # a method of a notebook class: what its body does
                results = set()
                for method in methods:
                    parameters = [a.arg for a in method.args.posonlyargs + method.args.args]
                    bound = dict.fromkeys(parameters, C)
                    for index, argument in enumerate(args):
                        if index + 1 < len(parameters):
                            bound[parameters[index + 1]] = self.expr(argument, scope)
                    for key, value in keywords.items():
                        bound[key] = self.expr(value, scope)
                    results.add(self.function(method, bound, None))
                return results.pop() if len(results) == 1 else U
        else:
            self.expr(func, scope)
            kinds = {self.expr(a, scope) for a in [*args, *keywords.values()]}
        if kinds <= {C}:
            return C
        if not kinds <= {E, C}:
            return U
        # a Keras layer or model works example by example; another callable object (held in
        # an attribute, or passed in) is checked where it runs: the step stops rather than
        # treat a loss object or a reduction as per-example
        if not (isinstance(func, ast.Name) and scope.is_layer(func.id, self.program)):
            self.wrap(scope.unit, func, f"{HELPER}.per_example(")
        return E

    def gradient(self, call: ast.Call, scope: Scope) -> str:
        target = call.args[0]
        kind = self.expr(target, scope)
        for other in [*call.args[1:], *(k.value for k in call.keywords)]:
            self.expr(other, scope)
        if kind in (U, B):
            raise Unsafe(f"{self.at(scope, call)}: cannot tell how the loss "
                         f"`{ast.unparse(target)}` depends on the batch: nb2cwl distributes "
                         "a loss that is a mean or a sum over the batch (or a sum of such "
                         "terms), so the replicas' gradients add up to the global batch's")
        mode = "mean" if kind in (M, C) else "sum"
        self.wrap(scope.unit, call, f"{HELPER}.all_reduce_gradients(", f", {mode!r})")
        self.findings.gradients += 1
        return C

    def user_call(self, function: ast.FunctionDef, call: ast.Call, args: list[ast.expr],
                  keywords: dict[str, ast.expr], scope: Scope) -> str:
        parameters = [a.arg for a in function.args.posonlyargs + function.args.args]
        bound: dict[str, str] = dict.fromkeys(parameters, C)
        layers: set[str] = set()
        for index, argument in enumerate(args):
            kind = self.expr(argument, scope)
            if index < len(parameters):
                bound[parameters[index]] = kind
                if isinstance(argument, ast.Name) and scope.is_layer(argument.id,
                                                                      self.program):
                    layers.add(parameters[index])
            elif function.args.vararg is not None:
                bound[function.args.vararg.arg] = U if kind != C else C
        for key, value in keywords.items():
            bound[key] = self.expr(value, scope)
            if isinstance(value, ast.Name) and scope.is_layer(value.id, self.program):
                layers.add(key)
        for extra in function.args.kwonlyargs:
            bound.setdefault(extra.arg, C)
        return self.function(function, bound, scope, layers)

    def function(self, function: ast.FunctionDef, bound: dict[str, str],
                 caller: Scope | None, layers: set[str] | None = None,
                 entry: bool = False) -> str:
        """Analyse `function`'s body on the replicas with its parameters of kinds `bound`;
        the kind of what it returns."""
        key = (id(function), tuple(sorted(bound.items())) + tuple(
            ("layer", n) for n in sorted(layers or ())) + (("entry", str(entry)),))
        if key in self._analysed:
            return self._analysed[key]
        if len(self._active) > 4 or id(function) in self._active:
            where = self.where(self._unit_of(function, caller), function.lineno)
            raise Unsafe(f"{where}: {function.name} calls itself or nests too "
                         "deep for nb2cwl to follow")
        unit = self._unit_of(function, caller)
        outer = caller if caller is not None and function.name in _nested_names(caller) else None
        scope = Scope(dict(bound), function, unit, outer=outer, layers=set(layers or ()),
                      entry=entry)
        for node in function.body:
            if isinstance(node, ast.FunctionDef):
                scope.nested[node.name] = node
        self._active.append(id(function))
        self._captures.append(set())
        try:
            self.body(function.body, scope)
        finally:
            self._active.pop()
            edits = self._captures.pop()
        if self._rewrites.setdefault(id(function), edits) != edits:
            where = self.where(unit, function.lineno)
            raise Unsafe(f"{where}: {function.name} is called with values that "
                         "need different rewrites on the replicas (a per-example value in one "
                         "call, the same value everywhere in another); nb2cwl rewrites a "
                         "function one way")
        kinds = set(scope.returns)
        result = C if not kinds else (kinds.pop() if len(kinds) == 1 else U)
        self._analysed[key] = result
        return result

    def _user_function(self, func: ast.expr, scope: Scope) -> ast.FunctionDef | None:
        if not isinstance(func, ast.Name):
            return None
        current: Scope | None = scope
        while current is not None:
            if func.id in current.nested:
                return current.nested[func.id]
            if func.id in current.kinds and func.id not in current.nested:
                return None  # a local value (a model, a layer)
            current = current.outer
        found = self.program.functions.get(func.id)
        return found[1] if found else None

    def _unit_of(self, function: ast.FunctionDef, caller: Scope | None) -> Unit:
        if id(function) in self.program.owner:
            return self.program.owner[id(function)]
        for unit in self.program.units:
            if any(node is function for node in ast.walk(unit.tree)):
                self.program.owner[id(function)] = unit
                return unit
        assert caller is not None
        return caller.unit


def _nested_names(scope: Scope) -> set[str]:
    names: set[str] = set()
    current: Scope | None = scope
    while current is not None:
        names |= set(current.nested)
        current = current.outer
    return names
