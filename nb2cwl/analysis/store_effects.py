"""Stores into objects: `obj.attr = v`, `obj[k] = v`, `del obj[k]`.

A store changes the object it reaches from its root name, and makes it hold the stored value.
Into process-wide state (`plt.rcParams[k] = v`, `os.environ[k] = v`) it is a state change;
into a module nb2cwl has no table for, a change every later user of the module sees; inside a
method, into `type(self)` or the class itself, a change of the class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, Hold, StateChange
from nb2cwl.analysis.names import root_name

if TYPE_CHECKING:
    from nb2cwl.analysis.state import NamespaceState


class StoreEffects:
    """Mixin for the effect walker: assignment targets and stores (see the module docstring)."""

    fx: Effects
    state: NamespaceState
    function_mode: bool
    locals: set[str]
    params: tuple[str, ...]
    owner_class: str | None
    class_mutated: bool

    # provided by the effect walker
    write: Callable[[str, nodes.NodeNG | None], None]
    expression: Callable[[nodes.NodeNG | None], None]
    mutate: Callable[[str, int, str], None]
    mutate_expr: Callable[[nodes.NodeNG, int, str], None]
    link_values: Callable[[str, nodes.NodeNG | None], None]
    link_parts: Callable[[nodes.NodeNG, nodes.NodeNG], None]
    builtin_source: Callable[[nodes.NodeNG], nodes.Call | None]
    roots_of: Callable[[nodes.NodeNG], set[str]]
    held_effects: Callable[[nodes.NodeNG], Effects | None]
    keep_changing: Callable[[str, nodes.NodeNG], None]
    qualify: Callable[[nodes.NodeNG], str | None]
    _state_object: Callable[[nodes.NodeNG], kb.StateKind | None]

    def target(self, node: nodes.NodeNG, value: nodes.NodeNG | None,
               iterated: bool = False, nested: bool = False) -> None:
        """Bind an assignment target to `value` (None when unknown); `iterated`: the target
        takes the items of `value` in turn (a for loop); `nested`: `node` is part of the
        loop's target, not all of it."""
        if isinstance(node, nodes.AssignName):
            self.write(node.name, value)
        elif isinstance(node, (nodes.Tuple, nodes.List)):
            pairs = None if iterated else _element_pairs(node, value)
            if pairs is not None:  # losses, accs = [], []: each name its own value
                for element, part in pairs:
                    self.target(element, part)
                names = {n.name for n in node.nodes_of_class(nodes.AssignName)}
                if names & {n.name for n in value.nodes_of_class(nodes.Name)}:
                    for name in names:  # `a, b = b, a`: the parts were read before any binding
                        self.state.forget_strings_of(name)
                return
            fresh_first = iterated and not nested and self._fresh_first_item(value)
            for position, element in enumerate(node.elts):
                self.target(element, None if fresh_first and position == 0 else value,
                            iterated, nested=True)
            if value is not None and not iterated:
                self.link_parts(node, value)
        elif isinstance(node, nodes.Starred):
            self.target(node.value, value, iterated, nested=True)
        elif isinstance(node, nodes.AssignAttr):
            self.expression(node.expr)
            self._store_into(node.expr, node.lineno, f"attribute store .{node.attrname}", value,
                             node.attrname)
        elif isinstance(node, nodes.Subscript):
            self.expression(node.value)
            self.expression(node.slice)
            self._store_into(node.value, node.lineno, "item store", value)
        else:
            self.expression(node)

    def _fresh_first_item(self, iterable: nodes.NodeNG | None) -> bool:
        """`for i, x in enumerate(xs)`: the index is a new int, sharing nothing with `xs`
        (linked to it, every list an index was later stored in joined `xs`'s group). A
        mapping's keys may be objects of the notebook (hashable by identity): not these."""
        return (isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name)
                and iterable.func.name == "enumerate" and "enumerate" not in self.state.bound)

    def _store_into(self, container: nodes.NodeNG, line: int, why: str,
                    value: nodes.NodeNG | None, attribute: str | None = None) -> None:
        """A store (or del) into an object: process-wide state, a module, a class, a value."""
        root = root_name(container)
        local = self.function_mode and root in self.locals
        kind = None if local else self._state_object(container)
        if kind is None and attribute is not None and not local:
            kind = kb.state_stored_into(f"{self.qualify(container)}.{attribute}")
        if kind is not None:  # plt.rcParams[k] = v, pd.options.display.max_rows = n
            what = f"{container.as_string()}{'.' + attribute if attribute else '[...]'}"
            self.fx.state_changes.append(StateChange(line, kind, what))
            self.fx.module_state.add(what)
            return
        if root in self.state.imports and not local:
            qualified = self.qualify(container) or root
            self.fx.module_state.add(qualified)
            self.fx.holds.append(Hold(kb.family_of(qualified) or "*", line,
                                      f"a store into {container.as_string()} changes the "
                                      "module for every later cell that uses it"))
            return
        if self.function_mode and self._is_own_class(container):
            self.class_mutated = True  # type(self).count += 1
            self.mutate(self.owner_class or "", line, why)
            return
        self.mutate_expr(container, line, why, itself=True)
        if root is None or value is None or self.function_mode:
            return
        inner = self.builtin_source(container)
        if inner is not None:  # vars(o)["x"] = v: o holds v
            for holder in sorted(self.roots_of(inner)):
                self.link_values(holder, value)
            return
        self.link_values(root, value)  # storing x into obj makes obj hold x
        self.keep_changing(root, value)
        held = self.held_effects(value)
        if held is not None:  # callbacks[name] = f: calling an item later runs f
            previous = self.state.held_calls.get(root)
            if previous is not None:
                held.merge(previous)
            self.state.held_calls[root] = held

    def _is_own_class(self, node: nodes.NodeNG) -> bool:
        """`type(self)`, `self.__class__` or the class's own name, in one of its methods."""
        if self.owner_class is None:
            return False
        if isinstance(node, nodes.Name):
            return node.name == self.owner_class
        if isinstance(node, nodes.Attribute) and node.attrname == "__class__":
            return isinstance(node.expr, nodes.Name) and node.expr.name in self.params[:1]
        return (isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name)
                and node.func.name == "type" and len(node.args) == 1
                and isinstance(node.args[0], nodes.Name)
                and node.args[0].name in self.params[:1])


def _element_pairs(target: nodes.NodeNG, value: nodes.NodeNG | None,
                   ) -> list[tuple[nodes.NodeNG, nodes.NodeNG]] | None:
    """`a, b = x, []`: the targets and the values they take, item by item (None when the
    value is not a literal of the same length, or either side has a starred item)."""
    if not isinstance(value, (nodes.Tuple, nodes.List)) or len(value.elts) != len(target.elts):
        return None
    if any(isinstance(e, nodes.Starred) for e in [*target.elts, *value.elts]):
        return None
    return list(zip(target.elts, value.elts, strict=True))
