"""What happens to names: reads, bindings, deletions, in-place changes, and the effects of
functions applied where they are used.

At module level every name is a global of the notebook. A binding records what the analysis
can know of the new value (bound_values) and which names it may share objects with
(shared_objects).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, Hold
from nb2cwl.analysis.names import (
    ELEMENT_SHARING_BUILTINS,
    chain_has_call,
    is_itself,
    root_name,
)
from nb2cwl.analysis.string_values import name_values
from nb2cwl.analysis.value_types import leaves_arrays

#: Types whose copy() copies the data: a copy shares nothing with the original.
_ARRAYS_AND_FRAMES = frozenset({"numpy.ndarray", ".ndarray", "pandas.DataFrame", "pandas.Series",
                                "pandas.core.frame.DataFrame", "pandas.core.series.Series"})

if TYPE_CHECKING:
    from nb2cwl.analysis.state import NamespaceState


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
    local_item_sharing: dict[str, set[str]]
    statement_line: int
    item_roots: dict[str, set[str]]
    definite: set[str]
    depth: int
    figure_names: set[str]
    _applying: set[str]

    # provided by the mixins shared_objects and bound_values
    roots_of: Callable[[nodes.NodeNG], set[str]]
    families_of: Callable[[nodes.NodeNG], frozenset[str]]
    link_figure: Callable[[str, nodes.NodeNG], None]
    _shares: Callable[[nodes.NodeNG, str], bool]
    _shares_default: Callable[[nodes.NodeNG, str], bool]
    _keeper: Callable[[nodes.NodeNG], bool]
    _hand_on_group: Callable[[str], None]
    _learn_value: Callable[[str, nodes.NodeNG], None]
    _strings: Callable[[nodes.NodeNG | None], frozenset[str] | None]

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
                    found = (self.local_item_sharing if self.copies(value, other)
                             else self.local_aliases)
                    found.setdefault(name, set()).add(other)
            else:
                self.fx.writes.add(name)
            return
        self.fx.writes.add(name)
        self.fx.deletes.discard(name)
        self.figure_names.discard(name)
        state = self.state
        first_binding = name not in state.bound
        before = name_values(name, state) if self.may_be_bound(name) else frozenset()
        state.bound.add(name)
        state.definitions.pop(name, None)
        state.const_strings.pop(name, None)
        state.types.pop(name, None)
        families = self.families_of(value) if value is not None else frozenset()
        if self.depth > 0:
            # the strings it may be: the new ones, or still the old ones (`path = f"..."`)
            state.string_items.pop(name, None)
            strings = self._strings(value) if value is not None else None
            state.choices.pop(name, None)
            if strings is not None and before is not None:
                state.choices[name] = strings | before
            # may or may not happen: keep what was known of the old value (aliases, function
            # effects) and learn nothing certain about the new one
            for other in self.roots_of(value) if value is not None else ():
                if other != name and other not in state.imports and (
                        state.types.get(other) not in kb.SCALAR_TYPES):
                    if self.copies(value, other):
                        state.share_items(name, other)
                    else:
                        state.link(name, other)
            self._hand_on_group(name)
            if isinstance(value, nodes.Lambda):
                self._merge_function(name, value)
            state.families[name] = state.families.get(name, frozenset()) | families
            known = self.syntactic_type(value) if value is not None else None
            if first_binding and known in kb.SCALAR_TYPES:  # a string made in a loop
                state.types[name] = known
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
            if other == name or other in state.imports or (
                    state.types.get(other) in kb.SCALAR_TYPES):
                continue  # a number or a string: nothing to share
            if self.copies(value, other):  # d = rows.copy(): its items, not its object
                if not self.fresh_copy(value, other):
                    state.share_items(name, other)
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

    def draw(self, states: Iterable[str]) -> None:
        """Numbers are taken from these hidden generators (`rng:numpy`) here."""
        for state in states:
            self.fx.rng.add(state)
            self.fx.rng_lines.setdefault(state, self.statement_line)

    def copies(self, value: nodes.NodeNG, other: str) -> bool:
        """Whether `value` is a new container of `other`'s items (`other.copy()`,
        `list(other)`), which a store into it does not change. (An array's or a frame's
        copy shares nothing at all: `fresh_copy`.)"""
        if not isinstance(value, nodes.Call):
            return False
        func = value.func
        if isinstance(func, nodes.Attribute):  # rows.copy(), frames[i].copy()
            return (func.attrname in kb.COPYING_METHODS and root_name(func.expr) == other
                    and not chain_has_call(func.expr))
        qualified = self.qualify(func)
        return (qualified in kb.COPYING_FUNCTIONS and len(value.args) == 1
                and not value.keywords and isinstance(value.args[0], nodes.Name)
                and value.args[0].name == other)

    def local_reach(self, name: str, items: bool = True) -> set[str]:
        """In a function body: `name` and the names whose objects (and with `items`, whose
        items) it may hold, through chains (`a = p; b = a.copy(); b[0].append(x)`)."""
        found, todo = {name}, [name]
        while todo:
            here = todo.pop()
            reached = set(self.local_aliases.get(here, ()))
            if items:
                reached |= self.local_item_sharing.get(here, set())
            for other in reached - found:
                found.add(other)
                todo.append(other)
        return found

    def fresh_copy(self, value: nodes.NodeNG, other: str) -> bool:
        """A copy of an array or a frame (`df.copy()`, `a.copy()`): its data are copied
        too, so it shares nothing with the original (Python objects in an object column
        aside)."""
        return isinstance(value, nodes.Call) and isinstance(value.func, nodes.Attribute) and (
            self.state.types.get(other) in _ARRAYS_AND_FRAMES
            and not leaves_arrays(value.func.expr))  # not df.attrs.copy(): a dict

    def mutate(self, name: str, line: int, why: str, itself: bool = False) -> None:
        """The object bound to `name` may be modified in place; `itself`: only that object
        (a store into it, its own method), none of the items it holds, so not a copy that
        holds the same items."""
        if name in self.item_roots:  # a comprehension variable: an item of its collection
            for root in sorted(self.item_roots[name]):
                self.mutate(root, line, f"{why} (an item of {root})")
            return
        if self.function_mode:
            for target in self.local_reach(name, items=not itself):
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
            self.state.string_items.pop(member, None)
            self.state.callable_collections.pop(member, None)  # it may hold others now
            if member not in self.definite:
                self.fx.reads.add(member)
            self.fx.mutates.add(member)
            self.fx.mutation_lines.setdefault(member, line or self.statement_line)
            note = f"a change to {name} also changes {member}, which shares its object"
            if member != name and not any(said == note for _, said in self.fx.notes):
                self.fx.notes.append((line, note))  # once a cell: ax.plot, ax.set_title, ...
        if not itself and self.state.item_sharing:  # copies hold the items too
            sharers = self.state.hand_off_group(name) - self.state.alias_group(name)
            for other in sorted(sharers):
                self.mutate(other, line, f"{why} (an item {name} shares with {other}, a copy)",
                            itself=True)

    def mutate_expr(self, node: nodes.NodeNG, line: int, why: str, itself: bool = False,
                    ) -> None:
        """Mutation of the object an expression such as `a.b[0]` reaches from its root name,
        or of the objects a call's result holds (`zip(rows, extra)`, `map(f, rows)`,
        `vars(o)["x"]`); `itself`: a store into that object, not into what it holds."""
        inner = self.builtin_source(node)
        if inner is not None:
            node = inner
        if isinstance(node, nodes.Call):
            for root in sorted(self.roots_of(node)):
                self.mutate(root, line, why)
            return
        root = root_name(node)
        if root is not None:
            self.mutate(root, line, why, itself and is_itself(node))

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

    def may_be_bound(self, name: str | None) -> bool:
        """Whether the global `name` may hold a value here: bound by the notebook, or by code
        the analysis cannot read (a star import, exec(), globals())."""
        return name is not None and (name in self.state.bound or self.state.unseen_bindings
                                     or bool(self.fx.opaque_namespace))

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
            # what it holds now is not known here (`global base; base = [0]`)
            self.state.bound.add(written)
            self.state.types.pop(written, None)
            self.state.forget_strings_of(written)
            self.state.immutable_items.discard(written)
        for mutated in sorted(fx.mutates):
            self.mutate(mutated, 0, why)
        self.draw(fx.rng)
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

    def _merge_function(self, name: str, value: nodes.Lambda) -> None:
        from nb2cwl.analysis.summaries import summarize_function

        summary = summarize_function(value, self.state, self.cell_index, set())
        old = self.state.functions.get(name)
        if old is not None:
            summary.effects.merge(old.effects)
        self.state.functions[name] = summary


def _at_call(changes: list) -> list:
    """State changes made inside a function, at the line of its call (not known here)."""
    from dataclasses import replace

    return [replace(change, line=0) for change in changes]
