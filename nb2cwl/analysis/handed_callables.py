"""Callables handed to a call: the callee may call them, with what the call also hands it.

`apply(push, acc)`, `list(map(shuffle_in_place, rows))`, `pool.map(results.append, xs)`,
`run(random.shuffle, deck)`: the call's other arguments (and, for a notebook function, the
globals its body hands to the callable) may be changed by the handed callable, and a bound
method's own object may change (`results.append`). What a handed callable changes is known
from what is handed:

- a notebook function, class or lambda: the parameters its summary says it changes;
- a library function: the knowledge tables (`random.shuffle`, `heapq.heappush`; a global
  generator it draws from, unless the function it is handed to seeds every call of it);
- a method: bound to a notebook value, as a call of that method would (`d.get` changes
  nothing, `results.append` changes results); of a builtin type, its first argument
  (`list.append`);
- `partial(push, acc)`: push, with acc handed too; a list, tuple or dict of callables, or
  either side of `push if c else log`: any of them.

The same holds for a name bound to one of these (`f = push`, `add = results.append`,
`ops = {"push": push}`, `args = (push, acc)` handed as `apply(*args)`); a closure made by a
function is not followed (docs/limits.md). A notebook function's summary says which of its
parameters it calls or hands on (`called_params`), what it hands them at which position
(`called_with`: its parameters' and globals' objects) and which it always calls with a seed
(`seeded_params`): a function that never calls what it is given (`fit(model, X)`) changes
nothing through it, and one handed `train(model, X)` that changes only its first argument
changes only what the function hands it first. A parameter whose
default is such a callable (`def apply(x, fn=push)`) changes what the body hands it. pandas'
`apply`, `transform`, `agg`, ... hand pieces of their frame, which copy-on-write keeps apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.called_parameters import CalledParameters, call_values
from nb2cwl.analysis.effects import Effects, FunctionSummary
from nb2cwl.analysis.names import BUILTIN_NAMES, ELEMENT_SHARING_BUILTINS, root_name
from nb2cwl.analysis.state import NamespaceState

#: Builtin types whose unbound methods (`list.append`) change their first argument.
_BUILTIN_TYPES = frozenset({"list", "dict", "set", "bytearray", "tuple", "str", "int", "float",
                            "frozenset"})
_PARTIAL = frozenset({"functools.partial", "partial"})
#: Builtins besides ELEMENT_SHARING_BUILTINS whose result holds their arguments' objects.
_HANDING_BUILTINS = frozenset({"map", "filter", "iter"})
#: Attributes taken for methods when handed (`results.append`, `model.fit`): a handed
#: attribute may be data (`model.coef_`, `df.index`), which calling changes nothing of.
_METHODS = kb.MUTATING_METHODS | frozenset(kb.ARGUMENT_MUTATING_METHODS) | frozenset().union(
    *kb.TYPE_MUTATING_METHODS.values(),
    *(library.drawing_methods or () for library in kb.LIBRARIES))
#: Of those, the ones that may change their own object (not `model.predict`).
_CHANGING_METHODS = _METHODS - kb.PURE_METHODS
_CONTAINERS = (nodes.List, nodes.Tuple, nodes.Set)


class HandedCallables(CalledParameters):
    """Mixin for the effect walker: the effects of callables handed to calls."""

    fx: Effects
    state: NamespaceState
    function_mode: bool
    locals: set[str]
    params: tuple[str, ...]

    # provided by the effect walker
    mutate: Callable[..., None]
    roots_of: Callable[[nodes.NodeNG], set[str]]
    qualify: Callable[[nodes.NodeNG], str | None]
    draw: Callable[..., None]
    _method_call: Callable[[nodes.Call, nodes.Attribute, int], None]
    _notebook_method: Callable[[str], bool]
    _seed_given: Callable[[nodes.Call], nodes.NodeNG | None]

    def handed_callables(self, node: nodes.Call, line: int) -> None:
        """What the callables among the call's arguments may change when the callee calls
        them (see the module docstring)."""
        if self.function_mode:
            self._record_called_params(node)
        summary = self._callee_summary(node)
        values = call_values(node)
        receiver = node.func.expr if isinstance(node.func, nodes.Attribute) else None
        if isinstance(receiver, nodes.Call) and any(
                self._changes_arguments(a) for a in call_values(receiver)):
            for value in values:  # Runner(push).run(acc): run may call push with acc
                for root in sorted(self._changeable(value)):
                    self.mutate(root, line, f"{node.func.as_string()}() may call what "
                                            f"{receiver.func.as_string()}() was given")
        if receiver is not None and (root_name(receiver) in (None, *self.state.imports)
                                     or self._hands_pieces(node.func)):
            receiver = None
        for argument, parameter in _arguments(node, summary):
            known = summary is not None and parameter is not None
            if known and parameter not in summary.called_params:
                continue  # the notebook's function never calls what it is given there
            others = [] if known else [a for a in values if a is not argument]
            if receiver is not None:
                others.append(receiver)  # rows.sort(key=f), obj.run(f): its items
            why = f"{node.func.as_string()}() may call {argument.as_string()}, which changes"
            seeded = known and parameter in summary.seeded_params
            self._handed(argument, others, line, why, seeded)
            if known and self._changes_arguments(argument):
                self._handed_through(node, summary, parameter, argument, line, why)

    def _handed_through(self, node: nodes.Call, summary: FunctionSummary, parameter: str,
                        argument: nodes.NodeNG, line: int, why: str) -> None:
        """What the notebook's function hands the callable it gets as `parameter`, at the
        positions the callable changes: its other arguments, globals."""
        positions = self._changed_positions(argument)
        for called, position, root in sorted(summary.called_with):
            if called != parameter or not (positions is None or position < 0
                                           or position in positions):
                continue
            if root not in summary.param_names:
                if root not in self.state.functions:
                    self.mutate(root, line, f"{why} {root}")
                continue
            given = bound_argument(node, summary, root)
            for target in sorted(self._changeable(given) if given is not None else ()):
                self.mutate(target, line, f"{why} its argument")

    def _changed_positions(self, argument: nodes.NodeNG) -> set[int] | None:
        """The positions of the arguments a call of the handed value changes (None: any)."""
        summary = None
        if isinstance(argument, nodes.Lambda):
            from nb2cwl.analysis.summaries import summarize_function

            summary = summarize_function(argument, self.state, -1, set())
        elif isinstance(argument, nodes.Name) and (
                argument.name not in self.state.changing_callables):
            summary = self.state.functions.get(argument.name)
        if summary is not None:
            if summary.param_mutations - set(summary.positional):
                return None  # *args, keyword-only
            return {i for i, p in enumerate(summary.positional) if p in summary.param_mutations}
        qualified = self._library_function(argument)
        if qualified is not None:
            return {0} if qualified == "next" else set(kb.MUTATING_FUNCTIONS.get(qualified, ()))
        if isinstance(argument, nodes.Attribute) and isinstance(argument.expr, nodes.Name) and (
                self._builtin_type(argument.expr.name)):
            return {0}  # list.append(acc, x)
        return None

    def _handed(self, argument: nodes.NodeNG, others: list[nodes.NodeNG], line: int,
                why: str, seeded: bool = False) -> None:
        if isinstance(argument, nodes.Call) and self.qualify(argument.func) in _PARTIAL and (
                argument.args):  # partial(push, acc): acc is handed to push too
            inner = argument.args[0]
            self._handed(inner, [*others, *(a for a in call_values(argument) if a is not inner)],
                         line, why, seeded or self._seed_given(argument) is not None)
            return
        if isinstance(argument, (*_CONTAINERS, nodes.Dict, nodes.IfExp, nodes.BoolOp)):
            for part in _parts(argument):  # run_all([push, log], acc), push if c else log
                self._handed(part, others, line, why, seeded)
            return
        if isinstance(argument, nodes.Attribute) and self._bound_method(argument) and (
                argument.attrname in _METHODS or self._notebook_method(argument.attrname)):
            call = nodes.Call(lineno=line, col_offset=argument.col_offset,
                              parent=argument.parent, end_lineno=None, end_col_offset=None)
            call.postinit(func=argument, args=others, keywords=[])
            self._method_call(call, argument, line)  # as calling it there would
            return
        if isinstance(argument, nodes.Name) and self.function_mode and (
                argument.name in self.locals):
            return  # handed on: the caller's call of this function decides (called_params)
        qualified = self._library_function(argument)
        if qualified is not None and not seeded:  # partial(RandomForestClassifier, random_state=0)
            library = kb.library_of(qualified)
            module, _, attr = qualified.rpartition(".")
            if module in kb.RNG_STATE and attr not in kb.RNG_SAFE[module]:
                self.draw({kb.RNG_STATE[module]})  # called with no seed of its own
            elif library is not None and library.draws and not kb.never_draws(qualified):
                self.draw(library.draws)
        for held in sorted(self._held_changed(argument)):
            self.mutate(held, line, f"{why} {held}")  # add = results.append: results
        if self._changes_arguments(argument):
            for other in others:
                for root in sorted(self._changeable(other)):
                    self.mutate(root, line, f"{why} its argument")

    def _changeable(self, value: nodes.NodeNG) -> set[str]:
        """The names whose objects a value holds, but the notebook's functions and modules
        (`apply(fn, x)` hands x to fn, not fn)."""
        return {r for r in self.roots_of(value)
                if r not in self.state.functions and r not in self.state.imports}

    def changed_by_calling(self, value: nodes.NodeNG) -> tuple[bool, frozenset[str]] | None:
        """For a value bound to a name: whether calling it (or one of the callables it holds)
        may change what it is given, and the names whose objects a call changes besides
        (`results.append`: results; `partial(push, acc)`: acc); None when neither."""
        given = self._changes_arguments(value)
        held = self._held_changed(value)
        return (given, frozenset(held)) if given or held else None

    def _changes_arguments(self, argument: nodes.NodeNG) -> bool:
        """Whether calling the handed value may change what it is called with."""
        if isinstance(argument, nodes.Call) and self.qualify(argument.func) in _PARTIAL:
            return bool(argument.args) and self._changes_arguments(argument.args[0])
        if isinstance(argument, nodes.Lambda):
            from nb2cwl.analysis.summaries import summarize_function

            return bool(summarize_function(argument, self.state, -1, set()).param_mutations)
        if isinstance(argument, (*_CONTAINERS, nodes.Dict, nodes.IfExp, nodes.BoolOp,
                                 nodes.Starred)):
            return any(self._changes_arguments(part) for part in _parts(argument))
        qualified = self._library_function(argument)
        if qualified is not None:
            return qualified in kb.MUTATING_FUNCTIONS or qualified == "next"
        if isinstance(argument, nodes.Attribute):
            receiver = argument.expr
            if isinstance(receiver, nodes.Name) and self._builtin_type(receiver.name):
                return argument.attrname in kb.MUTATING_METHODS  # list.append(acc, x)
            if self._bound_method(argument):
                return argument.attrname in kb.ARGUMENT_MUTATING_METHODS  # rng.shuffle
        name = self._held_name(argument)
        if name is None:
            return False
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
        elif isinstance(value, nodes.Call) and self.qualify(value.func) in _PARTIAL and (
                value.args):
            inner = value.args[0]
            found |= self._held_changed(inner)
            if self._changes_arguments(inner):
                for bound in call_values(value)[1:]:
                    found |= self.roots_of(bound)
        elif isinstance(value, (*_CONTAINERS, nodes.Dict, nodes.IfExp, nodes.BoolOp)):
            parts = _parts(value)
            for part in parts:
                found |= self._held_changed(part)
            if any(self._changes_arguments(part) for part in parts):
                for part in parts:  # args = (push, acc): apply(*args) hands acc to push
                    found |= self.roots_of(part)
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

    def _hands_pieces(self, func: nodes.Attribute) -> bool:
        """`df.apply(f)`, `df.groupby(k).transform(f)`: f gets pieces of the frame, which
        pandas' copy-on-write keeps apart from it (see shared_objects)."""
        from nb2cwl.analysis.shared_objects import PANDAS_COPIES_ON_WRITE

        root = root_name(func.expr)
        return PANDAS_COPIES_ON_WRITE and func.attrname in kb.PIECE_METHODS and (
            "pandas" in self.state.families.get(root or "", ()))

    def _callee_summary(self, node: nodes.Call) -> FunctionSummary | None:
        """The notebook function (or class) called, if it is one."""
        func = node.func
        if not isinstance(func, nodes.Name) or (self.function_mode and func.name in self.locals):
            return None
        return self.state.functions.get(func.name)

