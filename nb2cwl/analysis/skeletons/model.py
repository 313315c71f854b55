"""The skeleton records: what a recognised loop becomes, why one stays sequential."""

from __future__ import annotations

from dataclasses import dataclass, field

from astroid import nodes

from nb2cwl.analysis.state import NamespaceState

GATHERED = "__nb2cwl_gathered__"
RECORD = "__nb2cwl_record__"
HINTS = frozenset({"parallel_task", "gpu_task"})

#: Calls too cheap to be worth a process of their own.
#: Consumers of a gathered list that may replace the comprehension they wrap.
REDUCERS = frozenset(
    {"sum", "min", "max", "sorted", "list", "tuple", "set", "dict", "frozenset", "len",
     "numpy.mean", "numpy.sum", "numpy.concatenate", "numpy.stack", "numpy.vstack",
     "numpy.hstack", "numpy.array", "numpy.asarray", "pandas.concat", "pandas.DataFrame",
     "functools.reduce", "statistics.mean", "statistics.median", "math.fsum", "math.prod"}
)
SHORT_CIRCUIT = frozenset({"any", "all", "next"})
ACCUMULATING_METHODS = frozenset({"append", "add", "extend", "update", "appendleft"})


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
class Blocked:
    """A loop or comprehension that stays sequential, and why."""

    cell_index: int
    line: int
    reason: str


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
    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


def hinted(state: NamespaceState, hint: str) -> set[str]:
    return {name for name, summary in state.functions.items()
            if hint in getattr(summary, "decorators", ())}


