"""Callables handed to a call: the callee may call them, with what the call also hands it.

`apply(push, acc)`, `list(map(shuffle_in_place, rows))`, `pool.map(results.append, xs)`,
`run(random.shuffle, deck)`: the call's other arguments (and, for a notebook function, the
globals its body hands to the callable) may be changed by the handed callable, and a bound
method's own object may change (`results.append`). What a handed callable changes is known
from what is handed:

- a notebook function, class or lambda: the parameters its summary says it changes;
- a library function: the knowledge tables (`random.shuffle`, `heapq.heappush`; a global
  generator it draws from);
- a method: bound to a notebook value, as a call of that method would (`d.get` changes
  nothing, `results.append` changes results); of a builtin type, its first argument
  (`list.append`);
- `partial(push, acc)` written in the call: push, with acc handed too.

The same holds for a name bound to one of these (`add = results.append`, then
`pool.map(add, xs)`); a closure made by a function is not followed (docs/limits.md).

A notebook function's summary says which of its parameters it calls or hands on
(`called_params`) and which globals it hands to them (`called_globals`): a function that
never calls what it is given (`fit(model, X)`) changes nothing through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, FunctionSummary
from nb2cwl.analysis.names import BUILTIN_NAMES, ELEMENT_SHARING_BUILTINS, root_name
from nb2cwl.analysis.state import NamespaceState

#: Builtin types whose unbound methods (`list.append`) change their first argument.
_BUILTIN_TYPES = frozenset({"list", "dict", "set", "bytearray", "collections.deque"})
_PARTIAL = frozenset({"functools.partial", "partial"})
#: Builtins besides ELEMENT_SHARING_BUILTINS whose result holds their arguments' objects.
_HANDING_BUILTINS = frozenset({"map", "filter", "iter"})
#: Attributes taken for methods when handed (`results.append`, `model.fit`): a handed
#: attribute may be data (`model.coef_`, `df.index`), which calling changes nothing of.
_METHODS = kb.MUTATING_METHODS | frozenset(kb.ARGUMENT_MUTATING_METHODS) | frozenset().union(
    *kb.TYPE_MUTATING_METHODS.values(),
    *(library.drawing_methods or () for library in kb.LIBRARIES))


class HandedCallables:
    """Mixin for the effect walker: the effects of callables handed to calls."""

    fx: Effects
    state: NamespaceState
    function_mode: bool
    locals: set[str]
    params: tuple[str, ...]
    param_mutations: set[str]
    called_params: set[str]
    called_globals: set[str]

    # provided by the effect walker
    mutate: Callable[..., None]
    roots_of: Callable[[nodes.NodeNG], set[str]]
    qualify: Callable[[nodes.NodeNG], str | None]
    draw: Callable[..., None]
    _method_call: Callable[[nodes.Call, nodes.Attribute, int], None]
    _notebook_method: Callable[[str], bool]
    local_reach: Callable[..., set[str]]
    _seed_given: Callable[[nodes.Call], nodes.NodeNG | None]

    def handed_callables(self, node: nodes.Call, line: int) -> None:
        """What the callables among the call's arguments may change when the callee calls
        them (see the module docstring)."""
        if self.function_mode:
            self._record_called_params(node)
        summary = self._callee_summary(node)
        for argument, parameter in _arguments(node, summary):
            if summary is not None and parameter is not None and (
                    parameter not in summary.called_params):
                continue  # the notebook's function never calls what it is given there
            others = [a for a in _values(node) if a is not argument]
            if isinstance(node.func, nodes.Attribute) and root_name(node.func.expr) not in (
                    None, *self.state.imports):
                others.append(node.func.expr)  # df.apply(f), rows.sort(key=f): its items
            callee = node.func.as_string()
            self._handed(argument, others, line, f"{callee}() may call "
                                                 f"{argument.as_string()}, which changes")
            if summary is not None and self._changes_arguments(argument):
                for name in sorted(summary.called_globals):
                    self.mutate(name, line, f"{callee}() hands {name} to "
                                            f"{argument.as_string()}, which changes it")

    def merge_parameter_use(self, summary: FunctionSummary) -> None:
        """A nested function's or lambda's changes to this function's parameters, and the
        parameters it calls, are this function's."""
        self.param_mutations |= summary.param_mutations & set(self.params)
        self.called_params |= summary.called_params & set(self.params)
        self.called_globals |= summary.called_globals - self.locals

    def _handed(self, argument: nodes.NodeNG, others: list[nodes.NodeNG], line: int,
                why: str, seeded: bool = False) -> None:
        if isinstance(argument, nodes.Call) and self.qualify(argument.func) in _PARTIAL and (
                argument.args):  # partial(push, acc): acc is handed to push too
            inner = argument.args[0]
            self._handed(inner, [*others, *(a for a in _values(argument) if a is not inner)],
                         line, why, seeded=self._seed_given(argument) is not None)
            return
        if isinstance(argument, (nodes.List, nodes.Tuple, nodes.Set)):
            for element in argument.elts:  # run_all([push, log], acc)
                self._handed(element, others, line, why)
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
        if isinstance(argument, nodes.Name) and argument.name in self.state.changing_callables:
            for held in sorted(self.state.changing_callables[argument.name]):
                self.mutate(held, line, f"{why} {held}")  # add = results.append: results
        if self._changes_arguments(argument):
            for other in others:
                for root in sorted(self.roots_of(other)):
                    self.mutate(root, line, f"{why} its argument")

    def changed_by_calling(self, value: nodes.NodeNG) -> frozenset[str] | None:
        """For a value bound to a name: when it is a callable that changes what it is given
        or what it holds (`partial(push, acc)`, `results.append`, `[push, log]`), the names
        whose objects it holds (acc, results); otherwise None."""
        parts = value.elts if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)) else [
            value]
        changing = False
        for part in parts:
            if isinstance(part, nodes.Attribute) and self._bound_method(part):
                changing |= part.attrname in _METHODS or self._notebook_method(part.attrname)
            elif isinstance(part, nodes.Call) and self.qualify(part.func) in _PARTIAL:
                changing |= self._changes_arguments(part)
        if not changing:
            return None
        return frozenset(r for r in self.roots_of(value)
                         if r not in self.state.functions and r not in self.state.imports)

    def _changes_arguments(self, argument: nodes.NodeNG) -> bool:
        """Whether calling the handed value may change what it is called with."""
        if isinstance(argument, nodes.Call) and self.qualify(argument.func) in _PARTIAL:
            return bool(argument.args) and self._changes_arguments(argument.args[0])
        if isinstance(argument, nodes.Lambda):
            from nb2cwl.analysis.summaries import summarize_function

            return bool(summarize_function(argument, self.state, -1, set()).param_mutations)
        if isinstance(argument, (nodes.List, nodes.Tuple, nodes.Set)):
            return any(self._changes_arguments(e) for e in argument.elts)  # [push, log]
        qualified = self._library_function(argument)
        if qualified is not None:
            return qualified in kb.MUTATING_FUNCTIONS or qualified == "next"
        if isinstance(argument, nodes.Attribute):
            receiver = argument.expr
            if isinstance(receiver, nodes.Name) and self._builtin_type(receiver.name):
                return argument.attrname in kb.MUTATING_METHODS  # list.append(acc, x)
            return argument.attrname in kb.ARGUMENT_MUTATING_METHODS and (
                self._bound_method(argument))  # rng.shuffle
        if not isinstance(argument, nodes.Name):
            return False
        name = argument.name
        if self.function_mode and name in self.locals:
            return False
        if name in self.state.changing_callables:
            return True
        summary = self.state.functions.get(name)
        if summary is not None:
            return bool(summary.param_mutations)
        held = self.state.library_callables.get(name)
        return held is not None and any(q in kb.MUTATING_FUNCTIONS for q in held)

    def may_return_arguments(self, argument: nodes.NodeNG) -> bool:
        """Whether calling the handed value may return (an object holding) what it is given;
        as the analysis reads a call of it written out (`call_roots`)."""
        if isinstance(argument, nodes.Name) and not (
                self.function_mode and argument.name in self.locals):
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
        return name in BUILTIN_NAMES and name not in self.state.bound and not (
            self.function_mode and name in self.locals) and (
            name in _BUILTIN_TYPES or name in ("tuple", "str", "int", "float", "frozenset"))

    def _callee_summary(self, node: nodes.Call) -> FunctionSummary | None:
        """The notebook function (or class) called, if it is one."""
        func = node.func
        if not isinstance(func, nodes.Name) or (self.function_mode and func.name in self.locals):
            return None
        return self.state.functions.get(func.name)

    def _record_called_params(self, node: nodes.Call) -> None:
        """In a function body: a parameter called (`fn(x)`, `fns[0](x)`) or handed to a
        call, and the globals handed along with it."""
        called = root_name(node.func) if isinstance(
            node.func, (nodes.Name, nodes.Subscript)) else None
        handed = [a.name for a in _values(node) if isinstance(a, nodes.Name)]
        if called is not None:
            handed.append(called)  # fn(x), fns[0](x), and `for f in fns: f(x)`
        reached = {target for name in handed if name in self.locals
                   for target in self.local_reach(name)} & set(self.params)
        if not reached:
            return
        self.called_params |= reached
        for other in _values(node):
            for root in self.roots_of(other):
                if root not in self.locals:
                    self.called_globals.add(root)


def _values(node: nodes.Call) -> list[nodes.NodeNG]:
    """The call's arguments, starred ones as what they unpack."""
    found = []
    for argument in [*node.args, *(k.value for k in node.keywords or ())]:
        found.append(argument.value if isinstance(argument, nodes.Starred) else argument)
    return found


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
    """Each argument and the notebook function's parameter it fills (None: not known)."""
    starred = any(isinstance(a, nodes.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords or ())
    for position, argument in enumerate(node.args):
        if isinstance(argument, nodes.Starred):
            continue
        parameter = None
        if summary is not None and not starred and position < len(summary.positional):
            parameter = summary.positional[position]
        yield argument, parameter
    for keyword in node.keywords or ():
        if keyword.arg is not None:  # one that **kwargs takes: not known
            named = summary is not None and not starred and keyword.arg in summary.param_names
            yield keyword.value, keyword.arg if named else None
