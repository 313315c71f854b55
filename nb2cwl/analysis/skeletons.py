"""Map and map-reduce skeletons: loops and comprehensions whose iterations are independent.

A cell statement qualifies when every iteration can run in any process: it reads no value an
earlier iteration wrote, modifies nothing shared, draws from no global random generator, writes
no file and does not stop early. Results are gathered back in the original order, and
accumulations (`ys.append(v)`, `total += v`, `counts[k] += 1`) are replayed in that order, so
the outcome equals the sequential run exactly. Whatever cannot be proved safe stays sequential,
with the line and the reason.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.names import item_bindings, root_name, value_roots
from nb2cwl.analysis.state import NamespaceState
from nb2cwl.analysis.walker import BUILTIN_NAMES, EffectWalker, TypeInferrer

GATHERED = "__nb2cwl_gathered__"
RECORD = "__nb2cwl_record__"
HINTS = frozenset({"parallel_task", "gpu_task"})

#: Calls too cheap to be worth a process of their own.
_CHEAP_CALLS = frozenset(
    {"len", "str", "int", "float", "bool", "abs", "round", "min", "max", "range", "enumerate",
     "zip", "sorted", "list", "dict", "set", "tuple", "print", "repr", "format", "isinstance",
     "type", "hash", "ord", "chr", "divmod", "pow", "sum", "any", "all", "reversed", "iter",
     "next", "getattr", "hasattr", "id"}
)
#: Modules whose functions are too quick to be worth a process per chunk.
_CHEAP_MODULES = frozenset({"math", "cmath", "operator", "string", "re", "json", "decimal",
                            "fractions", "statistics", "itertools", "functools", "datetime"})
#: Methods that usually do real work (models, files, network, simulations).
_HEAVY_METHODS = frozenset(
    {"fit", "predict", "predict_proba", "transform", "fit_transform", "train", "evaluate",
     "score", "compute", "run", "process", "read", "load", "read_text", "read_bytes",
     "download", "resample", "solve", "simulate", "render", "infer", "generate", "encode",
     "decode", "apply", "minimize", "optimize", "sample", "query", "request", "get", "post"}
)
#: Consumers of a gathered list that may replace the comprehension they wrap.
REDUCERS = frozenset(
    {"sum", "min", "max", "sorted", "list", "tuple", "set", "dict", "frozenset", "len",
     "numpy.mean", "numpy.sum", "numpy.concatenate", "numpy.stack", "numpy.vstack",
     "numpy.hstack", "numpy.array", "numpy.asarray", "pandas.concat", "pandas.DataFrame",
     "functools.reduce", "statistics.mean", "statistics.median", "math.fsum", "math.prod"}
)
_SHORT_CIRCUIT = frozenset({"any", "all", "next"})
_ACCUMULATING_METHODS = frozenset({"append", "add", "extend", "update", "appendleft"})


@dataclass(frozen=True)
class MapSkeleton:
    """A statement of a cell rewritten as split -> scatter(map) -> gather."""

    cell_index: int
    line: int  # line of the statement in the cell
    form: str  # what was recognised, for explain
    method: str  # "scatter" (one collection), "dotproduct" (zip) or "nested_crossproduct"
    prefix_code: str  # cell code before the statement
    iterables: tuple[str, ...]  # source of the collection(s), evaluated after the prefix
    targets: tuple[str, ...]  # assignment target source for each collection's items
    conditions: tuple[tuple[str, ...], ...] = ()  # comprehension filters, per collection
    element: str | None = None  # comprehension: expression per item ("(k, v)" for dicts)
    result: str = "list"  # comprehension: "list", "set", "dict" or "iter"
    body: str | None = None  # loop: per-item code with accumulations turned into records
    accumulators: tuple[str, ...] = ()
    gather_code: str = ""  # the statement with the collection gathered, and the rest
    reads: tuple[str, ...] = ()  # globals the per-item code reads
    loop_locals: tuple[str, ...] = ()  # names an iteration binds (last value after the loop)
    keep_locals: tuple[str, ...] = ()  # loop names the rest of the cell reads after the loop
    reduction: str | None = None
    forced: bool = False  # a @parallel_task / @gpu_task function is called per item
    gpu: bool = False


@dataclass(frozen=True)
class Blocked:
    """A loop or comprehension that stays sequential, and why."""

    cell_index: int
    line: int
    reason: str


@dataclass
class _Piece:
    """Source text helpers for one cell."""

    lines: list[str]
    offset: int  # whole-module line of the cell's first line, minus one
    hinted: set[str] = field(default_factory=set)
    gpu_hinted: set[str] = field(default_factory=set)
    scatter_over: set[str] = field(default_factory=set)  # Jupyter-Workflow scatter metadata

    def rel(self, line: int) -> int:
        return line - self.offset

    def text(self, first: int, last: int) -> str:
        return "\n".join(self.lines[self.rel(first) - 1:self.rel(last)])

    def prefix(self, stmt: nodes.NodeNG) -> str:
        return "\n".join(self.lines[:self.rel(stmt.fromlineno) - 1])

    def suffix(self, stmt: nodes.NodeNG) -> str:
        return "\n".join(self.lines[self.rel(stmt.tolineno):])


def find_skeleton(
    stmt: nodes.NodeNG,
    state: NamespaceState,
    cell_index: int,
    code: str,
    offset: int,
    infer: TypeInferrer | None,
    scatter_hints: frozenset[str] = frozenset(),
) -> MapSkeleton | Blocked | None:
    """Recognise a map (or map-reduce) in one top-level statement of a cell, if any.

    `scatter_hints` are the names Jupyter-Workflow metadata asks to scatter over: a loop over
    one of them is scattered (when safe) even if its work looks cheap.
    """
    if not isinstance(stmt, nodes.For) and _comprehension_in(stmt, state) is None:
        return None  # not a candidate: stop before the per-statement work below
    piece = _Piece(code.splitlines(), offset, _hinted(state, "parallel_task"),
                   _hinted(state, "gpu_task"), set(scatter_hints))
    try:
        if isinstance(stmt, nodes.For):
            return _loop(stmt, state, cell_index, piece, infer)
        found = _comprehension_in(stmt, state)
        if found is not None:
            return _comprehension(stmt, found, state, cell_index, piece, infer)
    except _Stop as stop:
        return Blocked(cell_index, piece.rel(stop.line), stop.reason)
    return None


class _Stop(Exception):
    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


def _hinted(state: NamespaceState, hint: str) -> set[str]:
    return {name for name, summary in state.functions.items()
            if hint in getattr(summary, "decorators", ())}


# --- comprehensions ------------------------------------------------------------------------


def _comprehension_in(stmt: nodes.NodeNG, state: NamespaceState
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
        reducer = _qualified(value.func, state)
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


def _qualified(func: nodes.NodeNG, state: NamespaceState) -> str | None:
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


def _comprehension(
    stmt: nodes.NodeNG,
    found: tuple[nodes.NodeNG, str | None],
    state: NamespaceState,
    cell_index: int,
    piece: _Piece,
    infer: TypeInferrer | None,
) -> MapSkeleton | Blocked | None:
    node, reducer = found
    if reducer is not None and reducer not in REDUCERS:
        if reducer in _SHORT_CIRCUIT:
            raise _Stop(node.lineno, f"{reducer}() may stop before the last item")
        return None  # an unknown consumer: it may expect a lazy iterator
    if reducer is not None and any(
            True for a in stmt.value.args[:-1] for _ in a.nodes_of_class(nodes.Call)):
        raise _Stop(node.lineno, f"an argument of {reducer}() before the loop calls code: it "
                                 "runs before the items, and a gather would run it after them")
    if isinstance(node, nodes.Call):  # map(f, xs)
        func, iterable = node.args
        element = f"({func.as_string()})({'__nb2cwl_item__'})"
        targets, iterables, conditions, kind = ("__nb2cwl_item__",), (iterable,), ((),), "list"
        summary = state.functions.get(func.name) if isinstance(func, nodes.Name) else None
        if isinstance(func, nodes.Name) and summary is None and func.name not in (
                BUILTIN_NAMES | set(state.imports)):
            raise _Stop(node.lineno, f"{func.name} is a callable value (a closure, partial or "
                                     "object): what a call changes cannot be seen")
        if isinstance(func, nodes.Attribute) and root_name(func) not in state.imports:
            raise _Stop(node.lineno, f"{func.as_string()} is a method of a notebook object: "
                                     "calls may change that object, which all items share")
        if summary is not None and summary.param_mutations:
            raise _Stop(node.lineno, f"{func.name}() modifies its argument, an item of the "
                                     "collection all iterations share")
        elements = [func]
        target_nodes: tuple[nodes.NodeNG, ...] = ()  # f's own effects are checked above
        form = "map(f, xs)"
    else:
        generators = node.generators
        target_nodes = tuple(g.target for g in generators)
        if len(generators) > 2:
            raise _Stop(node.lineno, "more than two nested loops")
        if any(g.is_async for g in generators):
            raise _Stop(node.lineno, "async comprehension")
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
    _eager_collections(iterables, state, node.lineno)
    method, iterable_sources, targets = _method(targets, iterables, node)
    bound = _target_names(node)
    _shared_iterators(elements, state, node.lineno, bound)
    _stateful_callees(elements, state, bound, node.lineno)
    fx = _isolated(elements, iterables, state, bound, infer, targets=target_nodes)
    _check_effects(fx, bound, set(), node.lineno)
    # dict keys are hashable, so in practice immutable: sharing them cannot be observed
    results = [node.value] if isinstance(node, nodes.DictComp) else (
        [node.elt] if not isinstance(node, nodes.Call) else [])
    _check_shared_results(results, bound, iterables, node.lineno)
    forced, gpu = _hints_used(elements, piece)
    forced = forced or _scatter_hinted(iterables, piece)
    if not forced and not _worth_it(elements, state, mapped):
        return None
    gather_statement = _replace_span(stmt, node, piece,
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
        reads=_data_reads((fx.reads - bound) | (bound & _read_by_callees(elements, state)),
                          state, cell_index),
        reduction=reducer,
        forced=forced,
        gpu=gpu,
    )


def _method(targets: tuple[str, ...], iterables: tuple[nodes.NodeNG, ...], node: nodes.NodeNG
            ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    if len(iterables) == 2:
        outer = _names_in_target(targets[0])
        inner_reads = {n.name for n in iterables[1].nodes_of_class(nodes.Name)}
        if isinstance(iterables[1], nodes.Name):
            inner_reads.add(iterables[1].name)
        if outer & inner_reads:
            raise _Stop(node.lineno, "the inner loop's collection depends on the outer item")
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


def _target_names(node: nodes.NodeNG) -> set[str]:
    names: set[str] = {"__nb2cwl_item__"}
    for generator in getattr(node, "generators", []):
        names |= {n.name for n in generator.target.nodes_of_class(nodes.AssignName)}
    return names


# --- for loops -----------------------------------------------------------------------------


def _loop(stmt: nodes.For, state: NamespaceState, cell_index: int, piece: _Piece,
          infer: TypeInferrer | None) -> MapSkeleton | Blocked | None:
    if stmt.orelse:
        raise _Stop(stmt.lineno, "the loop has an else clause")
    if isinstance(stmt, nodes.AsyncFor):
        raise _Stop(stmt.lineno, "async for loop")
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
    if accumulators:
        _eager_collections(tuple(iterables), state, stmt.lineno)
    if not accumulators:
        return None  # nothing gathered: a loop run for its side effects stays as it is
    locals_ = _assigned(body) - set(accumulators)
    for iterable in iterables:
        used = {n.name for n in [iterable, *iterable.nodes_of_class(nodes.Name)]
                if isinstance(n, nodes.Name)} & set(accumulators)
        if used:
            raise _Stop(iterable.lineno or stmt.lineno, f"the loop's collection reads "
                        f"{sorted(used)[0]}, which the iterations add to")
    _shared_iterators(body, state, stmt.lineno, bound | locals_)
    _stateful_callees(body, state, bound | locals_, stmt.lineno)
    fx = _isolated(body, tuple(iterables), state, bound, infer, statements=True,
                   targets=tuple(target_nodes))
    carried = (fx.reads & locals_) - bound
    if carried:
        name = sorted(carried)[0]
        raise _Stop(_first_load(body, name) or stmt.lineno,
                    f"{name} is written in one iteration and read in a later one")
    for name in accumulators:
        line = _other_use(body, name)
        if line:
            raise _Stop(line, f"the loop reads {name}, which earlier iterations change")
    indirect = sorted(set(accumulators) & _read_by_callees(body, state))
    if indirect:
        raise _Stop(stmt.lineno, f"a function the loop calls reads {indirect[0]}, which "
                                 "earlier iterations change")
    _check_effects(fx, bound | locals_, set(accumulators), stmt.lineno)
    _check_shared_results(_accumulated_values(body, set(accumulators)), bound | locals_,
                          tuple(iterables), stmt.lineno, locals_)
    keep = tuple(sorted((locals_ | bound) & _names_loaded(piece.suffix(stmt))))
    forced, gpu = _hints_used(body, piece)
    forced = forced or _scatter_hinted(tuple(iterables), piece)
    if not forced and not _worth_it(body, state):
        return None
    method = "nested_crossproduct" if len(iterables) == 2 else "scatter"
    iterable_sources = tuple(i.as_string() for i in iterables)
    if len(iterables) == 1:
        method, iterable_sources, target_tuple = _method(tuple(targets), tuple(iterables), stmt)
        targets = list(target_tuple)
    gather = "\n" * (piece.rel(stmt.tolineno)) + piece.suffix(stmt)
    return MapSkeleton(
        cell_index=cell_index,
        line=piece.rel(stmt.lineno),
        form=f"for loop accumulating into {', '.join(accumulators)}",
        method=method,
        prefix_code=piece.prefix(stmt),
        iterables=iterable_sources,
        targets=tuple(targets),
        body=_recording_body(body, set(accumulators)),
        accumulators=tuple(accumulators),
        gather_code=gather,
        reads=_data_reads(fx.reads - bound - set(accumulators), state, cell_index),
        loop_locals=tuple(sorted(locals_ | bound)),
        keep_locals=keep,
        forced=forced,
        gpu=gpu,
    )


def _no_early_exit(body: list[nodes.NodeNG]) -> None:
    for stmt in body:
        for node in _walk_same_scope(stmt):
            if isinstance(node, (nodes.Break, nodes.Return)):
                word = "break" if isinstance(node, nodes.Break) else "return"
                raise _Stop(node.lineno, f"{word} ends the loop early")
            if isinstance(node, (nodes.Yield, nodes.YieldFrom, nodes.Await)):
                raise _Stop(node.lineno, "yield or await inside the loop")
            if isinstance(node, (nodes.Global, nodes.Nonlocal)):
                raise _Stop(node.lineno, "global or nonlocal inside the loop")


def _walk_same_scope(node: nodes.NodeNG):
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
                    yield from _walk_same_scope(inner)
            continue
        yield from _walk_same_scope(child)


def _accumulators(body: list[nodes.NodeNG], bound: set[str]) -> list[str]:
    """Names the loop only accumulates into: acc.append(v), acc[k] = v, acc += v, ..."""
    assigned = _assigned(body)
    found: list[str] = []
    for stmt in body:
        for node in _walk_same_scope(stmt):
            name = _accumulation_target(node)
            if name and name not in bound and name not in found and (
                    name not in assigned or _only_augmented(body, name)):
                found.append(name)
    return found


def _accumulation_target(node: nodes.NodeNG) -> str | None:
    if isinstance(node, nodes.Expr) and isinstance(node.value, nodes.Call):
        func = node.value.func
        if (isinstance(func, nodes.Attribute) and func.attrname in _ACCUMULATING_METHODS
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
        for node in _walk_same_scope(stmt):
            if isinstance(node, nodes.AssignName) and node.name == name and not isinstance(
                    node.parent, nodes.AugAssign):
                return False
    return True


def _assigned(body: list[nodes.NodeNG]) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        for node in _walk_same_scope(stmt):
            if isinstance(node, nodes.AssignName):
                names.add(node.name)
    return names


def _other_use(body: list[nodes.NodeNG], name: str) -> int | None:
    """A line where the loop reads `name` other than to accumulate into it."""
    allowed: set[int] = set()
    for stmt in body:
        for node in _walk_same_scope(stmt):
            if _accumulation_target(node) == name:
                receiver = _receiver(node)
                if receiver is not None:
                    allowed.add(id(receiver))
    for stmt in body:
        for node in _walk_same_scope(stmt):
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
        for node in _walk_same_scope(stmt):
            if isinstance(node, nodes.Name) and node.name == name:
                return node.lineno
    return None


def _names_loaded(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _recording_body(body: list[nodes.NodeNG], accumulators: set[str]) -> str:
    """The loop body as code, each accumulation turned into a call of the recorder."""
    source = "\n".join(stmt.as_string() for stmt in body)
    tree = ast.parse(source)
    tree = _RecordAccumulations(accumulators).visit(tree)
    # `continue` ends the item's work: run the body inside a loop of one pass
    once = ast.For(target=ast.Name("__nb2cwl_once__", ast.Store()),
                   iter=ast.Tuple([ast.Constant(0)], ast.Load()), body=tree.body, orelse=[])
    module = ast.Module(body=[once], type_ignores=[])
    ast.fix_missing_locations(module)
    return ast.unparse(module)


class _RecordAccumulations(ast.NodeTransformer):
    def __init__(self, accumulators: set[str]) -> None:
        self.accumulators = accumulators

    def _record(self, node: ast.stmt, *args: ast.expr) -> ast.stmt:
        call = ast.Call(func=ast.Name(RECORD, ast.Load()), args=list(args), keywords=[])
        return ast.copy_location(ast.Expr(call), node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        return node  # other scopes are left alone

    def visit_Expr(self, node: ast.Expr) -> ast.stmt:
        value = node.value
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and isinstance(value.func.value, ast.Name)
                and value.func.value.id in self.accumulators
                and value.func.attr in _ACCUMULATING_METHODS and not value.keywords):
            args = ast.Tuple(value.args, ast.Load())
            return self._record(node, ast.Constant(value.func.value.id),
                                ast.Constant("call:" + value.func.attr), args)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        target = node.targets[0] if len(node.targets) == 1 else None
        if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and target.value.id in self.accumulators):
            return self._record(node, ast.Constant(target.value.id), ast.Constant("setitem"),
                                ast.Tuple([_key(target.slice), node.value], ast.Load()))
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        op = type(node.op).__name__
        target = node.target
        if isinstance(target, ast.Name) and target.id in self.accumulators:
            return self._record(node, ast.Constant(target.id), ast.Constant("iop:" + op),
                                ast.Tuple([node.value], ast.Load()))
        if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and target.value.id in self.accumulators):
            return self._record(node, ast.Constant(target.value.id),
                                ast.Constant("isetitem:" + op),
                                ast.Tuple([_key(target.slice), node.value], ast.Load()))
        return node


def _key(index: ast.expr) -> ast.expr:
    """A subscript's index as a value: `a:b` is only syntax there, `slice(a, b)` is a value."""
    if isinstance(index, ast.Slice):
        parts = [index.lower, index.upper, index.step]
        return ast.Call(ast.Name("slice", ast.Load()),
                        [p if p is not None else ast.Constant(None) for p in parts], [])
    if isinstance(index, ast.Tuple):
        return ast.Tuple([_key(e) for e in index.elts], ast.Load())
    return index


