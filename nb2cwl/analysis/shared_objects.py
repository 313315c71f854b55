"""Which names may share objects: aliases, containers holding other names' objects, parts of
one result, and the names handed on together because of it.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.called_parameters import bound_argument, given_arguments
from nb2cwl.analysis.effects import Effects, FunctionSummary
from nb2cwl.analysis.names import (
    BUILTIN_NAMES,
    ELEMENT_SHARING_BUILTINS,
    FRESH_RESULT_METHODS,
    chain_has_attribute,
    only_keys,
    root_name,
    value_roots,
)

if TYPE_CHECKING:
    from nb2cwl.analysis.state import NamespaceState


def _pandas_major() -> int:
    try:
        return int(importlib.metadata.version("pandas").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return 0


#: What IPython puts in the namespace: its objects hold nothing of the notebook's.
_SHELL_NAMES = frozenset({"get_ipython", "display"})

#: From pandas 3 on, copy-on-write is always on: a column or slice is never a view.
PANDAS_COPIES_ON_WRITE = _pandas_major() >= 3


class SharedObjects:
    """Mixin for the effect walker: the names that may share objects (see the module
    docstring)."""

    fx: Effects
    state: NamespaceState
    function_mode: bool
    locals: set[str]
    definite: set[str]
    figure_names: set[str]
    hands_on: bool

    # provided by the effect walker
    qualify: Callable[[nodes.NodeNG], str | None]
    type_of: Callable[[nodes.NodeNG], str | None]
    builtin_source: Callable[[nodes.NodeNG], nodes.Call | None]
    may_return_arguments: Callable[[nodes.NodeNG], bool]

    def call_roots(self, call: nodes.Call) -> set[str]:
        """Names whose objects a call's result may hold: what the notebook's function returns
        or keeps, the arguments of a library nb2cwl does not know, views of arrays."""
        func = call.func
        arguments = [*call.args, *(k.value for k in call.keywords or ())]

        def of(values: list[nodes.NodeNG]) -> set[str]:
            found: set[str] = set()
            for value in values:
                found |= value_roots(value, self.call_roots)
            return found

        if isinstance(func, nodes.Name) and func.name in self.state.functions:
            summary = self.state.functions[func.name]
            kept = summary.retains | summary.returns_params
            found = set(summary.returns)
            for position, arg in enumerate(call.args):
                name = (summary.positional[position]
                        if position < len(summary.positional) else None)
                if name is None or name in kept or isinstance(arg, nodes.Starred):
                    found |= of([arg])
            for keyword in call.keywords or ():
                if keyword.arg is None or keyword.arg in kept:
                    found |= of([keyword.value])
            if summary.is_class and summary.mutable_defaults & summary.retains:
                found.add(func.name)  # instances share the class's default value
            return found | self._returned_through(call, summary, of)
        if isinstance(func, nodes.Name) and func.name in ELEMENT_SHARING_BUILTINS | {
                "map", "filter", "iter", "functools.partial", "partial"}:
            return of([a for a in arguments if not only_keys(a)])
        qualified = self.qualify(func)
        if kb.keeps_arguments(qualified):  # Pipeline([...]), np.split(a, 3), ChainMap(d)
            return of(arguments)
        if qualified is not None and kb.library_of(qualified) is None and (
                root_name(func) in self.state.imports):
            return of(arguments)  # a library nb2cwl does not know may keep its arguments
        if isinstance(func, nodes.Attribute):
            # d.items(), d.get(k), arr.reshape(...): the result may hold the receiver's objects
            # (a Styler's methods, format included, return the Styler)
            if func.attrname in FRESH_RESULT_METHODS and not chain_has_attribute(func.expr,
                                                                                 "style"):
                return set()
            inner = self.builtin_source(func.expr)
            if inner is not None:  # dict(x).values(): the items of what dict() was given
                return of([a for a in inner.args if not only_keys(a)])
            root = root_name(func.expr)
            if root is None or root in self.state.imports or root in _SHELL_NAMES:
                return set()
            if self.type_of(func.expr) in kb.GENERATOR_TYPES:
                return set()  # rng.normal(...): new numbers, not the generator
            return {root}
        if isinstance(func, nodes.Name) and func.name in self.state.library_callables:
            return of(arguments)  # cls(...) over library classes: as the library's call
        if (isinstance(func, nodes.Name) and func.name not in self.state.imports
                and func.name not in BUILTIN_NAMES):  # a callable value: a partial, a closure
            return of(arguments) | {func.name}
        return set()

    def _returned_through(self, call: nodes.Call, summary: FunctionSummary,
                          of: Callable[[list[nodes.NodeNG]], set[str]]) -> set[str]:
        """What the function returns from calls of its parameters (`return metric(y, p)`):
        only where what the call hands it may return what it is given (not a metric of a
        library, a function returning a number)."""
        starred = any(isinstance(a, nodes.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords or ())
        found: set[str] = set()
        for param, root in sorted(summary.returns_through):
            handed = None if starred else bound_argument(call, summary, param)
            if handed is not None and not self.may_return_arguments(handed):
                continue
            if root not in summary.param_names:
                found.add(root)  # a global handed to it
            elif starred:
                found |= of([*call.args, *(k.value for k in call.keywords or ())])
            else:
                found |= of(given_arguments(call, summary, root))
        return found

    def roots_of(self, value: nodes.NodeNG) -> set[str]:
        """Names whose objects `value` may hold (see names.value_roots and call_roots); a
        builtin the notebook never rebinds (`defaultdict(list)`, `map(str, xs)`) holds
        nothing of the notebook's."""
        return {root for root in value_roots(value, self.call_roots)
                if root not in BUILTIN_NAMES or root in self.state.bound
                or (self.function_mode and root in self.locals)}

    def _shares(self, value: nodes.NodeNG, other: str) -> bool:
        """Whether the value may hold `other`'s object (not just something made from it)."""
        if isinstance(value, (nodes.Name, nodes.List, nodes.Tuple, nodes.Set, nodes.Dict,
                              nodes.IfExp, nodes.Starred)):
            return True  # the very same object, or a container holding it
        known = self.state.types.get(other)
        if known in kb.IMMUTABLE_TYPES:
            return False  # nothing in it can change
        if isinstance(value, nodes.Call) and not (
                isinstance(value.func, nodes.Attribute)
                or (isinstance(value.func, nodes.Name)
                    and value.func.name in ELEMENT_SHARING_BUILTINS)):
            return True  # a constructor, a partial, a library call: it may keep the object
        if (isinstance(value, nodes.Call) and kb.keeps_arguments(self.qualify(value.func))) or (
                self.holds_itself(value)):
            return True  # ChainMap(d), Pipeline(...), df.groupby(k): the object itself
        if other in self.state.immutable_items:
            return False  # its items are numbers or strings: sharing them changes nothing
        # pandas 3 copies on write: what is derived from a frame never changes the frame
        return not (known in ("pandas.DataFrame", "pandas.Series") and PANDAS_COPIES_ON_WRITE)

    def holds_itself(self, value: nodes.NodeNG) -> bool:
        """A value that holds the frame or series it comes from itself, not a copy
        (`df.groupby("k")`, `ts.rolling(2)`, `df.style`, `s.str`): copy-on-write does not
        part them, and a later change to the frame (a new column) shows in it. What is read
        through one (`df.loc[mask]`, `s.str.upper()`) is a new object."""
        if isinstance(value, nodes.Attribute) and value.attrname in kb.HOLDING_ATTRIBUTES:
            return True
        node = value
        while isinstance(node, (nodes.Attribute, nodes.Subscript)):  # df.groupby("k")["v"]
            node = node.expr if isinstance(node, nodes.Attribute) else node.value
        if not isinstance(node, nodes.Call) or not isinstance(node.func, nodes.Attribute):
            return False
        if node.func.attrname in kb.HOLDING_METHODS:
            return True
        return chain_has_attribute(node.func.expr, "style")  # a Styler's methods return it

    def link_parts(self, target: nodes.NodeNG, value: nodes.NodeNG) -> None:
        """`fig, ax = plt.subplots()`: names unpacked from one result may be parts of one
        whole that refer to each other (a figure and its axes): they are handed on
        together."""
        names = [n.name for n in target.nodes_of_class(nodes.AssignName)]
        if self.function_mode or len(names) < 2 or not self.parts_linked(value):
            return
        self.share(names[0], names[1:])
        self.fx.notes.append((value.lineno or 0, f"{', '.join(names)} are unpacked from one "
                                                 f"result of {value.func.as_string()}(), "
                                                 "whose parts may refer to each other: "
                                                 "handed on together"))

    def parts_linked(self, value: nodes.NodeNG) -> bool:
        """Whether the parts of a call's result may refer to each other: not for a library
        whose results are independent values (`train_test_split`) or a builtin."""
        if not isinstance(value, nodes.Call):
            return False  # a literal is unpacked item by item; a name links through itself
        func = value.func
        root = root_name(func)
        if root is not None and root in self.state.imports:
            library = kb.library_of(self.qualify(func))
            return library is None or library.linked_results
        if isinstance(func, nodes.Name):
            return func.name in self.state.functions or func.name not in BUILTIN_NAMES
        if not isinstance(func, nodes.Attribute) or root is None:
            return True
        families = self.state.families.get(root, frozenset())
        if any(kb.results_linked(family) for family in families):
            return True  # ax.hist(...): the bars belong to the axes
        kind = self.type_of(func.expr)
        if kind in kb.KNOWN_TYPES or kind in kb.IMMUTABLE_TYPES:
            return False  # name, ext = path.rsplit(".", 1)
        return not any(library.family in families for library in kb.LIBRARIES)

    def link_figure(self, name: str, value: nodes.NodeNG) -> None:
        """Names bound in one cell to what pyplot returns (`plt.gcf()`, `plt.gca()`,
        `sns.histplot(...)`) are parts of the cell's current figure."""
        if self.function_mode or not isinstance(value, nodes.Call):
            return
        qualified = self.qualify(value.func) or ""
        if not qualified.startswith(("matplotlib.pyplot.", "seaborn.")) or (
                kb.state_set_by_call(qualified) is not None):
            return
        for other in sorted(self.figure_names - {name}):
            self.state.link(name, other)
        self.figure_names.add(name)
        if len(self.state.alias_group(name)) > 1:
            self._hand_on_group(name)

    def link_values(self, container: str, value: nodes.NodeNG | None) -> None:
        """`container` now holds `value`: a later change to either shows in both."""
        if value is None or self.function_mode:
            return
        for other in self.roots_of(value):
            if (other != container and other not in self.state.imports
                    and other not in self.state.functions
                    and self.state.types.get(other) not in kb.SCALAR_TYPES
                    and self._shares(value, other)):
                self.state.link(container, other)
        self._hand_on_group(container)

    def share(self, name: str, others: Iterable[str]) -> None:
        """`name` and `others` may share objects from now on: they are handed on together."""
        if self.function_mode:
            return
        for other in sorted(others):
            self.state.link(name, other)
        self._hand_on_group(name)

    def _hand_on_group(self, name: str) -> None:
        """A new alias: the cell hands on every member, so later cells load them together.

        Loaded from different cells, two names for one object would become two objects.
        """
        if not self.hands_on:
            return
        for member in sorted(self.state.hand_off_group(name) - {name}):
            if member not in self.definite:
                self.fx.reads.add(member)
            self.fx.mutates.add(member)
            self.state.definitions.pop(member, None)

    def _keeper(self, value: nodes.NodeNG) -> bool:
        """A call whose result keeps its arguments for a reason the code does not show: a
        library object (`Pipeline([...])`, `ChainMap(d)`, `df.groupby(k)`), or a function
        or class of the notebook (a closure it returns, what `__init__` stores)."""
        if not isinstance(value, nodes.Call):
            return False
        if isinstance(value.func, nodes.Name) and value.func.name in self.state.functions:
            return True
        return kb.keeps_arguments(self.qualify(value.func)) or self.holds_itself(value)

    def _shares_default(self, value: nodes.NodeNG, callee: str) -> bool:
        """`a = Bag()` where Bag's __init__ keeps its mutable default (`items=[]`): every
        instance holds the one default list the class's function keeps."""
        summary = self.state.functions.get(callee)
        if summary is None or not (isinstance(value, nodes.Call)
                                   and isinstance(value.func, nodes.Name)
                                   and value.func.name == callee):
            return False
        return bool(summary.mutable_defaults & (summary.retains | summary.returns_params))
