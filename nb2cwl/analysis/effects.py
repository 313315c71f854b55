"""Effects of code: names read, written, mutated and deleted, hidden state, files, handles."""

from __future__ import annotations

from dataclasses import dataclass, field

from nb2cwl.analysis.knowledge.model import StateKind

HIDDEN_PREFIXES = ("rng:", "file:")


@dataclass(frozen=True)
class StateChange:
    """A change of process-wide state: where, what kind, and through what (for explain)."""

    line: int
    kind: StateKind
    what: str


@dataclass(frozen=True)
class Hold:
    """State no step can hand on exactly, created or changed by the code: the cells from here
    to the last one that uses `family` must share a step."""

    family: str  # a library's family ("tensorflow"), or "*" for every later cell
    line: int
    reason: str


@dataclass
class Effects:
    """What a piece of code (a cell, or a function body at its call) does to the program state.

    `reads` are names whose value must come from before the code ran (upward-exposed uses);
    `writes` are names (re)bound; `mutates` are names whose object may be modified in place;
    `deletes` are names removed with `del`. Hidden state uses pseudo-names `rng:random`,
    `rng:numpy`; files are relative paths.
    """

    reads: set[str] = field(default_factory=set)
    # the reads that are only an old value passed through a binding that may not happen
    # (`for _ in items:` leaves `_` as it was when `items` is empty): no use of that value
    passes_through: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    mutates: set[str] = field(default_factory=set)
    mutation_lines: dict[str, int] = field(default_factory=dict)  # the first line changing each
    deletes: set[str] = field(default_factory=set)
    rng: set[str] = field(default_factory=set)
    rng_lines: dict[str, int] = field(default_factory=dict)  # the first line drawing from each
    file_reads: set[str] = field(default_factory=set)
    file_writes: set[str] = field(default_factory=set)
    literals: set[str] = field(default_factory=set)  # string constants that look like paths
    opaque_io: list[tuple[int, str]] = field(default_factory=list)  # (line, what): may write
    opaque_reads: list[tuple[int, str]] = field(default_factory=list)  # (line, what): reads only
    # (line, what): code whose reads and writes of globals cannot be known (exec, globals())
    opaque_namespace: list[tuple[int, str]] = field(default_factory=list)
    notes: list[tuple[int, str]] = field(default_factory=list)  # (line, explanation)
    # module state it changes: "os.environ", "numpy.set_printoptions", ...
    module_state: set[str] = field(default_factory=set)
    state_changes: list[StateChange] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    families: set[str] = field(default_factory=set)  # libraries whose objects it uses
    reads_all: list[tuple[int, str]] = field(default_factory=list)  # (line, what): %who
    # (line, view, base, "array" or "mapping"): a view of an array or a dict
    views: list[tuple[int, str, str, str]] = field(default_factory=list)
    skipped_magics: list[tuple[int, str]] = field(default_factory=list)  # (line, why)
    installs: list[tuple[int, str]] = field(default_factory=list)  # package installs: (line, what)

    def merge(self, other: Effects) -> None:
        """Add `other`'s effects to these."""
        self.reads |= other.reads
        self.writes |= other.writes
        self.mutates |= other.mutates
        self.deletes |= other.deletes
        self.rng |= other.rng
        for state, line in other.rng_lines.items():
            self.rng_lines.setdefault(state, line)
        for name, line in other.mutation_lines.items():
            self.mutation_lines.setdefault(name, line)
        self.file_reads |= other.file_reads
        self.file_writes |= other.file_writes
        self.literals |= other.literals
        self.opaque_io.extend(other.opaque_io)
        self.opaque_reads.extend(other.opaque_reads)
        self.opaque_namespace.extend(other.opaque_namespace)
        self.notes.extend(other.notes)
        self.module_state |= other.module_state
        self.state_changes.extend(other.state_changes)
        self.holds.extend(other.holds)
        self.families |= other.families
        self.reads_all.extend(other.reads_all)
        self.views.extend(other.views)
        self.skipped_magics.extend(other.skipped_magics)
        self.installs.extend(other.installs)


@dataclass
class FunctionSummary:
    """The effects a user function or class has on globals when it is called (late bound).

    `effects.reads` are the globals the body reads at call time; `param_mutations` are the
    positions and names of parameters whose objects the body may modify.
    """

    name: str
    cell_index: int
    effects: Effects
    param_names: tuple[str, ...] = ()
    param_mutations: frozenset[str] = frozenset()
    methods: frozenset[str] = frozenset()  # for classes: method names
    is_class: bool = False
    decorators: frozenset[str] = frozenset()  # names of its decorators (parallel_task, ...)
    is_generator: bool = False  # calling it produces items lazily
    positional: tuple[str, ...] = ()  # parameters a positional argument can fill, in order
    mutable_defaults: frozenset[str] = frozenset()  # parameters defaulting to [], {}, set()...
    returns: frozenset[str] = frozenset()  # globals whose objects a call may return
    returns_params: frozenset[str] = frozenset()  # parameters whose objects it may return
    retains: frozenset[str] = frozenset()  # parameters it keeps (stores in self or a global)
    mutates_class: bool = False  # for classes: a method changes the class's own attributes
    attribute_effects: frozenset[str] = frozenset()  # for classes: properties with effects
    iterates_code: bool = False  # for classes: __iter__/__next__/__getitem__ run its code
    called_params: frozenset[str] = frozenset()  # parameters it calls or hands to a call
    #: (called parameter, position or -1 when not known, parameter or global handed there)
    called_with: frozenset[tuple[str, int, str]] = frozenset()
    seeded_params: frozenset[str] = frozenset()  # called ones it always calls with a seed
    changing_methods: frozenset[str] = frozenset()  # for classes: methods changing arguments
    #: (parameter, name) pairs: a call of that parameter, given that name's object (another
    #: parameter's or a global's), is returned (`return metric(y_true, pred)`)
    returns_through: frozenset[tuple[str, str]] = frozenset()
