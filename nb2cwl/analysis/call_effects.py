"""What calls do: the walker's rules for functions, methods and library calls.

A call may modify its arguments (known library functions, the notebook's functions), keep
them (a constructor storing its argument, a method of an object of unknown type), change
process-wide state (the knowledge tables' settings and seeds, a library nb2cwl does not know),
draw from a hidden random generator, or run state kept in a callable value (a closure, a
partial, a list of handlers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, Hold, StateChange
from nb2cwl.analysis.names import (
    BUILTIN_NAMES,
    chain_has_call,
    is_itself,
    root_name,
)
from nb2cwl.analysis.value_types import CONTAINERS_OF_KNOWN

if TYPE_CHECKING:
    from nb2cwl.analysis.state import NamespaceState

#: Builtins that change no argument: a list of known strings passed to them stays known.
_KEEPING_ITS_ARGUMENTS = frozenset({
    "print", "len", "sorted", "list", "tuple", "set", "frozenset", "enumerate", "zip",
    "reversed", "iter", "any", "all", "min", "max", "sum", "str", "repr", "map", "filter"})



class CallEffects:
    """Mixin for the effect walker: the effects of calls (see the module docstring)."""

    fx: Effects
    state: NamespaceState
    function_mode: bool
    locals: set[str]
    params: tuple[str, ...]
    owner_class: str | None

    # provided by the effect walker
    expression: Callable[[nodes.NodeNG | None], None]
    mutate: Callable[[str, int, str], None]
    _strings: Callable[[nodes.NodeNG | None], frozenset[str] | None]
    lazy: int
    mutate_expr: Callable[[nodes.NodeNG, int, str], None]
    apply_use: Callable[[str], None]
    apply_effects: Callable[[Effects, str], None]
    link_values: Callable[[str, nodes.NodeNG], None]
    type_of: Callable[[nodes.NodeNG], str | None]
    _comp_expr: Callable[[nodes.NodeNG, set[str]], None]
    _files: Callable[[nodes.Call, str | None, int], None]
    magic_call: Callable[[nodes.Call, int], bool]
    builtin_source: Callable[[nodes.NodeNG], nodes.Call | None]
    handed_callables: Callable[[nodes.Call, int], None]
    keep_changing: Callable[[str, nodes.NodeNG], None]
    changing_method: Callable[[str], bool]

    def call(self, node: nodes.Call, bound: set[str] | None = None) -> None:
        """A call: reads, then what the callee is known to do."""
        sub = (lambda n: self._comp_expr(n, bound)) if bound else self.expression
        func = node.func
        sub(func.expr if isinstance(func, nodes.Attribute) else func)
        for arg in node.args:
            sub(arg)
        for keyword in node.keywords or ():
            sub(keyword.value)
        line = node.lineno or 0
        if self.magic_call(node, line):
            return
        qualified = self.qualify(func)
        if qualified not in _KEEPING_ITS_ARGUMENTS:  # `helper(paths)` may add to the list
            for argument in [*node.args, *(k.value for k in node.keywords or ())]:
                for name in argument.nodes_of_class(nodes.Name):
                    self.state.string_items.pop(name.name, None)
        self._opaque_namespace(node, qualified, line)
        self._library_call(node, qualified, line)
        self._qualified_effects(node, qualified, line)
        if isinstance(func, nodes.Attribute) and func.attrname in kb.ARGUMENT_MUTATING_METHODS:
            self._argument_mutating_method(node, func, line)
        for keyword in node.keywords or ():
            if keyword.arg == "out":  # numpy's out=: the result is written into that array
                self.mutate_expr(keyword.value, line, f"out= of {qualified or 'a call'}")
            elif keyword.arg == "file" and qualified == "print":
                self.mutate_expr(keyword.value, line, "print(file=...) writes to it")
        if isinstance(func, nodes.Name):
            self._user_call(func.name, node, line)
        elif isinstance(func, nodes.Attribute):
            self._method_call(node, func, line)
        elif not self.function_mode:  # handlers[0](), make()(): a callable value runs
            root = root_name(func)
            if root is not None and root not in self.state.imports:
                self._run_callable_value(root, line)
        self.handed_callables(node, line)

    def _qualified_effects(self, node: nodes.Call, qualified: str | None, line: int) -> None:
        """What a call of the function `qualified` does wherever it is called from (also
        through a name holding it: `push = heapq.heappush; push(heap, x)`): the draws, the
        files, the arguments it changes."""
        self._hidden_rng(qualified, node)
        self._files(node, qualified, line)
        if qualified in kb.MUTATING_FUNCTIONS:
            for position in kb.MUTATING_FUNCTIONS[qualified]:
                if position < len(node.args):
                    self.mutate_expr(node.args[position], line, f"{qualified}()")
        if qualified == "next" and node.args and isinstance(node.args[0], nodes.Name):
            self.mutate_expr(node.args[0], line, "next() advances the iterator")
        if qualified and qualified.startswith("numpy.") and qualified.endswith(".at") and (
                node.args):  # np.add.at(a, i, 1) changes a in place
            self.mutate_expr(node.args[0], line, f"{qualified}()")

    def qualify(self, func: nodes.NodeNG) -> str | None:
        """The dotted name a callee resolves to through imports (`np.save` -> numpy.save)."""
        parts: list[str] = []
        node = func
        while isinstance(node, nodes.Attribute):
            parts.append(node.attrname)
            node = node.expr
        if not isinstance(node, nodes.Name):
            return None
        if self.function_mode and node.name in self.locals:
            return None
        base = self.state.imports.get(node.name)
        if base is None:
            if parts or node.name in self.state.functions:
                return None
            return node.name if node.name in BUILTIN_NAMES else None
        return ".".join([base, *reversed(parts)])

    # --- the notebook's functions and callable values --------------------------------

    def _user_call(self, name: str, node: nodes.Call, line: int) -> None:
        if self.function_mode and name in self.locals:
            return
        summary = self.state.functions.get(name)
        if summary is None:
            if name in BUILTIN_NAMES or name in self.state.imports:
                return
            if self.function_mode:  # a global callable not known yet (defined later)
                for arg in [*node.args, *(k.value for k in node.keywords or ())]:
                    self.mutate_expr(arg, line, f"{name}() may modify its argument")
                return
            held = self.state.library_callables.get(name)
            if held is not None:  # make = LogisticRegression; make(...): the library's call
                for qualified in sorted(held):
                    self._qualified_effects(node, qualified, line)
                return
            self._run_callable_value(name, line)
            return
        self._stateful_function(name, summary, node, line)
        if not summary.param_mutations:
            return
        starred = any(isinstance(a, nodes.Starred) for a in node.args)
        rest = summary.param_mutations - set(summary.positional)  # *args and keyword-only
        for position, arg in enumerate(node.args):
            within = position < len(summary.positional)
            if starred or (summary.positional[position] in summary.param_mutations if within
                           else bool(rest)):
                self.mutate_expr(arg, line, f"{name}() modifies its argument")
        for keyword in node.keywords or ():
            if keyword.arg in summary.param_mutations or keyword.arg is None:
                self.mutate_expr(keyword.value, line, f"{name}() modifies its argument")

    def _stateful_function(self, name: str, summary, node: nodes.Call, line: int) -> None:
        """A call that changes the function (or class) object itself."""
        if self.function_mode:
            return
        cached = sorted(summary.decorators & kb.STATEFUL_DECORATORS)
        if cached:  # an lru_cache wrapper is pickled by reference: its cache would be lost
            tag = f"object:{name}"
            self.state.families[name] = self.state.families.get(name, frozenset()) | {tag}
            self.fx.holds.append(Hold(tag, line, f"{name}() keeps a cache ({cached[0]}) that "
                                                 "no step can hand on"))
        if summary.decorators & set(self.state.functions):
            # the notebook's own decorator: its wrapper may count or record calls
            self.mutate(name, line, f"{name}() is wrapped by a decorator of the notebook")
        passed = set(summary.positional[:len(node.args)]) | {
            k.arg for k in node.keywords or () if k.arg}
        starred = any(isinstance(a, nodes.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords or ())
        if not starred and (summary.param_mutations & summary.mutable_defaults) - passed:
            # def f(x, seen=[]): the default list, kept by the function object, changes
            self.mutate(name, line, f"{name}() changes its own default value")

    def _run_callable_value(self, name: str, line: int) -> None:
        """A call of a value that is callable: a closure, a partial, an object, an item of a
        list of handlers. It may change what it holds, and run the effects of the functions
        the notebook put into it."""
        for member in sorted(self.state.alias_group(name)):
            held = self.state.held_calls.get(member)
            if held is not None:
                self.apply_effects(held, f"a function held in {member}")
        self.mutate(name, line, f"calling {name} may change what it holds")

    def held_effects(self, value: nodes.NodeNG) -> Effects | None:
        """The effects of the notebook's functions and lambdas a value holds (a list of
        callbacks), for when one of them is called later through the value."""
        from nb2cwl.analysis.summaries import summarize_function

        found: Effects | None = None
        for part in [value, *value.nodes_of_class((nodes.Lambda, nodes.Name))]:
            effects = None
            if isinstance(part, nodes.Lambda):
                effects = summarize_function(part, self.state, -1, set()).effects
            elif isinstance(part, nodes.Name) and part.name in self.state.functions:
                effects = self.state.functions[part.name].effects
            if effects is not None:
                found = found or Effects()
                found.merge(effects)
        return found

    # --- methods ---------------------------------------------------------------------

    def _argument_mutating_method(self, node: nodes.Call, func: nodes.Attribute,
                                  line: int) -> None:
        """`rng.shuffle(x)` on a NumPy Generator or a `random.Random`: x changes in place.
        (A dataset's `ds.shuffle(1000)` takes a number: nothing changes.)"""
        root = root_name(func.expr)
        if root is not None and "tensorflow" in self.state.families.get(root, ()):
            return
        for position in kb.ARGUMENT_MUTATING_METHODS[func.attrname]:
            if position >= len(node.args):
                continue
            arg = node.args[position]
            held = root_name(arg)
            if held is None or self.state.types.get(held) in kb.IMMUTABLE_TYPES:
                continue
            self.mutate_expr(arg, line, f".{func.attrname}() changes its argument in place")

    def _method_call(self, node: nodes.Call, func: nodes.Attribute, line: int) -> None:
        receiver = func.expr
        method = func.attrname
        if self.builtin_source(receiver) is not None:  # vars(o).update(...), getattr(o, "x")
            inplace = any(k.arg == "inplace" for k in node.keywords or ())
            source = self.builtin_source(receiver)
            if (method in kb.MUTATING_METHODS or inplace
                    or source.func.name in ("vars", "getattr")):
                self.mutate_expr(receiver, line, f".{method}()")
            return
        kind = self._state_object(receiver)
        if kind is not None:  # plt.rcParams.update(...), logging.getLogger(...).setLevel(...)
            if method in kb.STATE_READING_METHODS:
                return  # log.warning(...), rcParams.get(...)
            what = f"{receiver.as_string()}.{method}()"
            self.fx.state_changes.append(StateChange(line, kind, what))
            self.fx.module_state.add(what)
            return
        if self.changing_method(method) and root_name(receiver) not in self.state.imports:
            for arg in [*node.args, *(k.value for k in node.keywords or ())]:
                self.mutate_expr(arg, line, f".{method}() changes its argument")
        root = root_name(receiver)
        if root is None:
            return
        if root in self.state.imports and not self.function_mode:
            return  # a module's function, not a method of a notebook value
        self._receiver_draws(root, method, node, receiver)
        inplace = any(
            k.arg == "inplace" and not (isinstance(k.value, nodes.Const) and not k.value.value)
            for k in node.keywords or ()
        )
        if method in kb.MUTATING_METHODS or inplace:
            strings = self.state.string_items.get(root)
            self.mutate(root, line, f".{method}()",  # the receiver changes, then holds them:
                        itself=is_itself(receiver))
            if method in kb.STORING_METHODS:      # `kept.append(row)` does not change row
                self._store_arguments(root, node)
            if (strings is not None and not self.function_mode and not self.lazy
                    and isinstance(receiver, nodes.Name) and method in ("append", "add")
                    and len(node.args) == 1 and not node.keywords):
                added = self._strings(node.args[0])  # `paths.append(path)`
                if added is not None:
                    self.state.string_items[root] = strings | added
            return
        if method in kb.STORING_METHODS:
            self._store_arguments(root, node)
        if method in kb.PURE_METHODS and not self._notebook_method(method):
            return  # a new value: x.mean(), df.astype(int), model.predict(X)
        if chain_has_call(receiver):
            self._returned_object_call(receiver, method, line)
            return
        self._apply_methods_named(method)
        if self.function_mode:
            self.mutate(root, line, f".{method}() on a value of unknown type")
            return
        kind_name = self.type_of(receiver)
        element = kind_name is None and not isinstance(receiver, nodes.Name)
        if element and self.state.types.get(root) in CONTAINERS_OF_KNOWN:
            kind_name = "numpy.ndarray"  # an element or column of an array or frame is one too
        if method in kb.TYPE_MUTATING_METHODS.get(kind_name or "", ()):
            self.mutate(root, line, f".{method}()", itself=is_itself(receiver))
            return
        if kind_name is not None and (kind_name in kb.KNOWN_TYPES
                                      or kind_name in kb.IMMUTABLE_TYPES):
            return
        if kind_name == "module":
            return
        if kind_name in kb.GENERATOR_TYPES:
            self.mutate(root, line, f".{method}() draws from the random generator {root}")
            return
        if self._known_library_object(root):  # ax.plot(...), model.fit(X, y): it changes
            self.mutate(root, line, f".{method}() may modify {root}")
            return
        self._store_arguments(root, node)  # an object of unknown type may keep them
        self.mutate(root, line, f".{method}() on {root}, whose type is not known, may modify it")
        self.fx.notes.append(
            (line, f"{root}.{method}() counted as a possible mutation of {root} "
                   "(type not inferred)")
        )

    def _store_arguments(self, root: str, node: nodes.Call) -> None:
        """The receiver keeps the call's arguments: they now share objects with it."""
        if self.function_mode:
            return
        for arg in [*node.args, *(k.value for k in node.keywords or ())]:
            self.link_values(root, arg)
            self.keep_changing(root, arg)
            held = self.held_effects(arg)
            if held is not None:
                previous = self.state.held_calls.get(root)
                if previous is not None:
                    held.merge(previous)
                self.state.held_calls[root] = held

    def _returned_object_call(self, receiver: nodes.NodeNG, method: str, line: int) -> None:
        """`get_registry().record(x)`: the method may change an object the function returned,
        which may be one of the notebook's globals."""
        node = receiver
        while isinstance(node, (nodes.Attribute, nodes.Subscript, nodes.Call)):
            if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name):
                summary = self.state.functions.get(node.func.name)
                if summary is not None and method not in kb.IMMUTABLE_TYPES:
                    for returned in sorted(summary.returns):
                        self.mutate(returned, line, f".{method}() on what "
                                                    f"{node.func.name}() returned")
            node = node.expr if isinstance(node, nodes.Attribute) else (
                node.func if isinstance(node, nodes.Call) else node.value)

    def _notebook_method(self, method: str) -> bool:
        """Whether one of the notebook's classes defines a method of that name."""
        return any(summary.is_class and method in summary.methods
                   for summary in self.state.functions.values())

    def _apply_methods_named(self, method: str) -> None:
        for name, summary in list(self.state.functions.items()):
            if summary.is_class and method in summary.methods:
                self.apply_use(name)

    def _known_library_object(self, root: str) -> bool:
        """The value comes from a library the tables describe (a model, an axis, a frame):
        its methods do not keep their arguments in a way later cells would see."""
        for family in self.state.families.get(root, ()):
            if ":" not in family and family != "python" and any(
                    library.family == family for library in kb.LIBRARIES):
                return True
        return False

    def _state_object(self, receiver: nodes.NodeNG) -> kb.StateKind | None:
        """The process-wide state an expression is, if it is one (`plt.rcParams`,
        `logging.getLogger("x")`, a name bound to one)."""
        kind = kb.state_object(self.qualify(receiver))
        if kind is None and isinstance(receiver, nodes.Call):
            kind = kb.state_object(self.qualify(receiver.func))
        if kind is None and not self.function_mode:
            root = root_name(receiver)
            if root is not None and not chain_has_call(receiver):
                kind = self.state.state_objects.get(root)
        return kind
