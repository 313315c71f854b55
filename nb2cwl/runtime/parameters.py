"""The run's values of the notebook's parameters, and where a step assigns them.

The engine writes the step's inputs as JSON into its working directory (nb2cwl-parameters.json,
an InitialWorkDirRequirement). A step assigns a parameter's value where the notebook would
have it: in place of the parameters cell's assignment it replays, and, as papermill does, right
after the parameters cell when the step runs that cell itself.
"""

from __future__ import annotations

import json
import os
from typing import Any

from . import files

VALUES_FILE = "nb2cwl-parameters.json"


def raw_inputs(spec: dict[str, Any], root: str) -> dict[str, Any]:
    """The parameter ports' values as the engine wrote them ({} for a step without any)."""
    if not spec.get("parameters"):
        return {}
    with open(os.path.join(root, VALUES_FILE), encoding="utf-8") as handle:
        data = json.load(handle)
    return {k: v for k, v in data.items() if k.startswith("param_")}


def values(spec: dict[str, Any], raw: dict[str, Any], root: str) -> dict[str, Any]:
    """Each parameter's value as the notebook's code sees it; files and folders staged."""
    declared = spec.get("parameters") or {}
    found: dict[str, Any] = {}
    for name in declared.get("names", []):
        kind = declared["types"][name]
        value = raw.get(f"param_{name}")
        if kind in ("File", "Directory"):
            found[name] = _staged(value, given_path(raw, name, declared["defaults"][name]),
                                  root)
        else:
            found[name] = _typed(kind, value)
    return found


def _typed(kind: str, value: Any) -> Any:
    if kind.endswith("[]"):
        return [_typed(kind[:-2], item) for item in value or []]
    if kind == "double":
        return float(value)
    if kind in ("int", "long"):
        return int(value)
    return value


def given_path(raw: dict[str, Any], name: str, default: str) -> str:
    """The path a File or Directory parameter holds in the notebook: the one the run gave
    (`NAME_path`), else the notebook's own when the file has its name, else the file's name
    in the folder of the notebook's (a job file may name the file alone)."""
    given = raw.get(f"param_{name}_path")
    if given:
        return str(given)
    staged = (raw.get(f"param_{name}") or {}).get("basename")
    if not staged or staged == os.path.basename(default.rstrip("/")):
        return default
    return os.path.join(os.path.dirname(default.rstrip("/")), staged)


def _staged(value: dict[str, Any] | None, given: str, root: str) -> str:
    """The path the variable holds: `given`, where the staged file now is."""
    source = (value or {}).get("path")
    if os.path.isabs(given):
        return given if os.path.exists(given) or source is None else source
    if source is not None and os.path.realpath(source) != os.path.realpath(
            os.path.join(root, given)):
        files.stage(source, given, root)
    return given


def assign(names: list[str], found: dict[str, Any], namespace: dict[str, Any]) -> None:
    """Bind `names` to their run values in the user's namespace (fresh lists each time)."""
    for name in names:
        value = found[name]
        namespace[name] = list(value) if isinstance(value, list) else value