def _parts(node: nodes.NodeNG) -> list[nodes.NodeNG]:
    """The callables a container or a choice may hand on: its items (a dict's values), the
    two sides of `a if c else b`, the operands of `a or b`, what a starred name unpacks."""
    if isinstance(node, _CONTAINERS):
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


def bound_argument(call: nodes.Call, summary: FunctionSummary, param: str,
                   ) -> nodes.NodeNG | None:
    """The argument the call gives the notebook function's parameter `param` (None: its
    default; the call has no starred arguments)."""
    for keyword in call.keywords or ():
        if keyword.arg == param:
            return keyword.value
    if param in summary.positional:
        position = summary.positional.index(param)
        if position < len(call.args):
            return call.args[position]
    return None


def _arguments(node: nodes.Call, summary: FunctionSummary | None,
               ) -> Iterator[tuple[nodes.NodeNG, str | None]]:
    """Each argument and the notebook function's parameter it fills (None: not known, as
    for what `*args` and `**kwargs` unpack)."""
    starred = any(isinstance(a, nodes.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords or ())
    for position, argument in enumerate(node.args):
        if isinstance(argument, nodes.Starred):
            yield argument.value, None  # apply(*args): what it unpacks
            continue
        parameter = None
        if summary is not None and not starred and position < len(summary.positional):
            parameter = summary.positional[position]
        yield argument, parameter
    for keyword in node.keywords or ():
        if keyword.arg is None:
            yield keyword.value, None  # apply(**kw)
            continue
        named = summary is not None and not starred and keyword.arg in summary.param_names
        yield keyword.value, keyword.arg if named else None
