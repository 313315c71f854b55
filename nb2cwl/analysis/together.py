"""Cells that must share a step: state no step boundary can carry exactly.

Each step is a fresh process that rebuilds its inputs from saved values. Some state cannot be
saved and loaded exactly: a framework's random generator once seeded (TensorFlow, PyTorch),
TensorFlow and Keras objects, a function's cache, an array and its views once one of them is
written through, settings that cannot be replayed, a library the analysis does not know.
For each, the cells from the one that creates (or first changes) it to the last one that uses
it run in one step. Ranges are contiguous, so a merged step never depends on itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects
from nb2cwl.analysis.program import CellAnalysis


@dataclass
class KeptTogether:
    """Cells `first`..`last` (notebook indices) run in one step, for `reasons`: (the cell as
    Jupyter numbers it, line, why) each."""

    first: int
    last: int
    reasons: list[tuple[str, int, str]] = field(default_factory=list)  # shown cell

    def describe(self) -> list[str]:
        """The reasons as explain shows them: one line per reason, with the cells giving it."""
        places: dict[str, list[str]] = {}
        for cell, line, why in self.reasons:
            places.setdefault(why, []).append(cell + (f" line {line}" if line else ""))
        return [f"{', '.join(dict.fromkeys(where))}: {why}" for why, where in places.items()]


def kept_together(cells: list[CellAnalysis]) -> list[KeptTogether]:
    """The ranges of cells that must share a step, merged where they overlap."""
    order = [c.cell.index for c in cells]
    ranges: list[KeptTogether] = []
    for position, analysis in enumerate(cells):
        fx = analysis.effects
        later = cells[position:]
        for hold in fx.holds:
            last = order[-1] if hold.family == "*" else _last_user(later, hold.family)
            ranges.append(KeptTogether(analysis.cell.index, last, [
                _reason(analysis, hold.line, hold.reason)]))
        for family, why in _uncarried(fx):
            last = _last_user(later, family)
            if last > analysis.cell.index:
                ranges.append(KeptTogether(analysis.cell.index, last,
                                           [_reason(analysis, 0, why)]))
        for line, view, base, kind in fx.views:
            last = _view_range(later[1:], {view, base})
            if last is not None:
                ranges.append(KeptTogether(analysis.cell.index, last, [_reason(
                    analysis, line, _VIEW_REASONS[kind].format(view=view, base=base))]))
    return _merged(ranges)


_VIEW_REASONS = {
    "array": "{view} is a view of the array {base}, and a later cell changes one of them "
             "through the other; arrays are saved one by one, so a step boundary would part "
             "them",
    "mapping": "{view} is a live view of the dict {base}, and a later cell changes it; a "
               "view saved and loaded shows a copy of its dict, so a step boundary would part "
               "them",
}


def _uncarried(fx: Effects) -> list[tuple[str, str]]:
    """Families whose objects the cell creates or changes and that cannot cross exactly."""
    if not (fx.writes or fx.mutates):
        return []
    found = []
    for library in kb.LIBRARIES:
        if library.uncarried_values and library.family in fx.families:
            found.append((library.family, library.uncarried_values))
    return found


def _last_user(cells: list[CellAnalysis], family: str) -> int:
    """The last of `cells` that uses `family` (the first cell at least)."""
    last = cells[0].cell.index
    for analysis in cells:
        if family in analysis.effects.families:
            last = analysis.cell.index
    return last


def _view_range(cells: list[CellAnalysis], names: set[str]) -> int | None:
    """When a later cell writes through a view or its array: the last cell reading either."""
    changed = False
    last = None
    for analysis in cells:
        fx = analysis.effects
        if changed and fx.reads & names:
            last = analysis.cell.index
        if fx.mutates & names:
            changed = True
            last = analysis.cell.index
        if names <= fx.writes - fx.mutates:
            break  # both names bound anew: the view is gone
    return last if changed else None


def _reason(analysis: CellAnalysis, line: int, text: str) -> tuple[str, int, str]:
    return analysis.cell.shown, line, text


def _merged(ranges: list[KeptTogether]) -> list[KeptTogether]:
    merged: list[KeptTogether] = []
    for item in sorted(ranges, key=lambda r: (r.first, r.last)):
        if merged and item.first <= merged[-1].last:
            merged[-1].last = max(merged[-1].last, item.last)
            merged[-1].reasons += [r for r in item.reasons if r not in merged[-1].reasons]
        else:
            merged.append(KeptTogether(item.first, item.last, list(item.reasons)))
    return [r for r in merged if r.last > r.first]