# --- shared checks -------------------------------------------------------------------------


def _isolated(parts: list[nodes.NodeNG], iterables: tuple[nodes.NodeNG, ...],
              state: NamespaceState, bound: set[str], infer: TypeInferrer | None,
              statements: bool = False, targets: tuple[nodes.NodeNG, ...] = ()):
    """Effects of per-item code, walked on a copy of the namespace state.

    A loop variable refers to an item of its collection: changing the item through it
    changes the collection, which all iterations share.
    """
    scratch = NamespaceState(
        imports=dict(state.imports), functions=dict(state.functions),
        definitions=dict(state.definitions), const_strings=dict(state.const_strings),
        types=dict(state.types), aliases=copy.copy(state.aliases),
        star_imports=list(state.star_imports))
    for target, iterable in zip(targets, iterables, strict=False):
        for name, roots in item_bindings(target, iterable).items():
            for root in roots - set(state.imports):
                scratch.link(name, root)
    walker = EffectWalker(scratch, -1, infer)
    walker.definite |= bound
    for part in iterables[1:]:
        walker.expression(part)
    if statements:
        walker.statements(parts)
    else:
        for part in parts:
            walker.expression(part)
    return walker.fx


def _callees(parts: list[nodes.NodeNG], state: NamespaceState):
    """The notebook's functions the code calls, and those they call in turn (late bound)."""
    pending = [n.func.name for part in parts for n in [part, *part.nodes_of_class(nodes.Call)]
               if isinstance(n, nodes.Call) and isinstance(n.func, nodes.Name)]
    pending += [part.name for part in parts if isinstance(part, nodes.Name)]  # map(f, xs)
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        summary = state.functions.get(name)
        if name in seen or summary is None:
            continue
        seen.add(name)
        yield summary
        pending += [n for n in summary.effects.reads if n in state.functions]


