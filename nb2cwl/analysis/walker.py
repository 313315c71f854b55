"""The effect walker: one pass over astroid nodes that records what code does to globals.

The same walker analyses notebook cells (module scope, where every name is global) and
function bodies (where it separates locals from globals and parameters). Function bodies are
summarised where they are defined and their effects applied where they are used, because a
function sees the globals as they are when it is called (late binding).
"""

from __future__ import annotations

import builtins
import importlib.metadata
from collections.abc import Callable, Iterable

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, FunctionSummary
from nb2cwl.analysis.file_effects import FileEffects, looks_like_path
from nb2cwl.analysis.names import chain_has_call, item_bindings, root_name, value_roots
from nb2cwl.analysis.state import NamespaceState
from nb2cwl.analysis.value_types import CONTAINERS_OF_KNOWN, ValueTypes


def _pandas_major() -> int:
    try:
        return int(importlib.metadata.version("pandas").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return 0


#: From pandas 3 on, copy-on-write is always on: a column or slice is never a view.
_PANDAS_COPIES_ON_WRITE = _pandas_major() >= 3

BUILTIN_NAMES = frozenset(dir(builtins)) | {"get_ipython", "display", "__name__", "__file__"}
TypeInferrer = Callable[[nodes.NodeNG], "str | None"]

class EffectWalker(FileEffects, ValueTypes):
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
        self.infer_type = infer_type
        self.fx = Effects()
        self.definite: set[str] = set()
        self.depth = 0
        self.function_mode = local_names is not None
        self.locals: set[str] = set(local_names or ())
        self.params = param_names
        self.param_mutations: set[str] = set()
        self.local_aliases: dict[str, set[str]] = {}
        self.item_roots: dict[str, set[str]] = {}  # comprehension variable -> its collections
        self._applying: set[str] = set()

    # --- statements --------------------------------------------------------------------

    def statements(self, body: Iterable[nodes.NodeNG]) -> None:
        """Walk `body` in order."""
        for stmt in body:
            self.statement(stmt)

    def statement(self, node: nodes.NodeNG) -> None:
        """Walk one statement."""
        handler = getattr(self, "_stmt_" + type(node).__name__, None)
        if handler is not None:
            handler(node)
        else:
            for child in node.get_children():
                if getattr(child, "is_statement", False) and not isinstance(child, nodes.Expr):
                    self._conditional(lambda c=child: self.statement(c))
                else:
                    self.expression(child)

    def finish(self) -> Effects:
        """Close the walk: conditionally bound names pass their old value through."""
        if not self.function_mode:
            maybe = (self.fx.writes | self.fx.deletes) - self.definite
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

    def _stmt_Import(self, node: nodes.Import) -> None:
        for name, alias in node.names:
            bound = alias or name.split(".")[0]
            self.write(bound, None)
            if not self.function_mode:
                self.state.imports[bound] = name if alias else name.split(".")[0]

    def _stmt_ImportFrom(self, node: nodes.ImportFrom) -> None:
        module = "." * (node.level or 0) + (node.modname or "")
        for name, alias in node.names:
            if name == "*":
                continue
            bound = alias or name
            self.write(bound, None)
            if not self.function_mode:
                self.state.imports[bound] = f"{module}.{name}"

    def _stmt_FunctionDef(self, node: nodes.FunctionDef) -> None:
        self._definition_time(node)
        summary = summarize_function(node, self.state, self.cell_index, self._outer_locals())
        self.write(node.name, None)
        if not self.function_mode:
            self.state.functions[node.name] = summary

    _stmt_AsyncFunctionDef = _stmt_FunctionDef

    def _stmt_ClassDef(self, node: nodes.ClassDef) -> None:
        self._definition_time(node)
        for base in node.bases:
            self.expression(base)
        for keyword in node.keywords or ():
            self.expression(keyword.value)
        summary = summarize_class(node, self.state, self.cell_index, self)
        self.write(node.name, None)
        if not self.function_mode:
            self.state.functions[node.name] = summary

    def _definition_time(self, node: nodes.FunctionDef | nodes.ClassDef) -> None:
        if node.decorators is not None:
            for decorator in node.decorators.nodes:
                self.expression(decorator)
        args = getattr(node, "args", None)
        if isinstance(args, nodes.Arguments):
            for default in [*(args.defaults or []), *(d for d in args.kw_defaults or [] if d)]:
                self.expression(default)

    def _stmt_For(self, node: nodes.For) -> None:
        self.expression(node.iter)

        def body() -> None:
            self.target(node.target, node.iter)
            self.statements(node.body)
            self.statements(node.orelse)

        self._conditional(body)

    _stmt_AsyncFor = _stmt_For

    def _stmt_While(self, node: nodes.While) -> None:
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
                self.mutate_expr(target.expr, node.lineno, "del of an attribute")
            elif isinstance(target, nodes.Subscript):
                self.expression(target.value)
                self.expression(target.slice)
                self.mutate_expr(target.value, node.lineno, "del of an item")
            else:
                self.expression(target)

    def _stmt_Global(self, node: nodes.Global) -> None:
        if self.function_mode:
            self.locals -= set(node.names)

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

    # --- targets -----------------------------------------------------------------------

    def target(self, node: nodes.NodeNG, value: nodes.NodeNG | None) -> None:
        """Bind an assignment target to `value` (None when unknown)."""
        if isinstance(node, nodes.AssignName):
            self.write(node.name, value)
        elif isinstance(node, (nodes.Tuple, nodes.List)):
            for element in node.elts:
                self.target(element, value)
        elif isinstance(node, nodes.Starred):
            self.target(node.value, value)
        elif isinstance(node, nodes.AssignAttr):
            if root_name(node.expr) in self.state.imports and not (
                    self.function_mode and root_name(node.expr) in self.locals):
                self.fx.module_state.add(f"{node.expr.as_string()}.{node.attrname}")
            if root_name(node.expr) in self.state.imports and not self.function_mode:
                self.fx.opaque_namespace.append((node.lineno, "an attribute store on a module "
                                                              "changes state no step can pass on"))
            self.expression(node.expr)
            self.mutate_expr(node.expr, node.lineno, f"attribute store .{node.attrname}")
            self._link_value(node.expr, value)
        elif isinstance(node, nodes.Subscript):
            root = root_name(node.value)
            if root in self.state.imports and not (self.function_mode and root in self.locals):
                self.fx.module_state.add(node.value.as_string())  # os.environ[k] = v
            self.expression(node.value)
            self.expression(node.slice)
            self.mutate_expr(node.value, node.lineno, "item store")
            self._link_value(node.value, value)
        else:
            self.expression(node)

    def _link_value(self, container: nodes.NodeNG, value: nodes.NodeNG | None) -> None:
        # storing x into obj makes obj contain x: later mutation of either shows in both
        root = root_name(container)
        if root and value is not None and not self.function_mode:
            for other in value_roots(value):
                if other != root and other not in self.state.imports:
                    self.state.link(root, other)
            self._hand_on_group(root)

    # --- names -------------------------------------------------------------------------

    def read(self, name: str) -> None:
        """A load of `name`."""
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
                for other in value_roots(value) if value is not None else ():
                    self.local_aliases.setdefault(name, set()).add(other)
            else:
                self.fx.writes.add(name)
            return
        self.fx.writes.add(name)
        self.fx.deletes.discard(name)
        state = self.state
        state.definitions.pop(name, None)
        state.const_strings.pop(name, None)
        state.types.pop(name, None)
        if self.depth > 0:
            # may or may not happen: keep what was known of the old value (aliases, function
            # effects) and learn nothing certain about the new one
            for other in value_roots(value) if value is not None else ():
                if other != name and other not in state.imports:
                    state.link(name, other)
            self._hand_on_group(name)
            if isinstance(value, nodes.Lambda):
                self._merge_function(name, value)
            return
        self.definite.add(name)
        state.unlink(name)
        state.forget(name)
        if value is None:
            return
        if isinstance(value, nodes.Const) and isinstance(value.value, str):
            state.const_strings[name] = value.value
        known = self.syntactic_type(value)
        if known:
            state.types[name] = known
        if self._immutable_items(value):
            state.immutable_items.add(name)
        if self._one_pass(value):
            state.iterators.add(name)
        if isinstance(value, nodes.Lambda):
            state.functions[name] = summarize_function(value, state, self.cell_index, set())
        for other in value_roots(value):
            if (other != name and other not in state.imports and other not in state.functions
                    and self._shares(value, other)):
                state.link(name, other)
        self._hand_on_group(name)

    def _shares(self, value: nodes.NodeNG, other: str) -> bool:
        """Whether the value may hold `other`'s object (not just something made from it)."""
        if isinstance(value, (nodes.Name, nodes.List, nodes.Tuple, nodes.Set, nodes.Dict,
                              nodes.IfExp, nodes.Starred)):
            return True  # the very same object, or a container holding it
        known = self.state.types.get(other)
        if known in kb.IMMUTABLE_TYPES:
            return False  # nothing in it can change
        if other in self.state.immutable_items:
            return False  # its items are numbers or strings: sharing them changes nothing
        # pandas 3 copies on write: what is derived from a frame never changes the frame
        return not (known in ("pandas.DataFrame", "pandas.Series") and _PANDAS_COPIES_ON_WRITE)

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
        """A collection whose items are all numbers or strings: range(...), [1, 'a'], ..."""
        if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
            return all(isinstance(e, nodes.Const) for e in value.elts)
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
            if member not in self.definite:
                self.fx.reads.add(member)
            self.fx.mutates.add(member)
            if member != name:
                self.fx.notes.append((line, f"a change to {name} also changes {member}, which "
                                            "shares its object"))

    def mutate_expr(self, node: nodes.NodeNG, line: int, why: str) -> None:
        """Mutation of the object an expression such as `a.b[0]` reaches from its root name."""
        root = root_name(node)
        if root is not None:
            self.mutate(root, line, why)

    def apply_use(self, name: str) -> None:
        """A use of a user function or class: its body's effects happen here (late binding)."""
        summary = self.state.functions.get(name)
        if summary is None or name in self._applying:
            return
        self._applying.add(name)
        try:
            fx = summary.effects
            for read in sorted(fx.reads):
                self.read(read)
            for written in sorted(fx.writes):
                self.fx.writes.add(written)
                self.fx.reads.add(written)  # conditionally rebound inside the function
            for mutated in sorted(fx.mutates):
                self.mutate(mutated, 0, f"call of {name}")
            self.fx.rng |= fx.rng
            self.fx.module_state |= fx.module_state
            self.fx.literals |= fx.literals
            self.fx.file_reads |= fx.file_reads
            self.fx.file_writes |= fx.file_writes
            self.fx.opaque_io.extend(fx.opaque_io)
            self.fx.opaque_reads.extend(fx.opaque_reads)
            self.fx.opaque_namespace.extend(fx.opaque_namespace)
        finally:
            self._applying.discard(name)

    def _outer_locals(self) -> set[str]:
        return set(self.locals) if self.function_mode else set()

    # --- expressions -------------------------------------------------------------------

    def expression(self, node: nodes.NodeNG | None) -> None:
        """Walk an expression (or anything that is not a statement we sequence)."""
        if node is None:
            return
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
            summary = summarize_function(node, self.state, self.cell_index, self._outer_locals())
            for read in sorted(summary.effects.reads):
                self.read(read)
            for mutated in sorted(summary.effects.mutates):
                self.mutate(mutated, node.lineno, "lambda")
            self.fx.rng |= summary.effects.rng
        elif isinstance(node, (nodes.ListComp, nodes.SetComp, nodes.DictComp,
                               nodes.GeneratorExp)):
            self.comprehension(node)
        elif isinstance(node, nodes.NamedExpr):
            self.expression(node.value)
            self.target(node.target, node.value)
        elif isinstance(node, (nodes.FunctionDef, nodes.ClassDef)):
            self.statement(node)
        else:
            for child in node.get_children():
                self.expression(child)

    def comprehension(self, node: nodes.NodeNG) -> None:
        """A comprehension: its targets are local to it; everything else is read.

        Its variables refer to items of the collections: modifying one modifies those.
        """
        bound: set[str] = set()
        saved = dict(self.item_roots)
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

    def _uses_up(self, node: nodes.Name) -> None:
        """Iterating an iterator, or passing it on, takes its items: it changes."""
        if not self.function_mode and node.name in self.state.iterators:
            self.mutate(node.name, node.lineno or 0, f"{node.name} is an iterator: using it "
                                                     "takes its items")

    def _comp_expr(self, node: nodes.NodeNG, bound: set[str]) -> None:
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
        for child in node.get_children():
            self._comp_expr(child, bound)

    # --- calls -------------------------------------------------------------------------

    def call(self, node: nodes.Call, bound: set[str] | None = None) -> None:
        """A call: reads, then what the callee is known to do."""
        sub = (lambda n: self._comp_expr(n, bound)) if bound else self.expression
        func = node.func
        sub(func.expr if isinstance(func, nodes.Attribute) else func)
        for arg in node.args:
            sub(arg)
        for keyword in node.keywords or ():
            sub(keyword.value)
        qualified = self.qualify(func)
        line = node.lineno or 0
        self._opaque_namespace(node, qualified, line)
        self._hidden_rng(qualified)
        self._files(node, qualified, line)
        if qualified in kb.MUTATING_FUNCTIONS:
            for position in kb.MUTATING_FUNCTIONS[qualified]:
                if position < len(node.args):
                    self.mutate_expr(node.args[position], line, f"{qualified}()")
        if qualified in kb.MODULE_STATE_SETTERS:
            self.fx.module_state.add(qualified)
        if qualified == "next" and node.args and isinstance(node.args[0], nodes.Name):
            self.mutate_expr(node.args[0], line, "next() advances the iterator")
        if qualified and qualified.startswith("numpy.") and qualified.endswith(".at") and (
                node.args):  # np.add.at(a, i, 1) changes a in place
            self.mutate_expr(node.args[0], line, f"{qualified}()")
        for keyword in node.keywords or ():
            if keyword.arg == "out":  # numpy's out=: the result is written into that array
                self.mutate_expr(keyword.value, line, f"out= of {qualified or 'a call'}")
            elif keyword.arg == "file" and qualified == "print":
                self.mutate_expr(keyword.value, line, "print(file=...) writes to it")
        if isinstance(func, nodes.Name):
            self._user_call(func.name, node, line)
        elif isinstance(func, nodes.Attribute):
            self._method_call(node, func, line)

    def _opaque_namespace(self, node: nodes.Call, qualified: str | None, line: int) -> None:
        if qualified in ("exec", "eval", "globals", "locals") or (
                qualified == "vars" and not node.args):
            self.fx.opaque_namespace.append((line, f"{qualified}() reads or writes variables "
                                                   "the analysis cannot see"))
        elif (qualified in ("setattr", "delattr") and node.args
              and root_name(node.args[0]) in self.state.imports):
            self.fx.opaque_namespace.append((line, f"{qualified}() on a module changes state "
                                                   "no step can pass on"))

    def _user_call(self, name: str, node: nodes.Call, line: int) -> None:
        if self.function_mode and name in self.locals:
            return
        summary = self.state.functions.get(name)
        if summary is None:
            unknown = (self.function_mode and name not in BUILTIN_NAMES
                       and name not in self.state.imports)
            if unknown:  # a global callable not known yet (defined later): assume the worst
                for arg in [*node.args, *(k.value for k in node.keywords or ())]:
                    self.mutate_expr(arg, line, f"{name}() may modify its argument")
            return
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

    def _method_call(self, node: nodes.Call, func: nodes.Attribute, line: int) -> None:
        receiver = func.expr
        root = root_name(receiver)
        if root is None:
            return
        if root in self.state.imports and not self.function_mode:
            return  # a module's function, not a method of a notebook value
        method = func.attrname
        inplace = any(
            k.arg == "inplace" and not (isinstance(k.value, nodes.Const) and not k.value.value)
            for k in node.keywords or ()
        )
        if method in kb.MUTATING_METHODS or inplace:
            self.mutate(root, line, f".{method}()")
            return
        if chain_has_call(receiver):
            return
        self._apply_methods_named(method)
        if self.function_mode:
            self.mutate(root, line, f".{method}() on a value of unknown type")
            return
        kind = self.type_of(receiver)
        element = kind is None and not isinstance(receiver, nodes.Name)
        if element and self.state.types.get(root) in CONTAINERS_OF_KNOWN:
            kind = "numpy.ndarray"  # an element or column of an array or frame is one too
        if method in kb.TYPE_MUTATING_METHODS.get(kind or "", ()):
            self.mutate(root, line, f".{method}()")
            return
        if kind is not None and (kind in kb.KNOWN_TYPES or kind in kb.IMMUTABLE_TYPES):
            return
        if kind == "module":
            return
        self.mutate(root, line, f".{method}() on {root}, whose type is not known, may modify it")
        self.fx.notes.append(
            (line, f"{root}.{method}() counted as a possible mutation of {root} "
                   "(type not inferred)")
        )

    def _apply_methods_named(self, method: str) -> None:
        for name, summary in list(self.state.functions.items()):
            if summary.is_class and method in summary.methods:
                self.apply_use(name)

    def qualify(self, func: nodes.NodeNG) -> str | None:
        """The dotted name a callee resolves to through imports (`np.save` -> numpy.save)."""
        parts: list[str] = []
        node = func
        while isinstance(node, nodes.Attribute):
            parts.append(node.attrname)
            node = node.expr
        if not isinstance(node, nodes.Name):
            return None
        base = self.state.imports.get(node.name)
        if base is None:
            if parts or node.name in self.state.functions:
                return None
            return node.name if node.name in BUILTIN_NAMES else None
        return ".".join([base, *reversed(parts)])

    # --- hidden state and files --------------------------------------------------------

    def _hidden_rng(self, qualified: str | None) -> None:
        if not qualified:
            return
        module, _, attr = qualified.rpartition(".")
        if module in kb.RNG_STATE and attr not in kb.RNG_SAFE[module]:
            self.fx.rng.add(kb.RNG_STATE[module])

def summarize_function(
    node: nodes.FunctionDef | nodes.Lambda,
    state: NamespaceState,
    cell_index: int,
    outer_locals: set[str],
) -> FunctionSummary:
    """The call-time effects of a function body on globals and on its parameters."""
    args = node.args
    params: list[str] = []
    if isinstance(args, nodes.Arguments):
        for group in (args.posonlyargs, args.args, args.kwonlyargs):
            params.extend(a.name for a in group or [])
        params.extend(a for a in (args.vararg, args.kwarg) if a)
    declared_global = {n for g in node.nodes_of_class(nodes.Global) for n in g.names
                       if g.scope() is node}
    local_names = (set(node.locals) - declared_global) | outer_locals | set(params)
    walker = EffectWalker(state, cell_index, None, local_names, tuple(params))
    if isinstance(node, nodes.Lambda):
        walker.expression(node.body)
    else:
        walker.statements(node.body)
    name = getattr(node, "name", "<lambda>")
    decorators = frozenset(
        _decorator_name(d)
        for d in (node.decorators.nodes if getattr(node, "decorators", None) else []))
    generator = isinstance(node, nodes.FunctionDef) and node.is_generator()
    positional, mutable = _defaults(args)
    return FunctionSummary(name, cell_index, walker.fx, tuple(params),
                           frozenset(walker.param_mutations), decorators=decorators,
                           is_generator=generator, positional=positional,
                           mutable_defaults=mutable)


def _defaults(args: nodes.NodeNG) -> tuple[tuple[str, ...], frozenset[str]]:
    """(positional parameters, those whose default is a fresh mutable value made once)."""
    if not isinstance(args, nodes.Arguments):
        return (), frozenset()
    positional = [a.name for a in [*(args.posonlyargs or []), *(args.args or [])]]
    pairs = list(zip(reversed(positional), reversed(args.defaults or []), strict=False))
    pairs += [(a.name, d) for a, d in zip(args.kwonlyargs or [], args.kw_defaults or [],
                                          strict=False) if d is not None]
    mutable = frozenset(name for name, default in pairs if isinstance(
        default, (nodes.List, nodes.Dict, nodes.Set, nodes.Call, nodes.ListComp,
                  nodes.DictComp, nodes.SetComp)))
    return tuple(positional), mutable


def _decorator_name(decorator: nodes.NodeNG) -> str:
    """`functools.lru_cache(maxsize=None)` -> "lru_cache"."""
    if isinstance(decorator, nodes.Call):
        decorator = decorator.func
    if isinstance(decorator, nodes.Attribute):
        return decorator.attrname
    return getattr(decorator, "name", "")


def summarize_class(
    node: nodes.ClassDef, state: NamespaceState, cell_index: int, outer: EffectWalker
) -> FunctionSummary:
    """A class: its body runs now (reads go to `outer`); its methods' effects go with the class."""
    effects = Effects()
    methods: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            methods.add(stmt.name)
            outer._definition_time(stmt)
            summary = summarize_function(stmt, state, cell_index, set())
            effects.merge(summary.effects)
        elif isinstance(stmt, nodes.ClassDef):
            inner = summarize_class(stmt, state, cell_index, outer)
            effects.merge(inner.effects)
        else:
            class_locals = set(node.locals)
            for name_node in stmt.nodes_of_class(nodes.Name):
                if name_node.name not in class_locals:
                    outer.read(name_node.name)
    return FunctionSummary(node.name, cell_index, effects, (), frozenset(),
                           frozenset(methods), is_class=True)


