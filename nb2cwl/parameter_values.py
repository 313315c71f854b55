"""The values a run gives the notebook's parameters: `-p NAME VALUE`, parameter files, sweeps.

`-p` reads a value as papermill does (True, False, None, an int, a float, else the text); a
list parameter's value is read as YAML (`-p layers "[32, 64]"`). A parameters file is YAML:
`NAME: VALUE`, or for a sweep file `NAME: [VALUE, ...]`. Each value must fit the parameter's
type; an int for a float parameter becomes a float. A path parameter's value is relative to the
notebook's folder, as in the kernel.

Outside a sweep a name takes one value. With `--sweep`, a name given several times (or listed
in the sweep file) is swept: the workflow runs once per combination of the swept values,
`nested_crossproduct` (every combination) or `dotproduct` (the first values together, then
the second, ...), and the other names keep one value for every combination.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML, YAMLError

from nb2cwl.errors import Location, OptionError
from nb2cwl.frontend.parameters import convert
from nb2cwl.ir.model import Parameter, Workflow

METHODS = ("nested_crossproduct", "dotproduct")


@dataclass(frozen=True)
class RunValues:
    """One value for some parameters, several for the swept ones."""

    fixed: dict[str, Any] = field(default_factory=dict)
    swept: dict[str, list[Any]] = field(default_factory=dict)
    method: str = "nested_crossproduct"

    def combinations(self) -> list[dict[str, Any]]:
        """Every combination the sweep runs, in order (one, {}, when nothing is swept)."""
        names = list(self.swept)
        if not names:
            return [{}]
        if self.method == "dotproduct":
            rows = zip(*(self.swept[n] for n in names), strict=True)
        else:
            rows = itertools.product(*(self.swept[n] for n in names))
        return [dict(zip(names, row, strict=True)) for row in rows]


def resolve(text: str) -> Any:
    """A `-p` value as papermill reads it."""
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def read_values(workflow: Workflow, pairs: list[tuple[str, str]], files: list[str],
                sweep: bool = False, sweep_file: str | None = None,
                method: str = "nested_crossproduct") -> RunValues:
    """The run's values from `-p` pairs and parameter files; raise OptionError when a name or
    value does not fit the notebook's parameters."""
    where = Location(workflow.notebook_name)
    given: dict[str, list[Any]] = {}
    for path in files:
        for name, value in yaml_mapping(path, where).items():
            given[str(name)] = [value]
    from_pairs: dict[str, list[Any]] = {}
    for name, text in pairs:
        parameter = _parameter(workflow, name, where)
        value = (_read_yaml(text, f"-p {name}", where) if parameter.type.endswith("[]")
                 else resolve(text))
        from_pairs.setdefault(name, []).append(value)
    given.update(from_pairs)  # -p wins over a parameters file
    in_sweep_file: set[str] = set()
    if sweep_file:
        for name, values in yaml_mapping(sweep_file, where).items():
            if not isinstance(values, list) or not values:
                raise OptionError(f"--sweep-file: {name} needs a list of values", where)
            given[str(name)] = list(values)
            in_sweep_file.add(str(name))
        sweep = True
    found = RunValues(method=method)
    for name, values in given.items():
        parameter = _parameter(workflow, name, where)
        checked = [_checked(parameter, value, where) for value in values]
        if len(checked) > 1 and not sweep:
            raise OptionError(f"-p {name} is given {len(checked)} times; add --sweep to run the "
                              "workflow once per value", where)
        if len(checked) > 1 or name in in_sweep_file:
            found.swept[name] = checked
        else:
            found.fixed[name] = checked[0]
    if sweep and not found.swept:
        raise OptionError("--sweep needs a parameter with several values (-p NAME V1 -p NAME "
                          "V2, or a --sweep-file)", where)
    if found.method == "dotproduct" and len({len(v) for v in found.swept.values()}) > 1:
        sizes = ", ".join(f"{n}: {len(v)}" for n, v in found.swept.items())
        raise OptionError(f"--sweep-method dotproduct pairs the values in order, so every swept "
                          f"parameter needs as many values ({sizes})", where)
    return found


def _parameter(workflow: Workflow, name: str, where: Location) -> Parameter:
    try:
        return workflow.parameter(name)
    except KeyError:
        declared = ", ".join(p.name for p in workflow.parameters)
        if not declared:
            raise OptionError(f"-p {name}: the notebook has no parameters; tag the cell that "
                              "assigns them 'parameters' (as papermill reads them)",
                              where) from None
        raise OptionError(f"-p {name}: the notebook has no parameter {name} (its parameters "
                          f"cell, {workflow.parameter_cell}, declares {declared})", where) from None


def _checked(parameter: Parameter, value: Any, where: Location) -> Any:
    try:
        return convert(_as_frontend(parameter), value)
    except ValueError as exc:
        raise OptionError(f"-p {parameter.name}: {exc}", where) from None


def _as_frontend(parameter: Parameter) -> Any:
    from nb2cwl.frontend.parameters import Parameter as Declared

    return Declared(parameter.name, parameter.type, parameter.default, parameter.line)


def _read_yaml(text: str, what: str, where: Location) -> Any:
    try:
        return YAML(typ="safe").load(io.StringIO(text))
    except YAMLError as exc:
        raise OptionError(f"{what}: not YAML: {str(exc).splitlines()[0]}", where) from None


def yaml_mapping(path: str, where: Location) -> dict[str, Any]:
    """The mapping a YAML file holds; OptionError when it holds none."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = YAML(typ="safe").load(handle)
    except OSError as exc:
        raise OptionError(f"cannot read {path}: {exc.strerror}", where) from None
    except YAMLError as exc:
        raise OptionError(f"{path} is not YAML: {str(exc).splitlines()[0]}", where) from None
    if not isinstance(data, dict):
        raise OptionError(f"{path} must map parameter names to values", where)
    return data