def _read_by_callees(parts: list[nodes.NodeNG], state: NamespaceState) -> set[str]:
    """Globals the notebook's functions called here read, following their own calls.

    A comprehension's variable is local to it: a function it calls that reads a global of the
    same name reads the global, which the map job must then load.
    """
    reads: set[str] = set()
    for summary in _callees(parts, state):
        reads |= summary.effects.reads
    return reads


def _check_effects(fx, local: set[str], accumulators: set[str], line: int) -> None:
    if fx.rng:
        raise _Stop(line, "an iteration draws from the global random generator, so results "
                          "depend on the order (seed a generator per item instead)")
    if fx.file_writes or fx.opaque_io:
        raise _Stop(line, "an iteration writes files, so the order of writes matters")
    if fx.module_state:  # each process would change its own copy
        what = sorted(fx.module_state)[0]
        raise _Stop(line, f"an iteration changes {what}, state of the module "
                          f"{what.split('.')[0]} that each process has its own copy of")
    shared = sorted(fx.mutates - local - accumulators)
    if shared:
        raise _Stop(line, f"an iteration modifies {shared[0]}, which all iterations share")
    escaped = sorted(fx.writes - local - accumulators - {"__nb2cwl_item__"})
    if escaped:
        raise _Stop(line, f"an iteration rebinds the global {escaped[0]}")


