"""Effects of code: names read, written, mutated and deleted, hidden state, files, handles."""

from __future__ import annotations

from dataclasses import dataclass, field

HIDDEN_PREFIXES = ("rng:", "file:")


@dataclass
class Effects:
    """What a piece of code (a cell, or a function body at its call) does to the program state.

    `reads` are names whose value must come from before the code ran (upward-exposed uses);
    `writes` are names (re)bound; `mutates` are names whose object may be modified in place;
    `deletes` are names removed with `del`. Hidden state uses pseudo-names `rng:random`,
    `rng:numpy`; files are relative paths.
    """

    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    mutates: set[str] = field(default_factory=set)
    deletes: set[str] = field(default_factory=set)
    rng: set[str] = field(default_factory=set)
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

    def merge(self, other: Effects) -> None:
        """Add `other`'s effects to these."""
        self.reads |= other.reads
        self.writes |= other.writes
        self.mutates |= other.mutates
        self.deletes |= other.deletes
        self.rng |= other.rng
        self.file_reads |= other.file_reads
        self.file_writes |= other.file_writes
        self.literals |= other.literals
        self.opaque_io.extend(other.opaque_io)
        self.opaque_reads.extend(other.opaque_reads)
        self.opaque_namespace.extend(other.opaque_namespace)
        self.notes.extend(other.notes)
        self.module_state |= other.module_state


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
