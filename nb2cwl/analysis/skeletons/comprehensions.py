"""Comprehensions (and `map(f, xs)`) whose items can run in other processes."""

from __future__ import annotations

import ast

from astroid import nodes

from nb2cwl.analysis.names import BUILTIN_NAMES, root_name
from nb2cwl.analysis.scalars import scalar_collection
from nb2cwl.analysis.skeletons.checks import (
    check_effects,
    check_shared_results,
    data_reads,
    eager_collections,
    fresh_targets,
    isolated,
    read_by_callees,
    shared_iterators,
    stateful_callees,
)
from nb2cwl.analysis.skeletons.cost import hints_used, scatter_hinted, worth_it
from nb2cwl.analysis.skeletons.model import (
    GATHERED,
    REDUCERS,
    SHORT_CIRCUIT,
    Blocked,
    MapSkeleton,
    Piece,
    Stop,
)
from nb2cwl.analysis.state import NamespaceState
from nb2cwl.analysis.walker import TypeInferrer


def comprehension_in(stmt: nodes.NodeNG, state: NamespaceState
                      ) -> tuple[nodes.NodeNG, str | None] | None:
    """The comprehension the statement's value is (or reduces), with the reducer's name."""
    if isinstance(stmt, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign, nodes.Expr)):
        value = stmt.value
    else:
        return None
    if value is None:
        return None
    if isinstance(value, (nodes.ListComp, nodes.SetComp, nodes.DictComp)):
        return value, None
    if isinstance(value, nodes.Call) and len(value.args) >= 1:
        reducer = qualified_name(value.func, state)
        last = value.args[-1]
        comp_kinds = (nodes.ListComp, nodes.SetComp, nodes.DictComp, nodes.GeneratorExp)
        if isinstance(last, comp_kinds) and reducer:
            return last, reducer
        if reducer in ("list", "tuple", "set", "sum") and _is_map_call(last):
            return last, reducer
    return None  # a bare map(...) is lazy: nothing may run before it is consumed


def _is_map_call(node: nodes.NodeNG) -> bool:
    return (isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name)
            and node.func.name == "map" and len(node.args) == 2 and not node.keywords)


def qualified_name(func: nodes.NodeNG, state: NamespaceState) -> str | None:
    parts: list[str] = []
    while isinstance(func, nodes.Attribute):
        parts.append(func.attrname)
        func = func.expr
    if not isinstance(func, nodes.Name):
        return None
    base = state.imports.get(func.name)
    if base is None:
        return func.name if not parts and func.name in BUILTIN_NAMES else None
    return ".".join([base, *reversed(parts)])


def comprehension(
    stmt: nodes.NodeNG,
    found: tuple[nodes.NodeNG, str | None],
    state: NamespaceState,
    cell_index: int,
    piece: Piece,
    infer: TypeInferrer | None,
) -> MapSkeleton | Blocked | None:
    node, reducer = found
    if reducer is not None and reducer not in REDUCERS:
        if reducer in SHORT_CIRCUIT:
            raise Stop(node.lineno, "short_circuit", f"{reducer}() may stop before the last item")
        return None  # an unknown consumer: it may expect a lazy iterator
    if reducer is not None and any(
            True for a in stmt.value.args[:-1] for _ in a.nodes_of_class(nodes.Call)):
        raise Stop(node.lineno, "reducer_argument",
                   f"an argument of {reducer}() before the loop calls code: it "
                   "runs before the items, and a gather would run it after them")
    if isinstance(node, nodes.Call):  # map(f, xs)
        func, iterable = node.args
        element = f"({func.as_string()})({'__nb2cwl_item__'})"
        targets, iterables, conditions, kind = ("__nb2cwl_item__",), (iterable,), ((),), "list"
        summary = state.functions.get(func.name) if isinstance(func, nodes.Name) else None
        if isinstance(func, nodes.Name) and summary is None and func.name not in (
                BUILTIN_NAMES | set(state.imports)):
            raise Stop(node.lineno, "callable_value",
                       f"{func.name} is a callable value (a closure, partial or "
                       "object): what a call changes cannot be seen")
        if isinstance(func, nodes.Attribute) and root_name(func) not in state.imports:
            raise Stop(node.lineno, "notebook_method",
                       f"{func.as_string()} is a method of a notebook object: "
                       "calls may change that object, which all items share")
        if summary is not None and summary.param_mutations and not scalar_collection(
                iterable, state):  # numbers and strings cannot be changed
            raise Stop(node.lineno, "shared_mutation",
                       f"{func.name}() modifies its argument, an item of the "
                       "collection all iterations share")
        elements = [func]
        target_nodes: tuple[nodes.NodeNG, ...] = ()  # f's own effects are checked above
        form = "map(f, xs)"
    else:
        generators = node.generators
        target_nodes = tuple(g.target for g in generators)
        if len(generators) > 2:
            raise Stop(node.lineno, "unsupported", "more than two nested loops (not supported yet)")
        if any(g.is_async for g in generators):
            raise Stop(node.lineno, "unsupported", "an async comprehension (not supported)")
        targets = tuple(g.target.as_string() for g in generators)
        iterables = tuple(g.iter for g in generators)
        conditions = tuple(tuple(c.as_string() for c in g.ifs) for g in generators)
        if isinstance(node, nodes.DictComp):
            element = f"({node.key.as_string()}, {node.value.as_string()})"
            elements = [node.key, node.value, *(c for g in generators for c in g.ifs)]
            kind = "dict"
        else:
            element = node.elt.as_string()
            elements = [node.elt, *(c for g in generators for c in g.ifs)]
            kind = {nodes.ListComp: "list", nodes.SetComp: "set"}.get(type(node), "iter")
        form = {"list": "list comprehension", "set": "set comprehension",
                "dict": "dict comprehension", "iter": "generator expression"}[kind]
    if kind == "iter" and reducer is None:
        return None
    mapped = isinstance(node, nodes.Call)
    eager_collections(iterables, state, node.lineno)
    method, iterable_sources, targets = collection_method(targets, iterables, node)
    bound = target_names(node)
    shared_iterators(elements, state, node.lineno, bound)
    stateful_callees(elements, state, bound, node.lineno)
    walker = isolated(elements, iterables, state, bound, infer, targets=target_nodes)
    fx = walker.fx
    check_effects(fx, bound, set(), node.lineno, state.types, iterables, state)
    # dict keys are hashable, so in practice immutable: sharing them cannot be observed
    results = [node.value] if isinstance(node, nodes.DictComp) else (
        [node.elt] if not isinstance(node, nodes.Call) else [])
    check_shared_results(results, bound, node.lineno, walker,
                          fresh_targets(target_nodes, iterables))
    forced, gpu = hints_used(elements, piece)
    forced = forced or scatter_hinted(iterables, piece)
    if not forced and not worth_it(elements, state, mapped):
        return None
    gather_statement = replace_span(stmt, node, piece,
                                     f"iter({GATHERED})" if kind == "iter" else GATHERED)
    gather = "\n" * (piece.rel(stmt.fromlineno) - 1) + gather_statement
    suffix = piece.suffix(stmt)
    if suffix:
        gather += "\n" + suffix
    if reducer:
        form = f"{form} reduced by {reducer}()"
    return MapSkeleton(
        cell_index=cell_index,
        line=piece.rel(node.lineno),
        form=form,
        method=method,
        prefix_code=piece.prefix(stmt),
        iterables=iterable_sources,
        targets=targets,
        conditions=conditions,
        element=element,
        result=kind,
        gather_code=gather,
        reads=data_reads((fx.reads - bound) | (bound & read_by_callees(elements, state)),
                          state, cell_index),
        reduction=reducer,
        forced=forced,
        gpu=gpu,
    )


