"""A notebook's parameters: the cell tagged `parameters` (papermill) or `pipeline-parameters`
(Kale), whose literal assignments become the workflow's typed inputs.

As papermill does, the values given for a run are assigned right after that cell ("injected"),
so the cell's own statements run first with the notebook's values. Each `NAME = LITERAL` (or
`NAME: TYPE = LITERAL`) at the top level of the cell is one parameter, typed from its literal:
int, float, str, bool, or a list of one of these. A string naming a file or folder that exists
beside the notebook is a File or Directory input. Any other statement of the cell (a call, an
expression, a None, a dict) stays as written, with a note, and is no input.
"""

from __future__ import annotations

import ast
import math
import os
from dataclasses import dataclass

from nb2cwl.errors import Diagnostic, Location
from nb2cwl.frontend.model import Cell

TAGS = ("parameters", "pipeline-parameters")
INJECTED_TAG = "injected-parameters"


@dataclass(frozen=True)
class Parameter:
    """One input of the workflow: its name, CWL type, the notebook's value and where it is."""

    name: str
    type: str  # "int", "long", "double", "string", "boolean", "File", "Directory", or
    #            one of these but the last two followed by "[]" for a list
    default: object
    line: int

    @property
    def is_path(self) -> bool:
        """True for File and Directory inputs (a path the workflow stages)."""
        return self.type in ("File", "Directory")

    @property
    def item_type(self) -> str | None:
        """The item type of a list parameter, None for a single value."""
        return self.type[:-2] if self.type.endswith("[]") else None


@dataclass(frozen=True)
class ParameterCell:
    """The parameters cell and what it declares."""

    cell_index: int
    cell_id: str
    parameters: tuple[Parameter, ...]
    notes: tuple[Diagnostic, ...] = ()

    def parameter(self, name: str) -> Parameter:
        """The parameter called `name` (KeyError if there is none)."""
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        raise KeyError(name)


def find_parameters(cells: tuple[Cell, ...], notebook: str, notebook_dir: str
                    ) -> ParameterCell | None:
    """The first code cell tagged as the parameters cell, parsed; None when there is none."""
    tagged = [c for c in cells if c.is_code and any(t in TAGS for t in c.tags)]
    if not tagged:
        return None
    cell = tagged[0]
    notes: list[Diagnostic] = []
    for other in tagged[1:]:
        notes.append(Diagnostic(
            "parameters-cell", "another cell is tagged as the parameters cell; as papermill "
            f"does, only the first ({cell.shown}) declares the workflow's inputs",
            Location(notebook, other.index, other.cell_id, prompt=other.prompt), "note"))
    try:
        tree = ast.parse(cell.code)
    except SyntaxError:
        return ParameterCell(cell.index, cell.cell_id, (), tuple(notes))  # reported elsewhere
    found: dict[str, Parameter] = {}
    for statement in tree.body:
        where = Location(notebook, cell.index, cell.cell_id, statement.lineno, cell.prompt)
        target, value = _assignment(statement)
        if target is None:
            if not isinstance(statement, ast.Expr) or not isinstance(
                    getattr(statement, "value", None), ast.Constant):
                notes.append(Diagnostic("parameter-baked-in", "this statement of the parameters "
                                        "cell is no parameter; it runs as written", where, "note"))
            continue
        parameter, why = _parameter(target, value, statement.lineno, notebook_dir)
        if parameter is None:
            notes.append(Diagnostic("parameter-baked-in", f"{target} is no workflow input: "
                                    f"{why}; it keeps the notebook's value", where, "note"))
            found.pop(target, None)
            continue
        found[target] = parameter  # assigned twice: the last value is the notebook's
    return ParameterCell(cell.index, cell.cell_id, tuple(found.values()), tuple(notes))


def _assignment(statement: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return statement.targets[0].id, statement.value
    if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
            and statement.value is not None and statement.simple):
        return statement.target.id, statement.value
    return None, None


def _parameter(name: str, node: ast.expr, line: int, notebook_dir: str
               ) -> tuple[Parameter | None, str]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None, "its value is computed, not a literal"
    kind = literal_type(value)
    if kind is None:
        return None, f"a {type(value).__name__} value has no workflow input type"
    if kind == "string" and value and _exists(value, notebook_dir):
        full = os.path.join(notebook_dir, value)
        kind = "Directory" if os.path.isdir(full) else "File"
    return Parameter(name, kind, value, line), ""


def _exists(path: str, notebook_dir: str) -> bool:
    if "\n" in path or "\0" in path or len(path) > 1024:
        return False
    try:
        return os.path.exists(os.path.join(notebook_dir, path))
    except (OSError, ValueError):
        return False


def literal_type(value: object) -> str | None:
    """The CWL type of a Python literal, None when it has none here."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int" if -(2 ** 31) <= value < 2 ** 31 else (
            "long" if -(2 ** 63) <= value < 2 ** 63 else None)
    if isinstance(value, float):
        return "double" if math.isfinite(value) else None
    if isinstance(value, str):
        return "string"
    if isinstance(value, list) and value:
        kinds = {literal_type(item) for item in value}
        if kinds <= {"int", "long", "double"} and "double" in kinds:
            return "double[]"
        if kinds == {"int", "long"}:
            return "long[]"
        if len(kinds) == 1 and next(iter(kinds)) in ("int", "long", "double", "string",
                                                     "boolean"):
            return f"{next(iter(kinds))}[]"
    return None


def convert(parameter: Parameter, value: object) -> object:
    """`value` as a value of `parameter`'s type; raise ValueError naming what is wrong.

    An int given for a float parameter becomes a float; anything else must already have the
    type (a path parameter takes a string)."""
    return _convert(parameter.item_type or parameter.type, value, parameter.item_type is not None,
                    parameter.name)


def _convert(kind: str, value: object, is_list: bool, name: str) -> object:
    if is_list:
        if not isinstance(value, list):
            raise ValueError(f"parameter {name} takes a list of {_plain(kind)}, not {value!r}")
        return [_convert(kind, item, False, name) for item in value]
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind in ("int", "long") and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "double" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind in ("string", "File", "Directory") and isinstance(value, str):
        return value
    raise ValueError(f"parameter {name} takes {_plain(kind)}, not {value!r}")


def _plain(kind: str) -> str:
    return {"int": "an integer", "long": "an integer", "double": "a number",
            "string": "a string", "boolean": "True or False", "File": "a file path",
            "Directory": "a folder path"}.get(kind, kind)