def _data_reads(names: set[str], state: NamespaceState, cell_index: int) -> tuple[str, ...]:
    """Names the per-item code loads as values (not builtins, not definitions it replays).

    Definitions from earlier cells are replayed; those made earlier in this same cell are
    handed over by the split like any value.
    """
    def replayed(name: str) -> bool:
        definition = state.definitions.get(name)
        return definition is not None and definition.cell_index != cell_index

    return tuple(sorted(
        n for n in names
        if not replayed(n)
        and (n not in BUILTIN_NAMES or n in state.types or n in state.functions
             or n in state.imports or n in state.definitions)))


def _eager_collections(iterables: tuple[nodes.NodeNG, ...], state: NamespaceState,
                       line: int) -> None:
    """A collection produced lazily runs code between items: its output would interleave.

    And an iterator held by a name is one object all iterations (and later cells) share:
    cutting it into chunks uses it up where the notebook would use it item by item.
    """
    for iterable in iterables:
        if _lazy(iterable, state):
            raise _Stop(line, "the collection is produced item by item (a generator), so its "
                              "own work interleaves with the loop's")
        _shared_iterators([iterable], state, line)


def _lazy(node: nodes.NodeNG, state: NamespaceState) -> bool:
    """The collection yields its items one by one as the loop asks (sorted(...) of one does
    not: it takes them all first)."""
    if isinstance(node, nodes.GeneratorExp):
        return True
    if not isinstance(node, nodes.Call) or not isinstance(node.func, nodes.Name):
        return False
    name = node.func.name
    summary = state.functions.get(name)
    if summary is not None:
        return summary.is_generator
    if name in ("map", "filter"):
        return True
    if name in ("enumerate", "zip", "iter", "reversed"):  # lazy when what they wrap is
        return any(_lazy(arg, state) for arg in node.args)
    return False


