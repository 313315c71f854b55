"""What calling a value changes: what it is given, and what it holds.

A notebook function, class or lambda changes the parameters its summary says; a library
function what the tables say (`random.shuffle`, `heapq.heappush`, `operator.setitem`); a
method of a notebook value what a call of it would (`results.append` changes results,
`d.get` nothing; a method of the notebook's classes that changes its argument); an unbound
method of a builtin type its first argument (`list.append`); `partial(push, acc)` and
`delayed(push)` as push (with acc); a list, tuple or dict of callables, or either side of
`push if c else log`, as any of them; `getattr(acc, "append")` as `acc.append`; a call of the
notebook's function that returns such a callable, or of a class whose `__call__` changes what
it is given. A name bound to one of these, or filled with one (`HOOKS.append(push)`, a
decorator registering the function), is one too (`state.changing_callables`).
"""

from __future__ import annotations

from collections.abc import Callable

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.called_parameters import call_values
from nb2cwl.analysis.effects import FunctionSummary
from nb2cwl.analysis.names import BUILTIN_NAMES, ELEMENT_SHARING_BUILTINS, root_name
from nb2cwl.analysis.state import NamespaceState

#: Builtin types whose unbound methods (`list.append`) change their first argument.
_BUILTIN_TYPES = frozenset({"list", "dict", "set", "bytearray", "tuple", "str", "int", "float",
                            "frozenset"})
PARTIAL = frozenset({"functools.partial", "partial"})
#: Calls that return their first argument wrapped, to be called later with more.
WRAPPERS = PARTIAL | {"joblib.delayed"}
#: Builtins besides ELEMENT_SHARING_BUILTINS whose result holds their arguments' objects.
_HANDING_BUILTINS = frozenset({"map", "filter", "iter"})
#: Attributes taken for methods when handed (`results.append`, `model.fit`): a handed
#: attribute may be data (`model.coef_`, `df.index`), which calling changes nothing of.
METHODS = kb.MUTATING_METHODS | frozenset(kb.ARGUMENT_MUTATING_METHODS) | frozenset().union(
    *kb.TYPE_MUTATING_METHODS.values(),
    *(library.drawing_methods or () for library in kb.LIBRARIES))
#: Of those, the ones that may change their own object (not `model.predict`).
_CHANGING_METHODS = METHODS - kb.PURE_METHODS
CONTAINERS = (nodes.List, nodes.Tuple, nodes.Set)


