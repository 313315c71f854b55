"""Settings: statements that change process-wide state, and whether a later step can replay them.

A fresh step process starts with every library's defaults. A cell that sets pandas' display
options, matplotlib's style or a warning filter changes what later cells print, in Jupyter.
When the statement that made the change can run again on its own (it reads only imports,
definitions and constants, binds no variable, and does nothing else), every later step replays
it, in notebook order, as soon as the library it configures is imported there: the state is
carried exactly. Otherwise the cells from that one on stay in one step (a Hold).
"""

from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nb2cwl.analysis.effects import Effects, Hold, StateChange
from nb2cwl.analysis.knowledge import TOGETHER
from nb2cwl.analysis.names import BUILTIN_NAMES
from nb2cwl.analysis.state import Definition, NamespaceState

_REPLAYABLE_FORMS = (nodes.Expr, nodes.Assign, nodes.AugAssign)


@dataclass(frozen=True)
class Setting:
    """A statement a later step runs again to have the state the notebook had there."""

    key: str  # "<cell>:<statement number>"
    cell_index: int
    line: int
    code: str
    owners: tuple[str, ...]  # modules whose import makes it observable ("" = at once)
    kinds: tuple[str, ...]  # what it changes, as explain says it
    requires: tuple[Definition, ...] = ()


@dataclass
class _Snapshot:
    """How much of each effect a walk had recorded before a statement."""

    writes: frozenset[str]
    mutates: frozenset[str]
    counts: tuple[int, ...]

    @staticmethod
    def of(fx: Effects) -> _Snapshot:
        return _Snapshot(frozenset(fx.writes), frozenset(fx.mutates), _counts(fx))


def _counts(fx: Effects) -> tuple[int, ...]:
    return (len(fx.rng), len(fx.file_reads), len(fx.file_writes), len(fx.opaque_io),
            len(fx.opaque_reads), len(fx.opaque_namespace), len(fx.holds),
            len(fx.skipped_magics))


def snapshot(fx: Effects) -> _Snapshot:
    """What the walk has recorded so far (taken before a statement)."""
    return _Snapshot.of(fx)


def settle(stmt: nodes.NodeNG, number: int, cell_index: int, offset: int, fx: Effects,
           before: _Snapshot, changes: list[StateChange], state: NamespaceState,
           assigned: set[str]) -> Setting | None:
    """The Setting of a top-level statement that changed process-wide state, or None after
    recording the Holds that keep the cells together instead.

    `changes` are the state changes the statement made; `assigned` the names earlier code
    bound to data (a builtin's name rebound is data too).
    """
    requires = _replay_requirements(stmt, state, assigned)
    replayable = (
        isinstance(stmt, _REPLAYABLE_FORMS)
        and not any(isinstance(t, nodes.AssignName) for t in getattr(stmt, "targets", ()))
        and all(change.kind.treatment != TOGETHER for change in changes)
        and requires is not None
        and frozenset(fx.writes) == before.writes and frozenset(fx.mutates) == before.mutates
        and _counts(fx) == before.counts
    )
    line = stmt.lineno - offset
    if not replayable or requires is None:
        for change in changes:
            reason = (f"{change.what} changes {change.kind.name}, and the statement cannot run "
                      "again on its own in a later step" if change.kind.treatment != TOGETHER
                      else f"{change.what} changes {change.kind.name}")
            fx.holds.append(Hold("*", change.line or stmt.lineno, reason))
        return None
    owners = tuple(sorted({change.kind.owner for change in changes}))
    kinds = tuple(dict.fromkeys(change.kind.name for change in changes))
    return Setting(f"{cell_index}:{number}", cell_index, line, stmt.as_string(), owners, kinds,
                   requires)


def _replay_requirements(stmt: nodes.NodeNG, state: NamespaceState,
                         assigned: set[str]) -> tuple[Definition, ...] | None:
    """The definitions a replay of `stmt` needs, or None when it reads a data value."""
    needed: dict[str, Definition] = {}
    names = {n.name for n in stmt.nodes_of_class(nodes.Name)}
    pending = sorted(names)
    while pending:  # what the notebook's functions it calls read when they run
        summary = state.functions.get(pending.pop())
        if summary is not None:
            new = summary.effects.reads - names
            names |= new
            pending += sorted(new)
    for name in names:
        definition = state.definitions.get(name)
        if definition is not None:
            needed[definition.key] = definition
        elif name not in BUILTIN_NAMES or name in assigned:
            return None
    return tuple(needed[key] for key in sorted(needed, key=_position))


def _position(key: str) -> tuple[int, int]:
    cell, number = key.split(":")
    return int(cell), int(number)
