"""A piece of code a training step runs (a cell, or a replayed definition) and its edits."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass
class Unit:
    """A piece of code the step runs: a cell, or a replayed definition."""

    key: str
    cell: int  # the notebook cell it comes from
    code: str
    tree: ast.Module = field(init=False)
    edits: dict[tuple[int, int], str] = field(default_factory=dict)
    made: set[tuple[int, int, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.tree = ast.parse(self.code)

    def span(self, node: ast.AST) -> tuple[int, int]:
        """`node`'s start and end as character offsets into the code."""
        return (self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                self.offset(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def offset(self, line: int, byte_column: int) -> int:
        lines = self.code.splitlines(keepends=True)
        column = len(lines[line - 1].encode("utf-8")[:byte_column].decode("utf-8"))
        return sum(len(x) for x in lines[:line - 1]) + column

    def edit(self, start: int, end: int, text: str) -> None:
        """Replace code[start:end] by `text` (insertions have start == end); an edit already
        made (the same function analysed again) is made once."""
        if (start, end, text) in self.made:
            return
        self.made.add((start, end, text))
        key = (start, end)
        if key in self.edits and start == end:
            self.edits[key] = self.edits[key] + text if text.startswith(")") else (
                text + self.edits[key])
            return
        self.edits[key] = text

    def wrap(self, node: ast.AST, opening: str, closing: str = ")") -> None:
        start, end = self.span(node)
        self.edit(start, start, opening)
        self.edit(end, end, closing)

    def rewritten(self, start: int = 0, end: int | None = None) -> str:
        """The code (or code[start:end]) with the edits inside that range applied."""
        end = len(self.code) if end is None else end
        text = self.code[start:end]
        for (a, b), replacement in sorted(self.edits.items(), reverse=True):
            if start <= a and b <= end:
                text = text[:a - start] + replacement + text[b - start:]
        return text
