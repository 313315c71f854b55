"""`for` loops that accumulate (`ys.append(v)`, `total += v`, `out[k] = v`), and the
rewrite of their body that records accumulations for the gather to replay in order."""

from __future__ import annotations

import ast

from astroid import nodes
from astroid.const import Context

from nb2cwl.analysis.skeletons.checks import (
    accumulator_partners,
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
from nb2cwl.analysis.skeletons.comprehensions import collection_method
from nb2cwl.analysis.skeletons.cost import hints_used, scatter_hinted, worth_it
from nb2cwl.analysis.skeletons.loop_body import recording_body, recording_body_at_lines
from nb2cwl.analysis.skeletons.model import (
    ACCUMULATING_METHODS,
    Blocked,
    MapSkeleton,
    Piece,
    Stop,
)
from nb2cwl.analysis.state import NamespaceState
from nb2cwl.analysis.walker import TypeInferrer


def loop(stmt: nodes.For, state: NamespaceState, cell_index: int, piece: Piece,
          infer: TypeInferrer | None) -> MapSkeleton | Blocked | None:
    if stmt.orelse:
        raise Stop(stmt.lineno, "unsupported", "the loop has an else clause (not supported yet)")
    if isinstance(stmt, nodes.AsyncFor):
        raise Stop(stmt.lineno, "unsupported", "an async for loop (not supported)")
    targets = [stmt.target.as_string()]
    target_nodes = [stmt.target]
    iterables: list[nodes.NodeNG] = [stmt.iter]
    body = list(stmt.body)
    bound = {n.name for n in stmt.target.nodes_of_class(nodes.AssignName)}
    inner = body[0] if len(body) == 1 and isinstance(body[0], nodes.For) else None
    if inner is not None and not inner.orelse:
        inner_reads = {n.name for n in inner.iter.nodes_of_class(nodes.Name)}
        if isinstance(inner.iter, nodes.Name):
            inner_reads.add(inner.iter.name)
        if not bound & inner_reads:
            targets.append(inner.target.as_string())
            target_nodes.append(inner.target)
            iterables.append(inner.iter)
            bound |= {n.name for n in inner.target.nodes_of_class(nodes.AssignName)}
            body = list(inner.body)
    _no_early_exit(body)
    accumulators = _accumulators(body, bound)
    if not accumulators and not worth_it(body, state):
        return None  # nothing gathered, little work: a loop run for its effects stays as is
    eager_collections(tuple(iterables), state, stmt.lineno)
    locals_ = _assigned(body) - set(accumulators)
    for iterable in iterables:
        used = {n.name for n in [iterable, *iterable.nodes_of_class(nodes.Name)]
                if isinstance(n, nodes.Name)} & set(accumulators)
        if used:
            raise Stop(iterable.lineno or stmt.lineno, "collection_grows",
                       f"the loop's collection reads "
                       f"{sorted(used)[0]}, which the iterations add to")
    shared_iterators(body, state, stmt.lineno, bound | locals_)
    stateful_callees(body, state, bound | locals_, stmt.lineno)
    walker = isolated(body, tuple(iterables), state, bound, infer, statements=True,
                       targets=tuple(target_nodes), accumulators=frozenset(accumulators))
    fx = walker.fx
    partners = accumulator_partners(set(accumulators), state)
    seen = sorted((fx.reads | read_by_callees(body, state)) & set(partners))
    if seen:
        raise Stop(stmt.lineno, "accumulator_read",
                   f"the loop reads {seen[0]}, which shares its object with "
                   f"{partners[seen[0]]}, which earlier iterations change")
    carried = (fx.reads & locals_) - bound
    if carried:
        name = sorted(carried)[0]
        raise Stop(_first_load(body, name) or stmt.lineno, "loop_carried",
                    f"{name} is written in one iteration and read in a later one")
    backs = read_backs(body, accumulators, state)
    for name in accumulators:
        line = _other_use(body, name, backs.get(name, set()))
        if line:
            raise Stop(line, "accumulator_read",
                       f"the loop reads {name}, which earlier iterations change")
    indirect = sorted(set(accumulators) & read_by_callees(body, state))
    if indirect:
        raise Stop(stmt.lineno, "accumulator_read",
                   f"a function the loop calls reads {indirect[0]}, which "
                   "earlier iterations change")
    check_effects(fx, bound | locals_, set(accumulators), stmt.lineno, state.types,
                  tuple(iterables), state)
    check_shared_results(accumulated_values(body, set(accumulators)), bound, stmt.lineno,
                          walker, locals_ | fresh_targets(tuple(target_nodes),
                                                          tuple(iterables)))
    keep = tuple(sorted((locals_ | bound) & _names_loaded(piece.suffix(stmt))))
    forced, gpu = hints_used(body, piece)
    forced = forced or scatter_hinted(tuple(iterables), piece)
    if not forced and not worth_it(body, state):
        return None
    method = "nested_crossproduct" if len(iterables) == 2 else "scatter"
    iterable_sources = tuple(i.as_string() for i in iterables)
    if len(iterables) == 1:
        method, iterable_sources, target_tuple = collection_method(
            tuple(targets), tuple(iterables), stmt)
        targets = list(target_tuple)
    gather = "\n" * (piece.rel(stmt.tolineno)) + piece.suffix(stmt)
    header = inner if len(iterables) == 2 and inner is not None else stmt  # the body's loop
    at_lines = recording_body_at_lines(body, header.lineno, set(accumulators), piece,
                                       set(backs))
    return MapSkeleton(
        cell_index=cell_index,
        line=piece.rel(stmt.lineno),
        form=(f"for loop accumulating into {', '.join(accumulators)}" if accumulators
              else "for loop whose items only print or show"),
        method=method,
        prefix_code=piece.prefix(stmt),
        iterables=iterable_sources,
        targets=tuple(targets),
        body=at_lines or recording_body(body, set(accumulators), set(backs)),
        body_at_lines=at_lines is not None,
        accumulators=tuple(accumulators),
        gather_code=gather,
        reads=data_reads(fx.reads - bound - set(accumulators), state, cell_index),
        loop_locals=tuple(sorted(locals_ | bound)),
        keep_locals=keep,
        forced=forced,
        gpu=gpu,
    )


def _no_early_exit(body: list[nodes.NodeNG]) -> None:
    for stmt in body:
        for node in walk_same_scope(stmt):
            if isinstance(node, (nodes.Break, nodes.Return)):
                word = "break" if isinstance(node, nodes.Break) else "return"
                raise Stop(node.lineno, "early_exit", f"{word} ends the loop early")
            if isinstance(node, (nodes.Yield, nodes.YieldFrom, nodes.Await)):
                raise Stop(node.lineno, "unsupported",
                           "yield or await inside the loop (not supported)")
            if isinstance(node, (nodes.Global, nodes.Nonlocal)):
                raise Stop(node.lineno, "global_rebind",
                           "global or nonlocal inside the loop: an iteration rebinds a global")


def walk_same_scope(node: nodes.NodeNG):
    yield node
    for child in node.get_children():
        if isinstance(child, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda,
                              nodes.ClassDef)):
            continue
        if isinstance(child, nodes.For) and isinstance(node, nodes.For):
            # a break inside an inner loop only ends that loop
            yield child
            for inner in child.get_children():
                if not isinstance(inner, nodes.Break):
                    yield from walk_same_scope(inner)
            continue
        yield from walk_same_scope(child)


