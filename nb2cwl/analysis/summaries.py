"""Summaries of the notebook's functions and classes: what a call does, applied where called.

A function sees the globals as they are when it is called (late binding), so its body is
walked where it is defined and its effects are applied at each call. The summary also says
what a call hands back or keeps: the globals and parameters it may return, the parameters it
stores (in `self` or a global), the parameters it modifies, and for a class whether its
methods change the class itself, which properties run code, and whether iterating an
instance runs the class's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astroid import nodes
from astroid.const import Context

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, FunctionSummary
from nb2cwl.analysis.names import BUILTIN_NAMES, root_name, value_roots
from nb2cwl.analysis.state import NamespaceState

if TYPE_CHECKING:
    from nb2cwl.analysis.walker import EffectWalker

#: Methods that make iterating or indexing an instance run the class's own code.
_ITERATION_METHODS = frozenset({"__iter__", "__next__", "__getitem__"})
_ATTRIBUTE_HOOKS = frozenset({"__getattr__", "__getattribute__"})


def summarize_function(
    node: nodes.FunctionDef | nodes.Lambda,
    state: NamespaceState,
    cell_index: int,
    outer_locals: set[str],
    owner_class: str | None = None,
    outer_params: tuple[str, ...] = (),
) -> FunctionSummary:
    """The call-time effects of a function body on globals and on its parameters.

    `outer_params`: for a function defined in another, the outer one's parameters; a change
    to one of them counts among `param_mutations` (the outer function maps it to its
    caller's argument)."""
    from nb2cwl.analysis.walker import EffectWalker  # the walker summarises nested defs too

    args = node.args
    params: list[str] = []
    if isinstance(args, nodes.Arguments):
        for group in (args.posonlyargs, args.args, args.kwonlyargs):
            params.extend(a.name for a in group or [])
        params.extend(a for a in (args.vararg, args.kwarg) if a)
    declared_global = {n for g in node.nodes_of_class(nodes.Global) for n in g.names
                       if g.scope() is node}
    own_locals = set(node.locals) - declared_global
    local_names = own_locals | outer_locals | set(params)
    seen = [*params, *(p for p in outer_params if p not in own_locals and p not in params)]
    walker = EffectWalker(state, cell_index, None, local_names, tuple(seen))
    walker.owner_class = owner_class
    walker.changing_defaults = _changing_defaults(args, state, cell_index)
    if isinstance(node, nodes.Lambda):
        walker.expression(node.body)
        returned = [node.body]
    else:
        walker.statements(node.body)
        returned = [r.value for r in node.nodes_of_class(nodes.Return)
                    if r.value is not None and r.scope() is node]
    name = getattr(node, "name", "<lambda>")
    decorators = frozenset(
        _decorator_name(d)
        for d in (node.decorators.nodes if getattr(node, "decorators", None) else []))
    generator = isinstance(node, nodes.FunctionDef) and node.is_generator()
    positional, mutable = _defaults(args)
    roots: set[str] = set()
    through: set[tuple[str, str]] = set()
    for value in returned:
        roots |= _returned_roots(value, walker, node, through)
    retained = _retained(node, set(params)) if isinstance(node, nodes.FunctionDef) else set()
    return FunctionSummary(
        name, cell_index, walker.fx, tuple(params), frozenset(walker.param_mutations),
        decorators=decorators, is_generator=generator, positional=positional,
        mutable_defaults=mutable,
        returns=frozenset(r for r in roots if r not in local_names),
        returns_params=frozenset(roots & set(params)), retains=frozenset(retained),
        mutates_class=walker.class_mutated,
        called_params=frozenset(walker.called_params & set(seen)),  # an outer one's too
        called_with=frozenset(walker.called_with),
        seeded_params=frozenset(walker.called_params - walker.unseeded_params),
        returns_through=frozenset((p, r) for p, r in through
                                  if r in params or r not in local_names))


def _returned_roots(value: nodes.NodeNG, walker: EffectWalker,
                    function: nodes.FunctionDef | nodes.Lambda,
                    through: set[tuple[str, str]]) -> set[str]:
    """Names (globals or parameters) whose objects a return statement may hand back: what
    the value holds (through the calls it makes: `Recorder(data)`, `helper(data)`), and the
    outer names a returned closure refers to (`return lambda: len(items)`). What a call of a
    parameter returns (`return metric(y_true, pred)`) goes to `through` as (parameter, name
    handed to it): the caller knows what the parameter is."""
    params = set(walker.params)
    handed: set[tuple[str, str]] = set()

    def call_roots(call: nodes.Call) -> set[str]:
        func = call.func
        if not (isinstance(func, nodes.Name) and func.name in params):
            return walker.call_roots(call)
        for arg in [*call.args, *(k.value for k in call.keywords or ())]:
            arg = arg.value if isinstance(arg, nodes.Starred) else arg
            handed.update((func.name, r) for r in value_roots(arg, call_roots))
        return set()

    def kept(root: str) -> bool:  # as walker.roots_of: a builtin holds nothing of the notebook's
        return root not in BUILTIN_NAMES or root in walker.state.bound or root in walker.locals

    direct = {r for r in value_roots(value, call_roots) if kept(r)} | _closure_roots(
        value, function)
    roots = set()
    for root in direct:
        roots |= walker.local_reach(root)
    through.update((p, t) for p, r in handed if kept(r) for t in walker.local_reach(r))
    return roots


def _closure_roots(value: nodes.NodeNG, function: nodes.FunctionDef | nodes.Lambda,
                   ) -> set[str]:
    """The names of `function`'s own scope that the closures a returned value holds refer
    to: a lambda in it, or a function defined in `function` and returned by name."""
    nested: dict[str, nodes.NodeNG] = {
        d.name: d for d in function.nodes_of_class((nodes.FunctionDef, nodes.AsyncFunctionDef))
        if d is not function and d.parent.scope() is function}
    closures = [*value.nodes_of_class(nodes.Lambda)]
    closures += [nested[n.name] for n in value.nodes_of_class(nodes.Name) if n.name in nested]
    if isinstance(value, nodes.Lambda):
        closures.append(value)
    scope = set(function.locals)
    found: set[str] = set()
    for closure in closures:
        for name in closure.nodes_of_class(nodes.Name):
            if name.name in scope and name.lookup(name.name)[0] is function:
                found.add(name.name)
    return found


def _retained(node: nodes.FunctionDef, params: set[str]) -> set[str]:
    """Parameters the body stores somewhere that outlives the call (`self.data = data`)."""
    kept: set[str] = set()
    for assign in node.nodes_of_class((nodes.Assign, nodes.AugAssign, nodes.AnnAssign)):
        targets = getattr(assign, "targets", None) or [assign.target]
        if not any(isinstance(t, (nodes.AssignAttr, nodes.Subscript)) for t in targets):
            continue
        if assign.value is not None:
            kept |= value_roots(assign.value) & params
    for call in node.nodes_of_class(nodes.Call):  # self.items.append(item)
        func = call.func
        if (isinstance(func, nodes.Attribute) and func.attrname in kb.STORING_METHODS
                and root_name(func.expr) is not None):
            for arg in call.args:
                kept |= value_roots(arg) & params
    return kept - {"self", "cls"}


def default_values(args: nodes.NodeNG) -> dict[str, nodes.NodeNG]:
    """Each parameter with a default value, and that value's expression."""
    if not isinstance(args, nodes.Arguments):
        return {}
    positional = [a.name for a in [*(args.posonlyargs or []), *(args.args or [])]]
    pairs = list(zip(reversed(positional), reversed(args.defaults or []), strict=False))
    pairs += [(a.name, d) for a, d in zip(args.kwonlyargs or [], args.kw_defaults or [],
                                          strict=False) if d is not None]
    return dict(pairs)


def _defaults(args: nodes.NodeNG) -> tuple[tuple[str, ...], frozenset[str]]:
    """(positional parameters, those whose default is a fresh mutable value made once)."""
    if not isinstance(args, nodes.Arguments):
        return (), frozenset()
    positional = [a.name for a in [*(args.posonlyargs or []), *(args.args or [])]]
    pairs = default_values(args).items()
    mutable = frozenset(name for name, default in pairs if isinstance(
        default, (nodes.List, nodes.Dict, nodes.Set, nodes.Call, nodes.ListComp,
                  nodes.DictComp, nodes.SetComp, nodes.Name, nodes.Attribute,
                  nodes.Subscript)))  # an object made once: every call shares it
    return tuple(positional), mutable


def _changing_defaults(args: nodes.NodeNG, state: NamespaceState, cell_index: int,
                       ) -> set[str]:
    """Parameters whose default is a callable that changes what it is given
    (`def apply(x, fn=push)`), read where the function is defined."""
    from nb2cwl.analysis.walker import EffectWalker

    defaults = {n: d for n, d in default_values(args).items() if not isinstance(d, nodes.Const)}
    if not defaults:
        return set()
    outer = EffectWalker(state, cell_index)
    return {name for name, default in defaults.items() if outer.changed_by_calling(default)}


def default_roots(node: nodes.FunctionDef | nodes.Lambda) -> set[str]:
    """Names whose objects a function's default values hold (`def f(x, rng=rng)`): the
    function keeps them alive, and calls may change them."""
    args = node.args
    if not isinstance(args, nodes.Arguments):
        return set()
    found: set[str] = set()
    for default in [*(args.defaults or []), *(d for d in args.kw_defaults or [] if d)]:
        found |= value_roots(default)
    return found


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
    """A class: its body runs now (reads go to `outer`); its methods' effects go with the class.

    Calling the class runs `__init__`: its parameters (without `self`) are the class's.
    """
    effects = Effects()
    methods: set[str] = set()
    init: FunctionSummary | None = None
    mutates_class = False
    attribute_effects: set[str] = set()
    changing_methods: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            methods.add(stmt.name)
            outer._definition_time(stmt)
            summary = summarize_function(stmt, state, cell_index, set(), node.name)
            effects.merge(summary.effects)
            mutates_class = mutates_class or summary.mutates_class
            if stmt.name == "__init__":
                init = summary
            own = set() if "staticmethod" in summary.decorators else set(summary.positional[:1])
            if summary.param_mutations - own:  # obj.clean(row) changes row
                changing_methods.add(stmt.name)
            if "classmethod" in summary.decorators and summary.param_mutations & own:
                mutates_class = True  # cls.registry.append(x)
            changes = summary.param_mutations or summary.effects.mutates
            if changes and (_is_property(stmt) or stmt.name in _ATTRIBUTE_HOOKS):
                attribute_effects.add("*" if stmt.name in _ATTRIBUTE_HOOKS else stmt.name)
        elif isinstance(stmt, nodes.ClassDef):
            inner = summarize_class(stmt, state, cell_index, outer)
            effects.merge(inner.effects)
        else:
            _class_body_statement(stmt, node, outer)
    if mutates_class:
        effects.mutates.add(node.name)
    if init is None:
        return FunctionSummary(node.name, cell_index, effects, (), frozenset(),
                               frozenset(methods), is_class=True, mutates_class=mutates_class,
                               attribute_effects=frozenset(attribute_effects),
                               iterates_code=bool(methods & _ITERATION_METHODS),
                               changing_methods=frozenset(changing_methods))
    drop = set(init.positional[:1])  # self
    return FunctionSummary(
        node.name, cell_index, effects, tuple(p for p in init.param_names if p not in drop),
        init.param_mutations - drop, frozenset(methods), is_class=True,
        positional=init.positional[1:], mutable_defaults=init.mutable_defaults,
        retains=init.retains - drop, mutates_class=mutates_class,
        attribute_effects=frozenset(attribute_effects),
        iterates_code=bool(methods & _ITERATION_METHODS),
        called_params=init.called_params - drop, called_with=init.called_with,
        seeded_params=init.seeded_params - drop,
        changing_methods=frozenset(changing_methods))


def _class_body_statement(stmt: nodes.NodeNG, node: nodes.ClassDef, outer: EffectWalker) -> None:
    """A class-body statement other than a definition runs when the class is defined: its
    calls (files, random draws, the notebook's functions) and the globals it changes are the
    cell's. The class's own names are not globals: they are walked as a comprehension's are.
    Function and lambda bodies under it run later; only their defaults and decorators now."""
    class_locals = set(node.locals)
    line = stmt.lineno or 0

    def visit(part: nodes.NodeNG) -> None:
        if isinstance(part, (nodes.Name, nodes.Call, nodes.NamedExpr)):
            outer._comp_expr(part, class_locals)
        elif isinstance(part, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            outer._definition_time(part)
        elif isinstance(part, nodes.Lambda):
            for default in [*(part.args.defaults or []), *(part.args.kw_defaults or [])]:
                if default is not None:
                    visit(default)
        elif isinstance(part, nodes.ClassDef):  # under an `if`: its body runs now too
            summarize_class(part, outer.state, outer.cell_index, outer)
        elif isinstance(part, (nodes.ListComp, nodes.SetComp, nodes.DictComp,
                               nodes.GeneratorExp)):
            outer.comprehension(part)
        elif isinstance(part, (nodes.AssignName, nodes.DelName)):
            if part.name not in class_locals:  # `global g` in the class body
                outer.write(part.name, None)
        else:
            if isinstance(part, (nodes.AssignAttr, nodes.DelAttr)) or (
                    isinstance(part, nodes.Subscript) and part.ctx != Context.Load):
                root = root_name(part)
                if root is not None and root not in class_locals:
                    outer.mutate(root, line, f"the body of class {node.name} changes {root}")
            for child in part.get_children():
                visit(child)

    saved = outer.comprehension_names
    outer.comprehension_names = saved | class_locals  # their strings are unknown too
    try:
        visit(stmt)
    finally:
        outer.comprehension_names = saved


def _is_property(node: nodes.FunctionDef) -> bool:
    names = {_decorator_name(d) for d in (node.decorators.nodes if node.decorators else [])}
    return bool(names & {"property", "cached_property", "getter"})
