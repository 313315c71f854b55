"""The code a training step runs: imports, definitions and assignments across its units."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from nb2cwl.passes.batch_kinds.unit import Unit

#: What builds a Keras layer or model (applied example by example).
_LAYER_MAKERS = ("keras.Sequential", "keras.Model", "keras.models.", "keras.layers.",
                 "keras.applications.", "keras.saving.load_model", "keras.Layer")




class Program:
    """The code a training step runs: imports, definitions and assignments across units."""

    def __init__(self, units: list[Unit]) -> None:
        self.units = units
        self.aliases: dict[str, str] = {}
        self.functions: dict[str, tuple[Unit, ast.FunctionDef]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.methods: dict[str, list[ast.FunctionDef]] = {}  # the classes' methods by name
        self.assigned: dict[str, list[ast.expr]] = {}
        self.owner: dict[int, Unit] = {}  # id(node) -> unit, for the functions
        self.where: Callable[[Unit, int], str] = lambda unit, line: (
            f"cell {unit.cell}, line {line}")
        for unit in units:
            for node in ast.walk(unit.tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        self.aliases[alias.asname or alias.name.split(".")[0]] = (
                            alias.name if alias.asname else alias.name.split(".")[0])
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for alias in node.names:
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            self.assigned.setdefault(target.id, []).append(node.value)
            for node in unit.tree.body:
                if isinstance(node, ast.FunctionDef):
                    self.functions[node.name] = (unit, node)
                    self.owner[id(node)] = unit
                elif isinstance(node, ast.ClassDef):
                    self.classes[node.name] = node
                    for member in node.body:
                        if isinstance(member, ast.FunctionDef):
                            self.methods.setdefault(member.name, []).append(member)
                            self.owner[id(member)] = unit
        self.layers = {name for name in self.assigned if self._holds_layer(name, 0)}

    def _holds_layer(self, name: str, depth: int) -> bool:
        """True when every value assigned to `name` is a Keras layer or model."""
        values = self.assigned.get(name, [])
        return bool(values) and all(self.makes_layer(v, depth) for v in values)

    def makes_layer(self, value: ast.expr, depth: int = 0) -> bool:
        """True when `value` builds (or loads) a Keras layer or model."""
        if depth > 4:
            return False
        if isinstance(value, ast.Name):
            return self._holds_layer(value.id, depth + 1)
        if not isinstance(value, ast.Call):
            return False
        qualified = self.qualified(value.func) or ""
        if qualified.startswith(_LAYER_MAKERS):
            return qualified.rsplit(".", 1)[-1] not in ("Input", "InputLayer")
        if isinstance(value.func, ast.Name):
            if value.func.id in self.classes:
                return self.layer_class(self.classes[value.func.id], depth + 1)
            if value.func.id in self.functions:
                function = self.functions[value.func.id][1]
                returns = [r.value for r in ast.walk(function)
                           if isinstance(r, ast.Return) and r.value is not None]
                return bool(returns) and all(self.makes_layer(r, depth + 1) for r in returns)
        return False

    def layer_class(self, cls: ast.ClassDef, depth: int = 0) -> bool:
        """True when `cls` derives (through the notebook's classes) from a Keras layer."""
        if depth > 4:
            return False
        for base in cls.bases:
            qualified = self.qualified(base) or ""
            if qualified.startswith(_LAYER_MAKERS):
                return True
            if isinstance(base, ast.Name) and base.id in self.classes and self.layer_class(
                    self.classes[base.id], depth + 1):
                return True
        return False

    def qualified(self, node: ast.expr) -> str | None:
        """`tf.math.reduce_mean` as `tensorflow.math.reduce_mean`; keras as `keras.`."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id)
        if base is None:
            return None
        name = ".".join([base, *reversed(parts)])
        for prefix in ("tensorflow.keras.", "tensorflow.python.keras.", "tf_keras."):
            if name.startswith(prefix):
                return "keras." + name[len(prefix):]
        if name.startswith("tensorflow.losses."):  # TF 2's alias of keras.losses
            return "keras.losses." + name[len("tensorflow.losses."):]
        if name.startswith("tensorflow.metrics."):
            return "keras.metrics." + name[len("tensorflow.metrics."):]
        return name

    def unit_of(self, function: ast.FunctionDef) -> Unit:
        return self.owner[id(function)]


def names_read(nodes: list[ast.AST]) -> Iterator[ast.Name]:
    """Every Name loaded in `nodes`."""
    for node in nodes:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                yield inner