def _accumulators(body: list[nodes.NodeNG], bound: set[str]) -> list[str]:
    """Names the loop only accumulates into: acc.append(v), acc[k] = v, acc += v, ..."""
    assigned = _assigned(body)
    found: list[str] = []
    for stmt in body:
        for node in walk_same_scope(stmt):
            name = accumulation_target(node)
            if name and name not in bound and name not in found and (
                    name not in assigned or _only_augmented(body, name)):
                found.append(name)
    return found


def accumulation_target(node: nodes.NodeNG) -> str | None:
    if isinstance(node, nodes.Expr) and isinstance(node.value, nodes.Call):
        func = node.value.func
        if (isinstance(func, nodes.Attribute) and func.attrname in ACCUMULATING_METHODS
                and isinstance(func.expr, nodes.Name) and not node.value.keywords
                and not any(isinstance(a, nodes.Starred) for a in node.value.args)):
            return func.expr.name
    if isinstance(node, nodes.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        if isinstance(target, nodes.Subscript) and isinstance(target.value, nodes.Name):
            return target.value.name
    if isinstance(node, nodes.AugAssign):
        target = node.target
        if isinstance(target, nodes.AssignName):
            return target.name
        if isinstance(target, nodes.Subscript) and isinstance(target.value, nodes.Name):
            return target.value.name
    return None


def _only_augmented(body: list[nodes.NodeNG], name: str) -> bool:
    for stmt in body:
        for node in walk_same_scope(stmt):
            if isinstance(node, nodes.AssignName) and node.name == name and not isinstance(
                    node.parent, nodes.AugAssign):
                return False
    return True


def _assigned(body: list[nodes.NodeNG]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        for node in walk_same_scope(stmt):
            if isinstance(node, nodes.AssignName):
                names.add(node.name)
    return names


#: Types whose last appended item is `[-1]`, and whose item stored at a key is `[key]`.
_APPENDED_LAST = frozenset({"builtins.list", "collections.deque"})
_STORED_AT_KEY = frozenset({"builtins.dict", "collections.OrderedDict",
                            "collections.defaultdict"})


def read_backs(body: list[nodes.NodeNG], accumulators: list[str],
               state: NamespaceState) -> dict[str, set[int]]:
    """Reads of what the same iteration has just added: `xs.append(v)` then `xs[-1]`, or
    `d[k] = v` then `d[k]` (a k-fold loop printing each fold's score). They see this
    iteration's value, whatever the other iterations did, so they block nothing; the per-item
    code reads the recorded value instead. Only where the one accumulation into the name is
    unconditional, at the top of the body, and before the reads, with the key not rebound.
    Returns, per accumulator, the ids of the names read so."""
    found: dict[str, set[int]] = {}
    for name in accumulators:
        writes = [node for stmt in body for node in walk_same_scope(stmt)
                  if accumulation_target(node) == name]
        if len(writes) != 1 or not any(writes[0] is stmt for stmt in body):
            continue
        write = writes[0]
        position = next(i for i, stmt in enumerate(body) if stmt is write)
        kind = state.types.get(name)
        if isinstance(write, nodes.Expr) and kind in _APPENDED_LAST and (
                write.value.func.attrname == "append"):
            key = "-1"
        elif isinstance(write, nodes.Assign) and kind in _STORED_AT_KEY:
            index = write.targets[0].slice
            used = {n.name for n in index.nodes_of_class(nodes.Name)}
            if isinstance(index, nodes.Name):
                used.add(index.name)
            if used & _assigned(body[position:]) or not isinstance(index, (
                    nodes.Name, nodes.Const, nodes.Tuple)):
                continue
            key = index.as_string()
        else:
            continue
        ids = {id(node.value) for stmt in body[position + 1:] for node in walk_same_scope(stmt)
               if isinstance(node, nodes.Subscript) and isinstance(node.value, nodes.Name)
               and node.value.name == name and node.ctx == Context.Load
               and node.slice.as_string() == key}
        if ids:
            found[name] = ids
    return found


def _other_use(body: list[nodes.NodeNG], name: str,
               read_back: set[int] | frozenset[int] = frozenset()) -> int | None:
    """A line where the loop reads `name` other than to accumulate into it (or to read back
    what the same iteration added, `read_back`)."""
    allowed: set[int] = set(read_back)
    for stmt in body:
        for node in walk_same_scope(stmt):
            if accumulation_target(node) == name:
                receiver = _receiver(node)
                if receiver is not None:
                    allowed.add(id(receiver))
    for stmt in body:
        for node in walk_same_scope(stmt):
            if isinstance(node, nodes.Name) and node.name == name and id(node) not in allowed:
                return node.lineno
    return None


def _receiver(node: nodes.NodeNG) -> nodes.NodeNG | None:
    if isinstance(node, nodes.Expr):
        return node.value.func.expr
    if isinstance(node, nodes.Assign):
        return node.targets[0].value
    if isinstance(node, nodes.AugAssign) and isinstance(node.target, nodes.Subscript):
        return node.target.value
    return None


def _first_load(body: list[nodes.NodeNG], name: str) -> int | None:
    for stmt in body:
        for node in walk_same_scope(stmt):
            if isinstance(node, nodes.Name) and node.name == name:
                return node.lineno
    return None


def _names_loaded(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def accumulated_values(body: list[nodes.NodeNG], accumulators: set[str]) -> list[nodes.NodeNG]:
    """The expressions a loop body appends, stores or adds into its accumulators."""
    found: list[nodes.NodeNG] = []
    for stmt in body:
        for node in walk_same_scope(stmt):
            if accumulation_target(node) not in accumulators:
                continue
            if isinstance(node, nodes.Expr):
                found.extend(node.value.args)
            elif isinstance(node, (nodes.Assign, nodes.AugAssign)):
                found.append(node.value)
    return found


