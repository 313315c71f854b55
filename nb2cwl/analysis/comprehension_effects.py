"""Comprehensions and generator expressions: their variables are their own, their items are
those of the collections they iterate, and a generator expression's code runs when it is
consumed (a mixin of the effect walker, analysis/walker.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from astroid import nodes

from nb2cwl.analysis.names import item_bindings, root_name

if TYPE_CHECKING:
    from nb2cwl.analysis.state import NamespaceState


class ComprehensionEffects:
    """Mixin for the effect walker: comprehensions (see the module docstring)."""

    state: NamespaceState
    function_mode: bool
    depth: int
    item_roots: dict[str, set[str]]
    comprehension_names: set[str]
    lazy: int

    # provided by the effect walker
    expression: Callable[[nodes.NodeNG | None], None]
    read: Callable[[str], None]
    mutate: Callable[[str, int, str], None]
    target: Callable[..., None]
    call: Callable[..., None]
    _run_callable_value: Callable[[str, int], None]
    _file_function_value: Callable[[nodes.NodeNG], None]
    library_callable_passed: Callable[[nodes.NodeNG], None]
    handed_callables: Callable[[nodes.Call, int], None]

    def comprehension(self, node: nodes.NodeNG) -> None:
        """A comprehension: its targets are local to it; everything else is read.

        Its variables refer to items of the collections: modifying one modifies those.
        """
        bound: set[str] = set()
        saved = dict(self.item_roots)
        saved_names = self.comprehension_names
        self.comprehension_names = saved_names | {
            name.name for generator in node.generators
            for name in generator.target.nodes_of_class(nodes.AssignName)}
        lazy = isinstance(node, nodes.GeneratorExp)
        self.lazy += lazy
        try:
            for index, generator in enumerate(node.generators):
                if index == 0:
                    self.expression(generator.iter)
                else:
                    self._comp_expr(generator.iter, bound)
                bindings = item_bindings(generator.target, generator.iter)
                names = set(bindings)
                for name, direct in bindings.items():
                    roots: set[str] = set()
                    for root in direct:
                        roots |= self.item_roots.get(root, {root})
                    self.item_roots[name] = roots - names
                bound |= names
                for condition in generator.ifs:
                    self._comp_expr(condition, bound)
            parts = [node.key, node.value] if isinstance(node, nodes.DictComp) else [node.elt]
            for part in parts:
                self._comp_expr(part, bound)
        finally:
            self.item_roots = saved
            self.comprehension_names = saved_names
            self.lazy -= lazy

    def _uses_up(self, node: nodes.Name) -> None:
        """Iterating an iterator, or passing it on, takes its items: it changes."""
        if not self.function_mode and node.name in self.state.iterators:
            self.mutate(node.name, node.lineno or 0, f"{node.name} is an iterator: using it "
                                                     "takes its items")

    def _comp_expr(self, node: nodes.NodeNG, bound: set[str]) -> None:
        if isinstance(node, (nodes.Name, nodes.Attribute)) and root_name(node) not in bound:
            self._file_function_value(node)
            self.library_callable_passed(node)
        if isinstance(node, nodes.Name):
            if node.name not in bound:
                self.read(node.name)
                self._uses_up(node)
            return
        if isinstance(node, nodes.NamedExpr):  # := in a comprehension binds outside it
            self._comp_expr(node.value, bound)
            self.depth += 1  # only if the comprehension runs at least once
            try:
                self.target(node.target, node.value)
            finally:
                self.depth -= 1
            return
        if isinstance(node, nodes.Call):
            shadowed = root_name(node.func) in bound
            if not shadowed:
                self.call(node, bound)
                return
            self.handed_callables(node, node.lineno or 0)  # [f(x) for f in fns]: fns called
            if isinstance(node.func, nodes.Name) and not self.function_mode:
                # h() for h in handlers: an item of the collection runs
                for item in sorted(self.item_roots.get(node.func.name, ())):
                    self._run_callable_value(item, node.lineno or 0)
        for child in node.get_children():
            self._comp_expr(child, bound)
