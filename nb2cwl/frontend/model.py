"""The front end's view of a notebook: cells with their source and converted code."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nb2cwl.errors import Location

if TYPE_CHECKING:
    from nb2cwl.frontend.parameters import ParameterCell


class Numbered(Protocol):
    """A cell as numbered: a front-end Cell, or the IR's view of one."""

    index: int
    prompt: int | None
    first_line: int | None


def shown_cells(cells: Iterable[Numbered]) -> str:
    """Cells as Jupyter numbers them after a Run All: "In [3]", "In [1] to [5]", "In [1], [4]";
    "cell N, M" (their indices) for a script's cells and wherever a cell has no number."""
    wanted = sorted({c.index: c for c in cells}.values(), key=lambda c: c.index)
    numbers = [c.prompt for c in wanted]
    if not wanted or None in numbers or any(c.first_line is not None for c in wanted):
        return "cell " + ", ".join(str(c.index) for c in wanted)
    if len(numbers) == 1:
        return f"In [{numbers[0]}]"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"In [{numbers[0]}] to [{numbers[-1]}]"
    return "In " + ", ".join(f"[{n}]" for n in numbers)


@dataclass(frozen=True)
class Magic:
    """An IPython magic or shell escape found in a cell, after conversion."""

    kind: str  # "line", "cell" or "shell"
    name: str  # magic name ("matplotlib", "writefile"); "system"/"getoutput" for ! lines
    argument: str
    line: int


@dataclass(frozen=True)
class Cell:
    """One notebook cell. `code` is the Python that runs (magics converted); markdown has none."""

    index: int
    cell_id: str
    cell_type: str
    source: str
    code: str = ""
    tags: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict, hash=False, compare=False)
    magics: tuple[Magic, ...] = ()
    first_line: int | None = None  # a script's cell: the file's line of the cell's line 1
    own_magics: int = 0  # lines of nb2cwl's own magics, made comments (not run in steps)
    prompt: int | None = None  # a code cell's In [n] after a Run All in a new kernel

    @property
    def is_code(self) -> bool:
        """True for code cells."""
        return self.cell_type == "code"

    @property
    def shown(self) -> str:
        """The cell as Jupyter numbers it after a Run All, "In [3]"; "cell N" (its index)
        where it has no such number: a script's cell, a markdown cell."""
        return shown_cells([self])


@dataclass(frozen=True)
class Notebook:
    """A parsed notebook: its path, kernel language and every cell in order."""

    path: str
    name: str
    cells: tuple[Cell, ...]
    metadata: dict = field(default_factory=dict, hash=False, compare=False)
    parameters: ParameterCell | None = None  # the cell tagged `parameters`, parsed
    content: str | None = None  # the file the cells came from, when not `path` (unsaved edits)

    @property
    def code_cells(self) -> tuple[Cell, ...]:
        """The code cells, in order."""
        return tuple(c for c in self.cells if c.is_code)

    def location(self, cell: Cell | None = None, line: int | None = None) -> Location:
        """A Location in this notebook."""
        if cell is None:
            return Location(self.name, line=line)
        return Location(self.name, cell.index, cell.cell_id, line, cell.prompt)


def source_text(nb_cell: dict) -> str:
    """A notebook cell's source as one string (nbformat allows a list of lines)."""
    source = nb_cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)
