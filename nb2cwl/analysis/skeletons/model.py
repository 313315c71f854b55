"""The skeleton records: what a recognised loop becomes, why one stays sequential."""

from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nb2cwl.analysis.state import NamespaceState

GATHERED = "__nb2cwl_gathered__"
RECORD = "__nb2cwl_record__"
#: `xs[-1]` right after `xs.append(v)` in one iteration: that iteration's own value
READ_BACK = "__nb2cwl_read_back__"
HINTS = frozenset({"parallel_task", "gpu_task"})

#: Consumers of a gathered list that may replace the comprehension they wrap.
REDUCERS = frozenset(
    {"sum", "min", "max", "sorted", "list", "tuple", "set", "dict", "frozenset", "len",
     "numpy.mean", "numpy.sum", "numpy.concatenate", "numpy.stack", "numpy.vstack",
     "numpy.hstack", "numpy.array", "numpy.asarray", "pandas.concat", "pandas.DataFrame",
     "functools.reduce", "statistics.mean", "statistics.median", "math.fsum", "math.prod"}
)
SHORT_CIRCUIT = frozenset({"any", "all", "next"})
ACCUMULATING_METHODS = frozenset({"append", "add", "extend", "update", "appendleft"})


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
    body_at_lines: bool = False  # `body` is at the lines the loop's body has in its cell
    accumulators: tuple[str, ...] = ()
    gather_code: str = ""  # the statement with the collection gathered, and the rest
    reads: tuple[str, ...] = ()  # globals the per-item code reads
    loop_locals: tuple[str, ...] = ()  # names an iteration binds (last value after the loop)
    keep_locals: tuple[str, ...] = ()  # loop names the rest of the cell reads after the loop
    reduction: str | None = None
    forced: bool = False  # a @parallel_task / @gpu_task function is called per item
    gpu: bool = False


@dataclass(frozen=True)
class Hazard:
    """A kind of reason to keep a loop sequential: what would go wrong in parallel, and the
    smallest change to the notebook that removes it (None where none does: the order is
    the loop's purpose)."""

    what: str
    fix: str | None
    limit: bool = False  # a form nb2cwl does not scatter yet, not a hazard of the code


#: Every kind of reason the loop checks give. Each true hazard has a notebook in the tests
#: (tests/hazards) where it really changes a result when the items run in separate
#: processes or in another order; the `limit`s are forms nb2cwl does not scatter yet.
HAZARDS: dict[str, Hazard] = {
    "global_rng": Hazard(
        "draws from a random generator shared by all items",
        "seed a generator per item: `rng = np.random.default_rng(seed)`, or give the call "
        "`random_state=seed`"),
    "shared_mutation": Hazard(
        "changes an object that all items share",
        "work on a copy per item (`x = x.copy()`), or return the change and apply it after "
        "the loop"),
    "global_rebind": Hazard(
        "rebinds a global that later items or cells read",
        "bind a name local to the iteration and accumulate it (`results.append(...)`)"),
    "loop_carried": Hazard(
        "a value written in one iteration is read in a later one", None),
    "accumulator_read": Hazard(
        "reads the results that earlier iterations added",
        "read the results after the loop, or only what this iteration added (`xs[-1]` right "
        "after `xs.append(v)`)"),
    "collection_grows": Hazard("the collection grows as the loop adds to it", None),
    "early_exit": Hazard("stops at an item that depends on the ones before", None),
    "short_circuit": Hazard("stops at the first item that decides the result", None),
    "file_writes": Hazard(
        "writes files or runs programs, which the processes of a scatter cannot hand on",
        "return the data from each iteration and write the files after the loop"),
    "figures": Hazard(
        "draws figures, which Jupyter shows in the order drawn",
        "compute per item in the loop, and draw the figures after it from the results"),
    "module_state": Hazard(
        "changes state of a module, which each process has its own copy of",
        "change the setting once, before the loop"),
    "process_state": Hazard(
        "uses state of the process that no other process has",
        "set it once, before the loop, in an earlier cell"),
    "uncarried_values": Hazard(
        "uses objects that cannot be copied to another process exactly", None),
    "shared_results": Hazard(
        "keeps objects that later code expects to be the very objects it shares",
        "keep a copy (`.copy()`) or a value computed from the object, not the object itself"),
    "shared_iterator": Hazard(
        "uses an iterator, whose items each use takes in turn",
        "make it a list before the loop: `items = list(it)`"),
    "lazy_collection": Hazard(
        "its collection runs code between the items (a generator)",
        "make the collection a list first: `items = list(...)`"),
    "iterating_class": Hazard(
        "its collection is an object whose __iter__ runs the notebook's code",
        "make the collection a list first: `items = list(obj)`"),
    "callable_value": Hazard(
        "calls a callable value (closure, partial, object) whose state cannot be seen",
        "call a function defined with `def` in the notebook"),
    "mutable_default": Hazard(
        "calls a function that changes its own default value",
        "make the default None and create the value inside the function"),
    "stateful_decorator": Hazard(
        "calls a function whose decorator keeps state between calls (a cache)",
        "call the undecorated function per item"),
    "notebook_method": Hazard(
        "calls a method of a notebook object, which may change it",
        "call a function that takes the object and returns a new value"),
    "reducer_argument": Hazard(
        "an argument before the loop runs code that the gather would run after the items",
        "compute that argument on the line before"),
    "unsupported": Hazard("a form nb2cwl does not scatter yet", None, limit=True),
    "framework_process": Hazard(
        "uses a framework (TensorFlow, Keras) that each process would start anew; not "
        "scattered yet", None, limit=True),
    "cell_writes_files": Hazard(
        "the loop's cell also writes files, which a scattered cell cannot hand on yet",
        "write the files in a cell of their own, after the loop's cell", limit=True),
}


@dataclass(frozen=True)
class Blocked:
    """A loop or comprehension that stays sequential, and why."""

    cell_index: int
    line: int
    reason: str
    hazard: str = "unsupported"  # a key of HAZARDS

    @property
    def fix(self) -> str | None:
        return HAZARDS[self.hazard].fix


@dataclass
class Piece:
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


class Stop(Exception):
    """A loop stays sequential: at `line`, for a reason of kind `hazard` (see HAZARDS)."""

    def __init__(self, line: int, hazard: str, reason: str) -> None:
        super().__init__(reason)
        if hazard not in HAZARDS:
            raise ValueError(f"unknown hazard {hazard!r}")
        self.line = line
        self.hazard = hazard
        self.reason = reason


def hinted(state: NamespaceState, hint: str) -> set[str]:
    return {name for name, summary in state.functions.items()
            if hint in getattr(summary, "decorators", ())}


