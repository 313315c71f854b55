"""The effect walker: one pass over astroid nodes that records what code does to globals.

The same walker analyses notebook cells (module scope, where every name is global) and
function bodies (where it separates locals from globals and parameters). Function bodies are
summarised where they are defined and their effects applied where they are used, because a
function sees the globals as they are when it is called (late binding). The rules live in
mixins, one concept each: names (name_effects), what a bound value is (bound_values), the
names that may share objects (shared_objects), stores into objects (store_effects),
calls (call_effects), comprehensions (comprehension_effects), libraries and hidden state
(library_effects), magics (magic_effects), files (file_effects) and value types
(value_types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.bound_values import BoundValues
from nb2cwl.analysis.call_effects import CallEffects
from nb2cwl.analysis.callable_items import callable_loop_items
from nb2cwl.analysis.comprehension_effects import ComprehensionEffects
from nb2cwl.analysis.effects import Effects, FunctionSummary
from nb2cwl.analysis.file_effects import FileEffects, looks_like_path
from nb2cwl.analysis.handed_callables import HandedCallables
from nb2cwl.analysis.library_effects import LibraryEffects
from nb2cwl.analysis.magic_effects import MagicEffects
from nb2cwl.analysis.name_effects import NameEffects
from nb2cwl.analysis.names import BUILTIN_NAMES, fresh_items, root_name
from nb2cwl.analysis.scalars import SCALAR, scalar_items
from nb2cwl.analysis.shared_objects import SharedObjects
from nb2cwl.analysis.state import NamespaceState
from nb2cwl.analysis.store_effects import StoreEffects
from nb2cwl.analysis.string_values import changed_in_loop, iteration_values, name_values
from nb2cwl.analysis.summaries import default_roots, summarize_class, summarize_function
from nb2cwl.analysis.value_types import ValueTypes

__all__ = ["BUILTIN_NAMES", "EffectWalker", "TypeInferrer"]
TypeInferrer = Callable[[nodes.NodeNG], "str | None"]


class EffectWalker(NameEffects, SharedObjects, BoundValues, StoreEffects, CallEffects,
                   HandedCallables, ComprehensionEffects, LibraryEffects, MagicEffects,
                   FileEffects, ValueTypes):
    """Walks statements in order and accumulates their Effects."""

    def __init__(
        self,
        state: NamespaceState,
        cell_index: int,
        infer_type: TypeInferrer | None = None,
        local_names: set[str] | None = None,
        param_names: tuple[str, ...] = (),
    ) -> None:
        self.state = state
        self.cell_index = cell_index
        self.statement_line = 0  # the line of the statement walked now
        self.infer_type = infer_type
        self.fx = Effects()
        self.definite: set[str] = set()
        self.depth = 0
        self.function_mode = local_names is not None
        self.locals: set[str] = set(local_names or ())
        self.params = param_names
        self.param_mutations: set[str] = set()
        self.called_params: set[str] = set()  # parameters called or handed on (a summary's)
        self.called_with: set[tuple[str, int, str]] = set()  # what they get, by position
        self.unseeded_params: set[str] = set()  # called (or handed on) with no seed
        self.changing_defaults: set[str] = set()  # parameters defaulting to such a callable
        self.local_functions: dict[str, FunctionSummary] = {}  # defined in the body walked
        self.local_aliases: dict[str, set[str]] = {}
        self.local_item_sharing: dict[str, set[str]] = {}  # d = param.copy()
        self.item_roots: dict[str, set[str]] = {}  # comprehension variable -> its collections
        self.comprehension_names: set[str] = set()  # bound by the comprehensions walked now
        self.declared_globals: set[str] = set()  # `global x` in the function body walked
        self.lazy = 0  # inside a generator expression: its code runs when it is consumed
        self.figure_names: set[str] = set()  # bound to parts of the cell's current figure
        # names that come to share objects are handed on together by the cell (see
        # SharedObjects); not in a loop's per-item code, whose results are checked apart
        self.hands_on = True
        # what the decorators (or a base's __init_subclass__) of a def or class changed
        self.defining_changes: set[str] = set()
        self.owner_class: str | None = None  # the class whose method this body is
        self.class_mutated = False  # the method changes its class's own attributes
        self._applying: set[str] = set()

    # --- statements --------------------------------------------------------------------

    def statements(self, body: Iterable[nodes.NodeNG]) -> None:
        """Walk `body` in order."""
        for stmt in body:
            self.statement(stmt)

    def statement(self, node: nodes.NodeNG) -> None:
        """Walk one statement."""
        self.statement_line = node.lineno or self.statement_line
        handler = getattr(self, "_stmt_" + type(node).__name__, None)
        unseen = len(self.fx.opaque_namespace)
        if handler is not None:
            handler(node)
        else:
            for child in node.get_children():
                if getattr(child, "is_statement", False) and not isinstance(child, nodes.Expr):
                    self._conditional(lambda c=child: self.statement(c))
                else:
                    self.expression(child)
        if len(self.fx.opaque_namespace) > unseen and not self.function_mode:
            self.state.forget_strings()  # exec(), globals(), %run: any global may change

    def finish(self) -> Effects:
        """Close the walk: conditionally bound names pass their old value through."""
        if not self.function_mode:
            self.state.unseen_bindings |= bool(self.fx.opaque_namespace)
            maybe = (self.fx.writes | self.fx.deletes) - self.definite
            self.fx.passes_through |= maybe - self.fx.reads
            self.fx.reads |= maybe
        return self.fx

    def _conditional(self, action: Callable[[], None]) -> None:
        self.depth += 1
        try:
            action()
        finally:
            self.depth -= 1

    def _stmt_Expr(self, node: nodes.Expr) -> None:
        self.expression(node.value)

    def _stmt_Assign(self, node: nodes.Assign) -> None:
        self.expression(node.value)
        for target in node.targets:
            self.target(target, node.value)
        names = [t.name for t in node.targets if isinstance(t, nodes.AssignName)]
        if len(names) > 1 and not self.function_mode:  # `a = b = []`: one object, two names
            for other in names[1:]:
                self.state.link(names[0], other)

    def _stmt_AnnAssign(self, node: nodes.AnnAssign) -> None:
        if node.value is not None:
            self.expression(node.value)
        if not self.function_mode:
            self.expression(node.annotation)
        if node.value is not None or not isinstance(node.target, nodes.AssignName):
            self.target(node.target, node.value)

    def _stmt_AugAssign(self, node: nodes.AugAssign) -> None:
        target = node.target
        if isinstance(target, nodes.AssignName):
            self.read(target.name)
            self.expression(node.value)
            self.mutate(target.name, node.lineno, "augmented assignment")
            self.write(target.name, None)
        else:
            self.expression(node.value)
            self.target(target, None)
            # `groups[0] += [10]`, `w["a"] += 5`: the item itself changes in place too
            self.mutate_expr(target, node.lineno, "augmented assignment to an item")

    def _stmt_Import(self, node: nodes.Import) -> None:
        for name, alias in node.names:
            bound = alias or name.split(".")[0]
            self.write(bound, None)
            if not self.function_mode:
                qualified = name if alias else name.split(".")[0]
                self.state.imports[bound] = qualified
                self._imported(bound, qualified)

    def _stmt_ImportFrom(self, node: nodes.ImportFrom) -> None:
        module = "." * (node.level or 0) + (node.modname or "")
        for name, alias in node.names:
            if name == "*":
                if not self.function_mode:
                    self.state.forget_strings()
                continue
            bound = alias or name
            self.write(bound, None)
            if not self.function_mode:
                self.state.imports[bound] = f"{module}.{name}"
                self._imported(bound, f"{module}.{name}")

    def _imported(self, bound: str, qualified: str) -> None:
        family = kb.family_of(qualified)
        if family:
            self.state.families[bound] = frozenset({family})
        kind = kb.state_object(qualified)
        if kind is not None:  # from matplotlib import rcParams
            self.state.state_objects[bound] = kind

    def _stmt_FunctionDef(self, node: nodes.FunctionDef) -> None:
        registries = set(self.defining_changes)
        self._definition_time(node)
        summary = summarize_function(node, self.state, self.cell_index, self._outer_locals(),
                                     outer_params=self.params)
        self.write(node.name, None)
        if self.function_mode:
            self._nested(summary, node.lineno or 0)
        else:
            self.state.functions[node.name] = summary
            self.registered(self.defining_changes - registries, node.name)
            for held in sorted(default_roots(node) - set(self.state.imports)):
                if held not in self.state.functions:  # def f(x, rng=rng): f keeps rng
                    self.state.link(node.name, held)
                    self._hand_on_group(node.name)

    _stmt_AsyncFunctionDef = _stmt_FunctionDef

    def _stmt_ClassDef(self, node: nodes.ClassDef) -> None:
        self._definition_time(node)
        for base in node.bases:
            before = set(self.fx.mutates)
            self.expression(base)
            summary = self.state.functions.get(base.name) if isinstance(
                base, nodes.Name) else None
            if summary is not None and "__init_subclass__" in summary.methods:
                self.defining_changes |= self.fx.mutates - before  # a registry of subclasses
        for keyword in node.keywords or ():
            self.expression(keyword.value)
        summary = summarize_class(node, self.state, self.cell_index, self)
        families = frozenset().union(*(self.families_of(b) for b in node.bases))
        self.write(node.name, None)
        if not self.function_mode:
            self.state.functions[node.name] = summary
            if families:  # a keras.Model subclass: its instances are Keras objects
                self.state.families[node.name] = families

    def _definition_time(self, node: nodes.FunctionDef | nodes.ClassDef) -> None:
        if node.decorators is not None:
            before = set(self.fx.mutates)
            for decorator in node.decorators.nodes:
                self.expression(decorator)
            if not self.function_mode:  # @register("name"): applying it fills a registry
                self.defining_changes |= self.fx.mutates - before
        args = getattr(node, "args", None)
        if isinstance(args, nodes.Arguments):
            for default in [*(args.defaults or []), *(d for d in args.kw_defaults or [] if d)]:
                self.expression(default)

    def _stmt_For(self, node: nodes.For) -> None:
        self.expression(node.iter)
        bound_before = set(self.state.bound)
        target = node.target.name if isinstance(node.target, nodes.AssignName) else None
        before = name_values(target, self.state) if self.may_be_bound(target) else frozenset()
        if not self.function_mode:  # what later iterations may see (the body is walked once)
            changed_in_loop(node, self.state)

        def body() -> None:
            if fresh_items(node.iter):  # for key, group in df.groupby("k"): new frames
                self.target(node.target, None, iterated=True)
                families = self.families_of(node.iter)
                for name in node.target.nodes_of_class(nodes.AssignName):
                    if not self.function_mode and families:
                        self.state.families[name.name] = families
            else:
                self.target(node.target, node.iter, iterated=True)
            self._scalar_loop_variables(node, bound_before)
            for name in node.target.nodes_of_class(nodes.AssignName):
                self.state.choices.pop(name.name, None)  # an item, not the collection
            items = iteration_values(node.iter, self.state)
            if target is not None and items is not None and before is not None and (
                    not self.function_mode):  # `for i in range(8)`: one of them (or as before)
                self.state.choices[target] = items | before
            self.statements(node.body)
            self.statements(node.orelse)

        self._conditional(body)

    _stmt_AsyncFor = _stmt_For

    def _scalar_loop_variables(self, node: nodes.For, bound_before: set[str]) -> None:
        """`for seed in range(8)`: a number, sharing nothing; `for k, cls in models.items()`:
        a constant key and a library's class (unless the name held something else before)."""
        if self.function_mode:
            return
        callables, keys = callable_loop_items(node.target, node.iter, self.state)
        for name in scalar_items((node.target,), (node.iter,), self.state) | keys:
            if name not in bound_before or self.state.types.get(name) in kb.SCALAR_TYPES:
                self.state.unlink(name)
                self.state.types[name] = SCALAR
        for name, held in callables.items():  # for name, cls in models.items()
            if name not in bound_before:
                self.state.unlink(name)
                self.state.library_callables[name] = held

    def _stmt_While(self, node: nodes.While) -> None:
        if not self.function_mode:
            changed_in_loop(node, self.state)
        self.expression(node.test)
        self._conditional(lambda: (self.statements(node.body), self.statements(node.orelse)))

    def _stmt_If(self, node: nodes.If) -> None:
        self.expression(node.test)
        self._conditional(lambda: (self.statements(node.body), self.statements(node.orelse)))

    def _stmt_Try(self, node: nodes.NodeNG) -> None:
        def body() -> None:
            self.statements(node.body)
            for handler in node.handlers:
                if handler.type is not None:
                    self.expression(handler.type)
                if handler.name is not None:
                    self.target(handler.name, None)
                self.statements(handler.body)
            self.statements(node.orelse)

        self._conditional(body)
        self.statements(node.finalbody)

    _stmt_TryStar = _stmt_Try

    def _stmt_With(self, node: nodes.With) -> None:
        for context, var in node.items:
            self.expression(context)
            if var is not None:
                self.target(var, context)
        self.statements(node.body)

    _stmt_AsyncWith = _stmt_With

    def _stmt_Delete(self, node: nodes.Delete) -> None:
        for target in node.targets:
            if isinstance(target, nodes.DelName):
                self.read(target.name)
                self.delete(target.name)
            elif isinstance(target, nodes.DelAttr):
                self.expression(target.expr)
                self._store_into(target.expr, node.lineno, "del of an attribute", None)
            elif isinstance(target, nodes.Subscript):
                self.expression(target.value)
                self.expression(target.slice)
                self._store_into(target.value, node.lineno, "del of an item", None)
            else:
                self.expression(target)

    def _stmt_Global(self, node: nodes.Global) -> None:
        if self.function_mode:
            self.locals -= set(node.names)
            self.declared_globals |= set(node.names)

    def _stmt_Nonlocal(self, node: nodes.Nonlocal) -> None:
        return

    def _stmt_Match(self, node: nodes.NodeNG) -> None:
        self.expression(node.subject)

        def cases() -> None:
            for case in node.cases:
                for sub in case.pattern.nodes_of_class(nodes.AssignName):
                    self.write(sub.name, None)
                for sub in case.pattern.nodes_of_class(nodes.Name):
                    self.read(sub.name)
                if case.guard is not None:
                    self.expression(case.guard)
                self.statements(case.body)

        self._conditional(cases)

    def _nested(self, summary: FunctionSummary, line: int) -> None:
        """A function defined inside a function may run whenever the outer one has run (it is
        returned, registered, called): its effects count as the outer function's, those on
        the outer function's parameters included (a decorator factory filling a registry)."""
        self.apply_effects(summary.effects, f"call of {summary.name}")
        self.merge_parameter_use(summary)
        self.local_functions[summary.name] = summary

    def _outer_locals(self) -> set[str]:
        return set(self.locals) if self.function_mode else set()

    # --- expressions -------------------------------------------------------------------

    def expression(self, node: nodes.NodeNG | None) -> None:
        """Walk an expression (or anything that is not a statement we sequence)."""
        if node is None:
            return
        if isinstance(node, (nodes.Name, nodes.Attribute)):
            self._file_function_value(node)
            self.library_callable_passed(node)
        if isinstance(node, nodes.Name):
            self.read(node.name)
            self._uses_up(node)
        elif isinstance(node, nodes.Const):
            if isinstance(node.value, str) and looks_like_path(node.value):
                self.fx.literals.add(node.value)
        elif isinstance(node, nodes.Call):
            self.call(node)
        elif isinstance(node, nodes.Lambda):
            for default in node.args.defaults or []:
                self.expression(default)
            summary = summarize_function(node, self.state, self.cell_index, self._outer_locals(),
                                         outer_params=self.params)
            for read in sorted(summary.effects.reads):
                self.read(read)
            for mutated in sorted(summary.effects.mutates):
                self.mutate(mutated, node.lineno, "lambda")
            self.draw(summary.effects.rng)
            if self.function_mode:
                self.merge_parameter_use(summary)
        elif isinstance(node, (nodes.ListComp, nodes.SetComp, nodes.DictComp,
                               nodes.GeneratorExp)):
            self.comprehension(node)
        elif isinstance(node, nodes.NamedExpr):
            self.expression(node.value)
            self.target(node.target, node.value)
        elif isinstance(node, (nodes.FunctionDef, nodes.ClassDef)):
            self.statement(node)
        else:
            if isinstance(node, nodes.Attribute):
                self._attribute_load(node)
            for child in node.get_children():
                self.expression(child)

    def _attribute_load(self, node: nodes.Attribute) -> None:
        """Loading an attribute runs code when a class of the notebook makes it a property
        with effects (or has an effectful __getattr__): the object may change."""
        if self.function_mode:
            return
        root = root_name(node.expr)
        if root is None or root in self.state.imports:
            return
        for name, summary in list(self.state.functions.items()):
            hooks = summary.attribute_effects
            if summary.is_class and (node.attrname in hooks or "*" in hooks):
                self.apply_use(name)
                self.mutate(root, node.lineno or 0, f".{node.attrname} runs a property of "
                                                    f"{name}, which changes the object")
