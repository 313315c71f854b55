"""Checks every scattered loop passes: its items change nothing they share, draw no
global random numbers, write no file, keep no state between calls, and hold no object
the other processes would only have copies of."""

from __future__ import annotations

import copy

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.callable_items import callable_loop_items
from nb2cwl.analysis.names import (
    BUILTIN_NAMES,
    fresh_items,
    item_bindings,
    root_name,
    value_roots,
)
from nb2cwl.analysis.scalars import SCALAR, scalar_items
from nb2cwl.analysis.skeletons.model import Stop
from nb2cwl.analysis.state import NamespaceState
from nb2cwl.analysis.walker import EffectWalker, TypeInferrer


def isolated(parts: list[nodes.NodeNG], iterables: tuple[nodes.NodeNG, ...],
              state: NamespaceState, bound: set[str], infer: TypeInferrer | None,
              statements: bool = False, targets: tuple[nodes.NodeNG, ...] = (),
              accumulators: frozenset[str] = frozenset()) -> EffectWalker:
    """A walker of the per-item code on a copy of the namespace state; its `fx` are the
    code's effects.

    A loop variable refers to an item of its collection: changing the item through it
    changes the collection, which all iterations share. What the items add to an
    accumulator the gather adds, in order, to the accumulator itself, which it loads with
    whatever shares its object (`count = make_counter(items)`): those are not changed by
    the items (but reading one is reading the accumulator, see `accumulator_partners`).
    A loop variable bound to a number or a string (`for seed in range(8)`) is one.
    """
    scratch = NamespaceState(
        imports=dict(state.imports), functions=dict(state.functions),
        definitions=dict(state.definitions), const_strings=dict(state.const_strings),
        choices=dict(state.choices), string_items=dict(state.string_items),
        unseen_bindings=state.unseen_bindings, names=state.names,
        types=dict(state.types), aliases=copy.copy(state.aliases),
        item_sharing=dict(state.item_sharing), file_functions=set(state.file_functions),
        star_imports=list(state.star_imports), families=dict(state.families),
        immutable_items=set(state.immutable_items), seeded=set(state.seeded),
        library_callables=dict(state.library_callables),
        callable_collections=dict(state.callable_collections),
        changing_callables=dict(state.changing_callables))
    for name in accumulators:
        scratch.unlink(name)
    for target, iterable in zip(targets, iterables, strict=False):
        for name, roots in item_bindings(target, iterable).items():
            for root in roots - set(state.imports):
                scratch.link(name, root)
    scalars = scalar_items(targets, iterables, state)
    for target, iterable in zip(targets, iterables, strict=False):
        callables, keys = callable_loop_items(target, iterable, state)
        scalars |= keys  # the constant keys of a dict of a library's classes
        for name, held in callables.items():  # for name, cls in models.items(): cls()
            scratch.unlink(name)
            scratch.library_callables[name] = held
            scratch.families[name] = frozenset(filter(None, map(kb.family_of, held)))
    for name in scalars:
        scratch.types[name] = SCALAR
        scratch.unlink(name)
    walker = EffectWalker(scratch, -1, infer)
    walker.hands_on = False  # what the results hold is check_shared_results' question
    walker.definite |= bound
    for part in iterables[1:]:
        walker.expression(part)
    if statements:
        walker.statements(parts)
    else:
        for part in parts:
            walker.expression(part)
    return walker


def accumulator_partners(accumulators: set[str], state: NamespaceState) -> dict[str, str]:
    """Names sharing an object with an accumulator (`run = Run(losses)`), and which one."""
    return {other: name for name in sorted(accumulators)
            for other in state.alias_group(name) if other not in accumulators}


def callees(parts: list[nodes.NodeNG], state: NamespaceState):
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


def read_by_callees(parts: list[nodes.NodeNG], state: NamespaceState) -> set[str]:
    """Globals the notebook's functions called here read, following their own calls.

    A comprehension's variable is local to it: a function it calls that reads a global of the
    same name reads the global, which the map job must then load.
    """
    reads: set[str] = set()
    for summary in callees(parts, state):
        reads |= summary.effects.reads
    return reads