def collection_method(targets: tuple[str, ...], iterables: tuple[nodes.NodeNG, ...],
                      node: nodes.NodeNG) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The CWL scatter method: over one collection, `dotproduct` for a zip of two, or
    `nested_crossproduct` for two nested loops."""
    if len(iterables) == 2:
        outer = _names_in_target(targets[0])
        inner_reads = {n.name for n in iterables[1].nodes_of_class(nodes.Name)}
        if isinstance(iterables[1], nodes.Name):
            inner_reads.add(iterables[1].name)
        if outer & inner_reads:
            raise Stop(node.lineno, "unsupported",
                       "the inner loop's collection depends on the outer item (not supported yet)")
        return "nested_crossproduct", tuple(i.as_string() for i in iterables), targets
    only = iterables[0]
    target = targets[0]
    is_zip = (isinstance(only, nodes.Call) and isinstance(only.func, nodes.Name)
              and only.func.name == "zip" and len(only.args) == 2 and not only.keywords)
    if is_zip:
        parts = _split_tuple_target(target)
        if parts is not None:
            return "dotproduct", tuple(a.as_string() for a in only.args), parts
    return "scatter", (only.as_string(),), (target,)


def _split_tuple_target(target: str) -> tuple[str, str] | None:
    try:
        tree = ast.parse(f"{target} = None").body[0]
    except SyntaxError:
        return None
    node = tree.targets[0]  # type: ignore[attr-defined]
    if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == 2 and not any(
            isinstance(e, ast.Starred) for e in node.elts):
        return ast.unparse(node.elts[0]), ast.unparse(node.elts[1])
    return None


def _names_in_target(target: str) -> set[str]:
    try:
        tree = ast.parse(f"{target} = None")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def target_names(node: nodes.NodeNG) -> set[str]:
    names: set[str] = {"__nb2cwl_item__"}
    for generator in getattr(node, "generators", []):
        names |= {n.name for n in generator.target.nodes_of_class(nodes.AssignName)}
    return names




def replace_span(stmt: nodes.NodeNG, node: nodes.NodeNG, piece: Piece, text: str) -> str:
    """The statement's source with `node`'s span replaced by `text` (line count kept)."""
    lines = piece.lines[piece.rel(stmt.fromlineno) - 1:piece.rel(stmt.tolineno)]
    first = piece.rel(node.lineno) - piece.rel(stmt.fromlineno)
    last = piece.rel(node.end_lineno) - piece.rel(stmt.fromlineno)
    head = lines[first][:node.col_offset]
    tail = lines[last][node.end_col_offset:]
    replaced = head + "(" + text + "\n" * (last - first) + ")" + tail
    return "\n".join([*lines[:first], replaced, *lines[last + 1:]])