class CallableChanges:
    """Mixin for the effect walker: what calling a value changes (see the module docstring)."""

    state: NamespaceState
    function_mode: bool
    locals: set[str]

    # provided by the effect walker
    roots_of: Callable[[nodes.NodeNG], set[str]]
    qualify: Callable[[nodes.NodeNG], str | None]
    _notebook_method: Callable[[str], bool]

    def changed_by_calling(self, value: nodes.NodeNG) -> tuple[bool, frozenset[str]] | None:
        """For a value bound to a name: whether calling it (or one of the callables it holds)
        may change what it is given, and the names whose objects a call changes besides
        (`results.append`: results; `partial(push, acc)`: acc); None when neither."""
        given = self._changes_arguments(value)
        held = self._held_changed(value)
        return (given, frozenset(held)) if given or held else None

    def registered(self, registries: set[str], function: str) -> None:
        """`@hook def push(a)`, with hook filling HOOKS: HOOKS holds push now."""
        if registries and self.name_changes_arguments(function):
            for holder in sorted(registries):
                self._hold_changing(holder, True, frozenset())

    def keep_changing(self, holder: str, value: nodes.NodeNG) -> None:
        """`HOOKS.append(push)`, `registry[k] = push`: the holder now holds a callable that
        changes what it is given (or holds)."""
        changed = self.changed_by_calling(value)
        if changed is not None:
            self._hold_changing(holder, *changed)

    def _hold_changing(self, holder: str, given: bool, held: frozenset[str]) -> None:
        was_given, was_held = self.state.changing_callables.get(holder, (False, frozenset()))
        self.state.changing_callables[holder] = (was_given or given, was_held | held)

    def _changes_arguments(self, argument: nodes.NodeNG) -> bool:
        """Whether calling the handed value may change what it is called with."""
        if isinstance(argument, nodes.Call) and self.qualify(argument.func) in WRAPPERS:
            return bool(argument.args) and self._changes_arguments(argument.args[0])
        if isinstance(argument, nodes.Lambda):
            from nb2cwl.analysis.summaries import summarize_function

            return bool(summarize_function(argument, self.state, -1, set()).param_mutations)
        if isinstance(argument, (*CONTAINERS, nodes.Dict, nodes.IfExp, nodes.BoolOp,
                                 nodes.Starred)):
            return any(self._changes_arguments(part) for part in parts(argument))
        qualified = self._library_function(argument)
        if qualified is not None:
            return qualified in kb.MUTATING_FUNCTIONS or qualified == "next"
        if isinstance(argument, nodes.Attribute):
            receiver = argument.expr
            if isinstance(receiver, nodes.Name) and self._builtin_type(receiver.name):
                return argument.attrname in kb.MUTATING_METHODS  # list.append(acc, x)
            if self._bound_method(argument):
                return argument.attrname in kb.ARGUMENT_MUTATING_METHODS or (
                    self.changing_method(argument.attrname))  # cleaner.clean(row)
        if isinstance(argument, nodes.Call):
            return self._produces_changing(argument)
        name = self._held_name(argument)
        return name is not None and self.name_changes_arguments(name)

    def _produces_changing(self, call: nodes.Call) -> bool:
        """A call that returns a callable that changes its arguments: `getattr(obj, "m")`,
        `STEPS.get("fill")` over a dict of such, the notebook's function returning one."""
        func = call.func
        if isinstance(func, nodes.Name) and self.qualify(func) == "getattr" and call.args:
            attribute = _named_attribute(call)
            if attribute is None:
                return True  # a method not known by name
            return self._changes_arguments(attribute) or bool(self._held_changed(attribute))
        if isinstance(func, nodes.Attribute) and func.attrname in ("get", "pop", "setdefault"):
            return self._changes_arguments(func.expr)  # an item of a dict of callables
        summary = self._callee_summary(call)
        if summary is not None and summary.is_class:
            return "__call__" in summary.changing_methods  # p = P(): p(acc) changes acc
        return summary is not None and any(
            self.name_changes_arguments(r) for r in summary.returns)

    def changing_method(self, method: str) -> bool:
        """Whether a method of that name of one of the notebook's classes changes what it is
        given (`Prep.clean(df)`, `cleaner.clean(row)`)."""
        return any(method in summary.changing_methods
                   for summary in self.state.functions.values())

    def name_changes_arguments(self, name: str) -> bool:
        """Whether calling the global `name` (or one of the callables it holds) may change
        what it is given."""
        if name in self.state.changing_callables:
            return self.state.changing_callables[name][0]
        summary = self.state.functions.get(name)
        if summary is not None:
            return bool(summary.param_mutations)
        held = self.state.library_callables.get(name)
        return held is not None and any(q in kb.MUTATING_FUNCTIONS for q in held)

    def _held_changed(self, value: nodes.NodeNG) -> set[str]:
        """The names whose objects calling `value` changes besides what it is given: a
        bound method's object, what a partial (or a tuple beside its callable) hands it."""
        found: set[str] = set()
        if isinstance(value, nodes.Attribute) and self._bound_method(value) and (
                value.attrname in _CHANGING_METHODS or self._notebook_method(value.attrname)):
            found.add(root_name(value.expr) or "")
        elif isinstance(value, nodes.Call) and self.qualify(value.func) in PARTIAL and (
                value.args):
            inner = value.args[0]
            found |= self._held_changed(inner)
            if self._changes_arguments(inner):
                for bound in call_values(value)[1:]:
                    found |= self.roots_of(bound)
        elif isinstance(value, (*CONTAINERS, nodes.Dict, nodes.IfExp, nodes.BoolOp)):
            items = parts(value)
            for part in items:
                found |= self._held_changed(part)
            if any(self._changes_arguments(part) for part in items):
                for part in items:  # args = (push, acc): apply(*args) hands acc to push
                    found |= self.roots_of(part)
        elif isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name) and (
                self.qualify(value.func) == "getattr"):
            attribute = _named_attribute(value)  # getattr(acc, "append")
            if attribute is not None:
                found |= self._held_changed(attribute)
        else:
            name = self._held_name(value)
            if name is not None and name in self.state.changing_callables:
                found |= self.state.changing_callables[name][1]
        return {r for r in found if r and r not in self.state.functions
                and r not in self.state.imports}

    def _held_name(self, value: nodes.NodeNG) -> str | None:
        """The global a value is, or is an item of (`f`, `ops["push"]`)."""
        while isinstance(value, nodes.Subscript):
            value = value.value
        if not isinstance(value, nodes.Name) or (self.function_mode
                                                 and value.name in self.locals):
            return None
        return value.name

    def may_return_arguments(self, argument: nodes.NodeNG) -> bool:
        """Whether calling the handed value may return (an object holding) what it is given;
        as the analysis reads a call of it written out (`call_roots`)."""
        summary = None
        if isinstance(argument, nodes.Lambda):
            from nb2cwl.analysis.summaries import summarize_function

            summary = summarize_function(argument, self.state, -1, set())
        elif isinstance(argument, nodes.Name) and not (
                self.function_mode and argument.name in self.locals) and (
                argument.name not in self.state.changing_callables):
            summary = self.state.functions.get(argument.name)
        if summary is not None:
            return bool(summary.returns_params or summary.retains
                        or summary.returns_through or summary.is_class)
        qualified = self._library_function(argument)
        if qualified is None:
            return True  # a lambda, a bound method, a callable value: it may
        if qualified in BUILTIN_NAMES:
            return qualified in ELEMENT_SHARING_BUILTINS or qualified in _HANDING_BUILTINS
        return kb.keeps_arguments(qualified) or kb.library_of(qualified) is None

    def _library_function(self, argument: nodes.NodeNG) -> str | None:
        if not isinstance(argument, (nodes.Name, nodes.Attribute)):
            return None
        root = root_name(argument)
        if root is None or (root not in self.state.imports and not (
                isinstance(argument, nodes.Name) and root in BUILTIN_NAMES
                and root not in self.state.bound)):
            return None
        return self.qualify(argument)

    def _bound_method(self, argument: nodes.Attribute) -> bool:
        """`results.append`, `model.predict`: a method of a notebook value (not a module's
        function, not a builtin type's unbound method)."""
        root = root_name(argument.expr)
        if root is None or root in self.state.imports:
            return False
        return not (isinstance(argument.expr, nodes.Name) and self._builtin_type(root))

    def _builtin_type(self, name: str) -> bool:
        return name in _BUILTIN_TYPES and name not in self.state.bound and not (
            self.function_mode and name in self.locals)

    def _callee_summary(self, node: nodes.Call) -> FunctionSummary | None:
        """The notebook function (or class) called, if it is one."""
        func = node.func
        if not isinstance(func, nodes.Name) or (self.function_mode and func.name in self.locals):
            return None
        return self.state.functions.get(func.name)


def _named_attribute(call: nodes.Call) -> nodes.Attribute | None:
    """`getattr(obj, "name")` as `obj.name`; None when the name is not a constant."""
    name = call.args[1] if len(call.args) > 1 else None
    if not (isinstance(name, nodes.Const) and isinstance(name.value, str)):
        return None
    attribute = nodes.Attribute(attrname=name.value, lineno=call.lineno,
                                col_offset=call.col_offset, parent=call.parent,
                                end_lineno=None, end_col_offset=None)
    attribute.postinit(expr=call.args[0])
    return attribute


def parts(node: nodes.NodeNG) -> list[nodes.NodeNG]:
    """The callables a container or a choice may hand on: its items (a dict's values), the
    two sides of `a if c else b`, the operands of `a or b`, what a starred name unpacks."""
    if isinstance(node, CONTAINERS):
        return list(node.elts)
    if isinstance(node, nodes.Dict):
        return [value for _, value in node.items]
    if isinstance(node, nodes.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, nodes.BoolOp):
        return list(node.values)
    if isinstance(node, nodes.Starred):
        return [node.value]
    return [node]