def _stateful_callees(parts: list[nodes.NodeNG], state: NamespaceState, local: set[str],
                      line: int) -> None:
    """Calls that may keep state between items, which the analysis cannot follow.

    A cache decorator or a decorator of the notebook's own (its wrapper may count or record
    calls), a function that fills its own default value (`def f(x, seen=[])`), or a callable
    held in a variable (a closure, a partial, an object): each call may change what the next
    one sees.
    """
    calls = [n for part in parts for n in [part, *part.nodes_of_class(nodes.Call)]
             if isinstance(n, nodes.Call) and isinstance(n.func, nodes.Name)]
    for call in calls:
        name = call.func.name
        summary = state.functions.get(name)
        where = call.lineno or line
        if summary is None:
            if name not in local and name not in BUILTIN_NAMES and name not in state.imports:
                raise _Stop(where, f"{name} is a callable value (a closure, partial or object): "
                                   "what a call changes cannot be seen")
            continue
        if any(isinstance(a, nodes.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords or ()):
            continue  # *args or **kwargs may fill any parameter
        passed = set(summary.positional[:len(call.args)]) | {
            k.arg for k in call.keywords or () if k.arg}
        kept = sorted((summary.param_mutations & summary.mutable_defaults) - passed)
        if kept:
            raise _Stop(where, f"{name}() changes its default value of {kept[0]}, which every "
                               "call shares")
    for summary in _callees(parts, state):
        stateful = sorted(d for d in summary.decorators
                          if d in kb.STATEFUL_DECORATORS or d in state.functions)
        if stateful:
            raise _Stop(line, f"{summary.name}() is decorated with {stateful[0]}, which may "
                              "keep state between calls")


def _shared_iterators(parts: list[nodes.NodeNG], state: NamespaceState, line: int,
                      local: set[str] | frozenset[str] = frozenset()) -> None:
    for part in parts:
        for node in [part, *part.nodes_of_class(nodes.Name)]:
            if (isinstance(node, nodes.Name) and node.name in state.iterators
                    and node.name not in local):
                raise _Stop(node.lineno or line, f"{node.name} is an iterator: each use takes "
                                                 "its next items, so its uses share it")


def _check_shared_results(values: list[nodes.NodeNG], bound: set[str],
                          iterables: tuple[nodes.NodeNG, ...], line: int,
                          fresh: set[str] | None = None) -> None:
    """Results built in other processes are copies: they must not be shared objects."""
    fresh = fresh or set()
    for value in values:
        roots = value_roots(value) - fresh
        if not roots:
            continue
        targets = roots & bound
        if targets and all(_counts(i) for i in iterables) and not roots - targets:
            continue  # items of range(...) are numbers: nothing to share
        name = sorted(roots)[0]
        raise _Stop(value.lineno or line, f"the results would hold {name} itself; copies made "
                                          "in other processes would not be the same object")


def _counts(iterable: nodes.NodeNG) -> bool:
    return (isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name)
            and iterable.func.name == "range")