#: Libraries whose figures the inline backend shows when the cell ends.
_FIGURE_FAMILIES = frozenset({"matplotlib", "seaborn"})


_GLOBAL_GENERATORS = {"rng:numpy": "NumPy's global random generator",
                      "rng:random": "the global generator of Python's random module"}


def check_effects(fx, local: set[str], accumulators: set[str], line: int,
                  types: dict[str, str] | None = None,
                  iterables: tuple[nodes.NodeNG, ...] = (),
                  state: NamespaceState | None = None) -> None:
    """The effects no scatter can keep: raises Stop with the first hazard found. A change
    to the collection (through an item) is named before what an item may hold."""
    types = types or {}
    for library in kb.LIBRARIES:
        if library.family in fx.families and library.uncarried_values:
            _framework(fx, library, local | accumulators, line, state)
    if fx.rng:
        which = " and ".join(_GLOBAL_GENERATORS.get(r, r) for r in sorted(fx.rng))
        first = min(fx.rng_lines.get(r) or line for r in fx.rng)  # the first draw's line
        raise Stop(first, "global_rng", f"an iteration draws from {which}, so results "
                                        "depend on the order of the items")
    if fx.holds:  # a library nb2cwl does not know, a seed: state of the process
        raise Stop(line, "process_state", f"an iteration: {fx.holds[0].reason}")
    if fx.families & _FIGURE_FAMILIES:
        raise Stop(line, "figures",
                   "an iteration may draw figures, which Jupyter shows at the end of the "
                   "cell, in the order they were drawn")
    if fx.module_state:  # each process would change its own copy
        what = sorted(fx.module_state)[0]
        raise Stop(line, "module_state", f"an iteration changes {what}, state of the module "
                          f"{what.split('.')[0]} that each process has its own copy of")
    escaped = sorted(fx.writes - local - accumulators - {"__nb2cwl_item__"})
    shared = sorted(fx.mutates - local - accumulators - set(escaped))
    generators = [name for name in shared if types.get(name) in kb.GENERATOR_TYPES]
    if generators:
        raise Stop(fx.mutation_lines.get(generators[0]) or line, "global_rng",
                   f"an iteration draws from {generators[0]}, a random generator all "
                   "iterations share, so results depend on the order of the items")
    # (after the draws: writing the files after the loop would not make the draws parallel)
    if fx.file_writes or fx.opaque_io:
        raise Stop(line, "file_writes",
                   "an iteration writes files or runs programs, which the processes of a "
                   "scatter could not hand on in order")
    collections = set().union(*(value_roots(i) for i in iterables)) if iterables else set()
    shared.sort(key=lambda name: (name not in collections, name))
    if shared:
        raise Stop(fx.mutation_lines.get(shared[0]) or line, "shared_mutation",
                   f"an iteration modifies {shared[0]}, which all iterations share")
    if escaped:
        raise Stop(line, "global_rebind", f"an iteration rebinds the global {escaped[0]}")


def _framework(fx, library: kb.Library, local: set[str], line: int,
               state: NamespaceState | None) -> None:
    """A loop using a framework whose objects cannot cross processes (TensorFlow): a hazard
    where the items use such an object made before the loop; otherwise a limit (each process
    would start the framework anew, and on a GPU claim all its memory)."""
    made_before = sorted(
        name for name in fx.reads - local
        if state is not None and name not in state.imports
        and library.family in state.families.get(name, ())) if state is not None else ["?"]
    if made_before:
        what = f"{made_before[0]}, made before the loop" if state is not None else "objects"
        raise Stop(line, "uncarried_values",
                   f"an iteration uses {what} ({library.family}): "
                   f"{library.uncarried_values}, so other processes cannot have them")
    raise Stop(line, "framework_process",
               f"an iteration uses {library.family}, which nb2cwl does not scatter yet: each "
               "process would start it anew, with its own random state, and on a GPU claim "
               "all its memory")


def fresh_targets(targets: tuple[nodes.NodeNG, ...],
                  iterables: tuple[nodes.NodeNG, ...]) -> set[str]:
    """Loop variables bound to new objects per item (`for key, g in df.groupby("k")`)."""
    return {n.name for target, iterable in zip(targets, iterables, strict=False)
            if fresh_items(iterable) for n in target.nodes_of_class(nodes.AssignName)}


