"""Map and map-reduce skeletons: loops and comprehensions whose iterations are independent.

A cell statement qualifies when every iteration can run in any process: it reads no value an
earlier iteration wrote, modifies nothing shared, draws from no global random generator, writes
no file and does not stop early. Results are gathered back in the original order, and
accumulations (`ys.append(v)`, `total += v`, `counts[k] += 1`) are replayed in that order, so
the outcome equals the sequential run exactly. Whatever cannot be proved safe stays sequential,
with the line and the reason.

Recognition is in `comprehensions` and `loops`, the safety checks both share in `checks`, and
whether a loop is worth a process per chunk in `cost`.
"""

from __future__ import annotations

from astroid import nodes

from nb2cwl.analysis.skeletons.comprehensions import comprehension, comprehension_in
from nb2cwl.analysis.skeletons.loops import loop
from nb2cwl.analysis.skeletons.model import (
    GATHERED,
    HAZARDS,
    HINTS,
    RECORD,
    REDUCERS,
    Blocked,
    MapSkeleton,
    Piece,
    Stop,
    hinted,
)
from nb2cwl.analysis.state import NamespaceState
from nb2cwl.analysis.walker import TypeInferrer

__all__ = ["GATHERED", "HAZARDS", "HINTS", "RECORD", "REDUCERS", "Blocked", "MapSkeleton",
           "find_skeleton"]


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
    if not isinstance(stmt, nodes.For) and comprehension_in(stmt, state) is None:
        return None  # not a candidate: stop before the per-statement work below
    piece = Piece(code.splitlines(), offset, hinted(state, "parallel_task"),
                   hinted(state, "gpu_task"), set(scatter_hints))
    try:
        if isinstance(stmt, nodes.For):
            return loop(stmt, state, cell_index, piece, infer)
        found = comprehension_in(stmt, state)
        if found is not None:
            return comprehension(stmt, found, state, cell_index, piece, infer)
    except Stop as stop:
        return Blocked(cell_index, piece.rel(stop.line), stop.reason, stop.hazard)
    return None


