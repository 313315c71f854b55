"""Type inference with astroid, kept away from heavy libraries and bounded in cost."""

from __future__ import annotations

import astroid
from astroid import nodes
from astroid.exceptions import AstroidError

from nb2cwl.analysis import knowledge as kb

_MAX_BINDINGS = 8


class _Packages(set):
    """astroid's denied modules, with their submodules: astroid looks a module's name up in
    the set, and `sklearn` alone would leave `sklearn.ensemble` (seconds of parsing) to it."""

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        parts = name.split(".")
        return any(set.__contains__(self, ".".join(parts[:end]))
                   for end in range(1, len(parts) + 1))


class AstroidInferrer:
    """astroid inference of a receiver's type, kept away from heavy libraries, memoised."""

    def __init__(self) -> None:
        denied = astroid.MANAGER.module_denylist
        if not isinstance(denied, _Packages):
            denied = _Packages(denied)
            astroid.MANAGER.module_denylist = denied
            astroid.MANAGER.brain["module_denylist"] = denied
        denied.update(kb.INFERENCE_DENYLIST)
        astroid.MANAGER.max_inferable_values = 20

    def __call__(self, node: nodes.NodeNG) -> str | None:
        if isinstance(node, nodes.Name):
            # astroid scans every module-level binding of the name: keep the cost bounded
            bindings = node.root().locals.get(node.name, ())
            if len(bindings) > _MAX_BINDINGS:
                return None  # unknown type: the conservative answer
        try:
            values = list(node.infer())
        except (AstroidError, RecursionError, StopIteration, TypeError, ValueError):
            return None
        kinds: set[str] = set()
        for value in values:
            if value is astroid.Uninferable or type(value).__name__ == "UninferableBase":
                return None
            if isinstance(value, nodes.Module):
                kinds.add("module")
            elif isinstance(value, (nodes.ClassDef, nodes.FunctionDef)):
                kinds.add("class" if isinstance(value, nodes.ClassDef) else "function")
            elif isinstance(value, nodes.Const):
                kinds.add(f"builtins.{type(value.value).__name__}")
            else:
                try:
                    kinds.add(value.pytype())
                except (AttributeError, AstroidError):
                    return None
        if len(kinds) != 1:
            return None
        kind = kinds.pop()
        if kind in ("class", "function"):
            return "module"  # calling a method of a class/function object: not notebook data
        return kind
