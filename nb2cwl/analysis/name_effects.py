"""What happens to names: reads, bindings, deletions, in-place changes, and shared objects.

At module level every name is a global of the notebook. A binding records what the analysis
can know of the new value: a constant string, a syntactic type, whether it is an iterator,
which names it may share objects with (aliases), which libraries' objects it holds
(families), whether it is process-wide state (`rc = plt.rcParams`), callables it holds, and
whether it is a view of an array.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, Hold
from nb2cwl.analysis.names import (
    BUILTIN_NAMES,
    ELEMENT_SHARING_BUILTINS,
    chain_has_attribute,
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


#: From pandas 3 on, copy-on-write is always on: a column or slice is never a view.
_PANDAS_COPIES_ON_WRITE = _pandas_major() >= 3
#: Types whose keys(), values() and items() are live views.
_MAPPINGS = frozenset({"builtins.dict", "collections.OrderedDict", "collections.defaultdict",
                       "collections.Counter"})


class NameEffects:
    """Mixin for the effect walker: the effects on names (see the module docstring)."""

    fx: Effects
    state: NamespaceState
    cell_index: int
    function_mode: bool
    locals: set[str]
    params: tuple[str, ...]
    param_mutations: set[str]
    local_aliases: dict[str, set[str]]
    item_roots: dict[str, set[str]]
    definite: set[str]
    depth: int
    figure_names: set[str]
    _applying: set[str]

    # provided by the effect walker
    syntactic_type: Callable[[nodes.NodeNG], str | None]
    qualify: Callable[[nodes.NodeNG], str | None]
    call_roots: Callable[[nodes.Call], set[str]]
    held_effects: Callable[[nodes.NodeNG], Effects | None]
    type_of: Callable[[nodes.NodeNG], str | None]

    def read(self, name: str) -> None:
        """A load of `name`."""
        self.fx.families |= self.state.families.get(name, frozenset())
        if self.function_mode:
            if name not in self.locals:
                self.fx.reads.add(name)
            return
        if name not in self.definite:
            self.fx.reads.add(name)
        self.apply_use(name)

    def write(self, name: str, value: nodes.NodeNG | None) -> None:
        """A (re)binding of `name` to `value` (None: not a plain expression)."""
        if self.function_mode:
            if name in self.locals:
                for other in self.roots_of(value) if value is not None else ():
                    self.local_aliases.setdefault(name, set()).add(other)
            else:
                self.fx.writes.add(name)
            return
        self.fx.writes.add(name)
        self.fx.deletes.discard(name)
        self.figure_names.discard(name)
        state = self.state
        state.bound.add(name)
        state.definitions.pop(name, None)
        state.const_strings.pop(name, None)
        state.types.pop(name, None)
        families = self.families_of(value) if value is not None else frozenset()
        if self.depth > 0:
            # may or may not happen: keep what was known of the old value (aliases, function
            # effects) and learn nothing certain about the new one
            for other in self.roots_of(value) if value is not None else ():
                if other != name and other not in state.imports:
                    state.link(name, other)
            self._hand_on_group(name)
            if isinstance(value, nodes.Lambda):
                self._merge_function(name, value)
            state.families[name] = state.families.get(name, frozenset()) | families
            return
        self.definite.add(name)
        state.unlink(name)
        state.forget(name)
        if families:
            state.families[name] = families
        if value is None:
            return
        self._learn_value(name, value)
        held: list[str] = []
        for other in sorted(self.roots_of(value)):
            if other == name or other in state.imports:
                continue
            if (other not in state.functions and self._shares(value, other)) or (
                    self._shares_default(value, other)):
                state.link(name, other)
                held.append(other)
        self._hand_on_group(name)
        self.link_figure(name, value)
        if held and self._keeper(value):  # say why: it is not visible in the code
            self.fx.notes.append((value.lineno or 0, f"{name} may hold {', '.join(held)} "
                                                     f"(what {value.func.as_string()}() keeps "
                                                     "or returns): handed on together"))

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

    def _learn_value(self, name: str, value: nodes.NodeNG) -> None:
        from nb2cwl.analysis.file_effects import is_path, literal_string
        from nb2cwl.analysis.summaries import summarize_function

        state = self.state
        if isinstance(value, nodes.Const) and isinstance(value.value, str):
            state.const_strings[name] = value.value
        elif is_path(value, state):  # `IMAGES = Path() / "images"`: a literal path too
            path = literal_string(value, state)
            if path is not None:
                state.const_strings[name] = path
        known = self.syntactic_type(value)
        if known:
            state.types[name] = known
        if self._immutable_items(value):
            state.immutable_items.add(name)
        if self._one_pass(value):
            state.iterators.add(name)
        if isinstance(value, nodes.Lambda):
            state.functions[name] = summarize_function(value, state, self.cell_index, set())
        kind = self._state_of_value(value)
        if kind is not None:
            state.state_objects[name] = kind
        held = self.held_effects(value) if not isinstance(value, nodes.Lambda) else None
        if held is not None:
            state.held_calls[name] = held
        if isinstance(value, nodes.Call) and self.qualify(value.func) in kb.WEAK_REFERENCES:
            tag = f"object:{name}"
            state.families[name] = state.families.get(name, frozenset()) | {tag}
            self.fx.holds.append(Hold(tag, value.lineno or 0, f"{name} holds weak references, "
                                                               "which no step can hand on"))
        base = self._view_base(value)
        if base is not None:
            self.fx.views.append((value.lineno or 0, name, base, "array"))
        base = self._mapping_view_base(value)
        if base is not None:
            self.fx.views.append((value.lineno or 0, name, base, "mapping"))

    def roots_of(self, value: nodes.NodeNG) -> set[str]:
        """Names whose objects `value` may hold (see names.value_roots and call_roots); a
        builtin the notebook never rebinds (`defaultdict(list)`, `map(str, xs)`) holds
        nothing of the notebook's."""
        return {root for root in value_roots(value, self.call_roots)
                if root not in BUILTIN_NAMES or root in self.state.bound
                or (self.function_mode and root in self.locals)}

    def families_of(self, value: nodes.NodeNG) -> frozenset[str]:
        """The libraries whose objects a value may be or hold: those of the names it reads
        and of the libraries and notebook functions it calls."""
        found: set[str] = set()
        for node in [value, *value.nodes_of_class((nodes.Name, nodes.Call))]:
            if isinstance(node, nodes.Name):
                found |= {f for f in self.state.families.get(node.name, ()) if ":" not in f}
                summary = self.state.functions.get(node.name)
                if summary is not None:
                    found |= summary.effects.families
            elif isinstance(node, nodes.Call):
                family = kb.family_of(self.qualify(node.func))
                if family and family != "python":
                    found.add(family)
        return frozenset(found)

    def _view_base(self, value: nodes.NodeNG) -> str | None:
        """The array `value` may be a view of (`a[:3]`, `a.T`, `a.reshape(...)`,
        `np.asarray(a)`): writing through one then changes the other, which no step can
        hand on (arrays are saved one by one)."""
        node = value
        if isinstance(node, nodes.Call):
            qualified = self.qualify(node.func)
            if qualified in kb.SHARING_FUNCTIONS and node.args:
                node = node.args[0]
            elif isinstance(node.func, nodes.Attribute) and node.func.attrname in (
                    kb.VIEW_METHODS):
                node = node.func.expr
            else:
                return None
        elif isinstance(node, nodes.Attribute):
            if node.attrname not in kb.VIEW_METHODS:
                return None
            node = node.expr
        elif isinstance(node, nodes.Subscript):
            node = node.value
        else:
            return None
        root = root_name(node)
        if root is None or root in self.state.imports:
            return None
        kind = self.state.types.get(root)
        if kind == "numpy.ndarray" or (kind is None and "numpy" in self.state.families.get(
                root, ())):
            return root
        return None

    def _mapping_view_base(self, value: nodes.NodeNG) -> str | None:
        """The dict `value` is a live view of (`d.keys()`, `d.values()`, `d.items()`,
        `MappingProxyType(d)`): saved and loaded, a view shows a copy of its dict, so a
        later change to the dict would not show in it."""
        if not isinstance(value, nodes.Call):
            return None
        func = value.func
        if self.qualify(func) == "types.MappingProxyType" and value.args:
            node = value.args[0]
        elif (isinstance(func, nodes.Attribute) and func.attrname in ("keys", "values", "items")
              and not value.args and not value.keywords):
            node = func.expr
        else:
            return None
        root = root_name(node)
        if root is None or root in self.state.imports or root in self.state.functions:
            return None
        kind = self.state.types.get(root)
        if kind is not None and kind not in _MAPPINGS:
            return None  # df.keys() is an Index, s.items() an iterator
        return root

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
        return not (known in ("pandas.DataFrame", "pandas.Series") and _PANDAS_COPIES_ON_WRITE)

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

    def _one_pass(self, value: nodes.NodeNG) -> bool:
        """The value is an iterator: whoever iterates it, or calls next() on it, uses it up."""
        if isinstance(value, nodes.GeneratorExp):
            return True
        if not isinstance(value, nodes.Call):
            return False
        qualified = self.qualify(value.func)
        if qualified in kb.ITERATOR_FACTORIES or (qualified or "").startswith("itertools."):
            return True
        summary = (self.state.functions.get(value.func.name)
                   if isinstance(value.func, nodes.Name) else None)
        return summary is not None and summary.is_generator

    def _immutable_items(self, value: nodes.NodeNG) -> bool:
        """A collection whose items are all numbers or strings: range(...), [1, 'a'], ...
        (not an empty one: what it will hold is not known)."""
        if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
            return bool(value.elts) and all(isinstance(e, nodes.Const) for e in value.elts)
        if isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name):
            if value.func.name == "range":
                return True
            if value.func.name in ("list", "tuple", "sorted", "set") and len(value.args) == 1:
                return self._immutable_items(value.args[0]) or (
                    isinstance(value.args[0], nodes.Name)
                    and value.args[0].name in self.state.immutable_items)
        if isinstance(value, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp)):
            element = value.elt
            own = {n.name for g in value.generators
                   for n in g.target.nodes_of_class(nodes.AssignName)}
            sources = [g.iter for g in value.generators]
            bare = isinstance(element, nodes.Name) and element.name in own
            return bare and all(
                self._immutable_items(s) or (isinstance(s, nodes.Name)
                                             and s.name in self.state.immutable_items)
                for s in sources)
        return False

    def link_values(self, container: str, value: nodes.NodeNG | None) -> None:
        """`container` now holds `value`: a later change to either shows in both."""
        if value is None or self.function_mode:
            return
        for other in self.roots_of(value):
            if (other != container and other not in self.state.imports
                    and other not in self.state.functions and self._shares(value, other)):
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
        for member in sorted(self.state.alias_group(name) - {name}):
            if member not in self.definite:
                self.fx.reads.add(member)
            self.fx.mutates.add(member)
            self.state.definitions.pop(member, None)

    def _merge_function(self, name: str, value: nodes.Lambda) -> None:
        from nb2cwl.analysis.summaries import summarize_function

        summary = summarize_function(value, self.state, self.cell_index, set())
        old = self.state.functions.get(name)
        if old is not None:
            summary.effects.merge(old.effects)
        self.state.functions[name] = summary

    def delete(self, name: str) -> None:
        """`del name`."""
        if self.function_mode:
            return
        if self.depth > 0:
            # may or may not be deleted: later cells take it (or its absence) from this cell
            self.fx.writes.add(name)
            self.state.definitions.pop(name, None)
            return
        self.fx.deletes.add(name)
        self.fx.writes.discard(name)
        self.definite.discard(name)
        self.state.unlink(name)
        self.state.forget(name)

    def mutate(self, name: str, line: int, why: str) -> None:
        """The object bound to `name` may be modified in place."""
        if name in self.item_roots:  # a comprehension variable: an item of its collection
            for root in sorted(self.item_roots[name]):
                self.mutate(root, line, f"{why} (an item of {root})")
            return
        if self.function_mode:
            targets = {name} | self.local_aliases.get(name, set())
            for target in targets:
                if target in self.params:
                    self.param_mutations.add(target)
                elif target not in self.locals:
                    self.fx.mutates.add(target)
                    self.fx.reads.add(target)
            return
        if name in self.state.imports:
            return
        for member in sorted(self.state.alias_group(name)):
            self.state.definitions.pop(member, None)  # its value is data from now on
            self.state.immutable_items.discard(member)  # it may hold anything now
            if member not in self.definite:
                self.fx.reads.add(member)
            self.fx.mutates.add(member)
            if member != name:
                self.fx.notes.append((line, f"a change to {name} also changes {member}, which "
                                            "shares its object"))

    def mutate_expr(self, node: nodes.NodeNG, line: int, why: str) -> None:
        """Mutation of the object an expression such as `a.b[0]` reaches from its root name,
        or of the objects a call's result holds (`zip(rows, extra)`, `map(f, rows)`,
        `vars(o)["x"]`)."""
        inner = self.builtin_source(node)
        if inner is not None:
            node = inner
        if isinstance(node, nodes.Call):
            for root in sorted(self.roots_of(node)):
                self.mutate(root, line, why)
            return
        root = root_name(node)
        if root is not None:
            self.mutate(root, line, why)

    def builtin_source(self, node: nodes.NodeNG) -> nodes.Call | None:
        """The call of a builtin an expression starts from, when its result holds or is part
        of its arguments: `vars(o)["x"]`, `getattr(o, "items").append`, `list(d.values())[0]`.
        """
        while isinstance(node, (nodes.Attribute, nodes.Subscript, nodes.Call)):
            if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name):
                name = node.func.name
                bound = (name in self.state.functions or name in self.state.imports
                         or (self.function_mode and name in self.locals))
                if name in ELEMENT_SHARING_BUILTINS and not bound:
                    return node
                return None
            node = (node.expr if isinstance(node, nodes.Attribute)
                    else node.func if isinstance(node, nodes.Call) else node.value)
        return None

    def apply_use(self, name: str) -> None:
        """A use of a user function or class: its body's effects happen here (late binding)."""
        summary = self.state.functions.get(name)
        if summary is None or name in self._applying:
            return
        self._applying.add(name)
        try:
            self.apply_effects(summary.effects, f"call of {name}")
        finally:
            self._applying.discard(name)

    def apply_effects(self, fx: Effects, why: str) -> None:
        """Effects of code run here that was analysed elsewhere (a function's body)."""
        for read in sorted(fx.reads):
            self.read(read)
        for written in sorted(fx.writes):
            self.fx.writes.add(written)
            self.fx.reads.add(written)  # conditionally rebound inside the function
        for mutated in sorted(fx.mutates):
            self.mutate(mutated, 0, why)
        self.fx.rng |= fx.rng
        self.fx.module_state |= fx.module_state
        self.fx.literals |= fx.literals
        self.fx.file_reads |= fx.file_reads
        self.fx.file_writes |= fx.file_writes
        self.fx.families |= fx.families
        self.fx.opaque_io.extend(fx.opaque_io)
        self.fx.opaque_reads.extend(fx.opaque_reads)
        self.fx.opaque_namespace.extend(fx.opaque_namespace)
        self.fx.state_changes.extend(_at_call(fx.state_changes))
        self.fx.holds.extend(Hold(h.family, 0, h.reason) for h in fx.holds)
        self.fx.reads_all.extend(fx.reads_all)

    def _state_of_value(self, value: nodes.NodeNG) -> kb.StateKind | None:
        """The process-wide state a value is (`plt.rcParams`, `logging.getLogger()`)."""
        if isinstance(value, nodes.Call):
            return kb.state_object(self.qualify(value.func))
        if isinstance(value, (nodes.Attribute, nodes.Name)):
            return kb.state_object(self.qualify(value))
        return None


def _at_call(changes: list) -> list:
    """State changes made inside a function, at the line of its call (not known here)."""
    from dataclasses import replace

    return [replace(change, line=0) for change in changes]