def _accumulated_values(body: list[nodes.NodeNG], accumulators: set[str]) -> list[nodes.NodeNG]:
    """The expressions a loop body appends, stores or adds into its accumulators."""
    found: list[nodes.NodeNG] = []
    for stmt in body:
        for node in _walk_same_scope(stmt):
            if _accumulation_target(node) not in accumulators:
                continue
            if isinstance(node, nodes.Expr):
                found.extend(node.value.args)
            elif isinstance(node, (nodes.Assign, nodes.AugAssign)):
                found.append(node.value)
    return found


def _scatter_hinted(iterables: tuple[nodes.NodeNG, ...], piece: _Piece) -> bool:
    return any(value_roots(i) & piece.scatter_over for i in iterables)


def _hints_used(parts: list[nodes.NodeNG], piece: _Piece) -> tuple[bool, bool]:
    called = set()
    for part in parts:
        for node in part.nodes_of_class(nodes.Call):
            name = root_name(node.func)
            if name:
                called.add(name)
        if isinstance(part, nodes.Name):
            called.add(part.name)
    return bool(called & (piece.hinted | piece.gpu_hinted)), bool(called & piece.gpu_hinted)


def _worth_it(parts: list[nodes.NodeNG], state: NamespaceState, mapped: bool = False) -> bool:
    """Per-item work calls something that may take time, not just cheap builtins and math.

    Splitting costs a process per chunk, so only calls of the notebook's own functions,
    library functions outside cheap modules, and methods known to be heavy count.
    """
    for part in parts:
        if mapped:
            return True  # map(f, xs): f itself is the work
        for node in part.nodes_of_class(nodes.Call):
            func = node.func
            if isinstance(func, nodes.Name):
                if func.name in state.functions:
                    return True
                if func.name in _CHEAP_CALLS:
                    continue
                qualified = state.imports.get(func.name)
                if qualified is None or qualified.split(".")[0] not in _CHEAP_MODULES:
                    return True
            elif isinstance(func, nodes.Attribute):
                root = root_name(func)
                if root in state.imports:
                    if state.imports[root].split(".")[0] not in _CHEAP_MODULES:
                        return True
                elif func.attrname in _HEAVY_METHODS:
                    return True
    return False


def _replace_span(stmt: nodes.NodeNG, node: nodes.NodeNG, piece: _Piece, text: str) -> str:
    """The statement's source with `node`'s span replaced by `text` (line count kept)."""
    lines = piece.lines[piece.rel(stmt.fromlineno) - 1:piece.rel(stmt.tolineno)]
    first = piece.rel(node.lineno) - piece.rel(stmt.fromlineno)
    last = piece.rel(node.end_lineno) - piece.rel(stmt.fromlineno)
    head = lines[first][:node.col_offset]
    tail = lines[last][node.end_col_offset:]
    replaced = head + "(" + text + "\n" * (last - first) + ")" + tail
    return "\n".join([*lines[:first], replaced, *lines[last + 1:]])