def data_reads(names: set[str], state: NamespaceState, cell_index: int) -> tuple[str, ...]:
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


def eager_collections(iterables: tuple[nodes.NodeNG, ...], state: NamespaceState,
                       line: int) -> None:
    """A collection produced lazily runs code between items: its output would interleave.

    And an iterator held by a name is one object all iterations (and later cells) share:
    cutting it into chunks uses it up where the notebook would use it item by item.
    """
    for iterable in iterables:
        if lazy(iterable, state):
            raise Stop(line, "lazy_collection",
                       "the collection is produced item by item (a generator), so its "
                       "own work interleaves with the loop's")
        shared_iterators([iterable], state, line)
        iterating = sorted(name for name, summary in state.functions.items()
                           if summary.is_class and summary.iterates_code)
        called = (iterable.func.name if isinstance(iterable, nodes.Call)
                  and isinstance(iterable.func, nodes.Name) else None)
        unknown = (isinstance(iterable, (nodes.Name, nodes.Attribute))
                   and state.types.get(root_name(iterable) or "") not in kb.KNOWN_TYPES)
        if iterating and (unknown or called in iterating):
            raise Stop(line, "iterating_class",
                       f"the collection may be an object of {iterating[0]}, whose "
                       "__iter__ runs the notebook's code between the items")


def lazy(node: nodes.NodeNG, state: NamespaceState) -> bool:
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
        return any(lazy(arg, state) for arg in node.args)
    return False


def stateful_callees(parts: list[nodes.NodeNG], state: NamespaceState, local: set[str],
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
                raise Stop(where, "callable_value",
                           f"{name} is a callable value (a closure, partial or object): "
                           "what a call changes cannot be seen")
            continue
        if any(isinstance(a, nodes.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords or ()):
            continue  # *args or **kwargs may fill any parameter
        passed = set(summary.positional[:len(call.args)]) | {
            k.arg for k in call.keywords or () if k.arg}
        kept = sorted((summary.param_mutations & summary.mutable_defaults) - passed)
        if kept:
            raise Stop(where, "mutable_default",
                       f"{name}() changes its default value of {kept[0]}, which every "
                       "call shares")
    for summary in callees(parts, state):
        stateful = sorted(d for d in summary.decorators
                          if d in kb.STATEFUL_DECORATORS or d in state.functions)
        if stateful:
            raise Stop(line, "stateful_decorator",
                       f"{summary.name}() is decorated with {stateful[0]}, which may "
                       "keep state between calls")


def shared_iterators(parts: list[nodes.NodeNG], state: NamespaceState, line: int,
                      local: set[str] | frozenset[str] = frozenset()) -> None:
    for part in parts:
        for node in [part, *part.nodes_of_class(nodes.Name)]:
            if (isinstance(node, nodes.Name) and node.name in state.iterators
                    and node.name not in local):
                raise Stop(node.lineno or line, "shared_iterator",
                           f"{node.name} is an iterator: each use takes "
                           "its next items, so its uses share it")


def check_shared_results(values: list[nodes.NodeNG], bound: set[str], line: int,
                          walker: EffectWalker, fresh: set[str] | None = None) -> None:
    """Results built in other processes are copies: they must not be shared objects.

    What cannot be changed has no identity worth keeping: numbers, strings (a loop variable
    bound to one), modules, functions and classes (they are what their definitions make in
    every process), and new values a library call returns (`pd.read_csv(path)`).
    """
    fresh = fresh or set()
    state = walker.state
    for value in values:
        roots = {root for root in value_roots(value, walker.call_roots) - fresh
                 if root not in state.imports and root not in state.functions
                 and state.types.get(root) not in kb.SCALAR_TYPES}
        if not roots:
            continue
        name = sorted(roots)[0]
        kind = "an item of the collection" if name in bound else "an object all items share"
        raise Stop(value.lineno or line, "shared_results",
                   f"the results would hold {name} itself ({kind}); "
                   "copies made in other processes would not be the "
                   "same object")
