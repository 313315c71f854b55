"""Whether a value is a Keras model: built by a Keras factory, or an instance of a user class
deriving (through other user classes) from `keras.Model`, seen across the whole notebook.
"""

from __future__ import annotations

from collections.abc import Callable

from astroid import bases, nodes
from astroid import util as astroid_util
from astroid.exceptions import AstroidError

from nb2cwl.analysis.astroid_lookup import (
    MAX_DEPTH,
    assigned_values,
    definitions,
    imported_definitions,
)

Qualify = Callable[[nodes.NodeNG], "str | None"]

# Names below are as `normal_keras_name` writes them: `tensorflow.keras.X` and `tf_keras.X` as
# `keras.X`.

#: Callables that return a Keras model.
MODEL_FACTORIES = frozenset({
    "keras.Sequential", "keras.Model", "keras.models.Sequential", "keras.models.Model",
    "keras.models.load_model", "keras.saving.load_model", "keras.models.clone_model",
})
#: Base classes that make a user class a Keras model.
MODEL_CLASSES = frozenset({"keras.Model", "keras.models.Model", "keras.Sequential",
                           "keras.models.Sequential"})


def is_model_attribute(expr: nodes.NodeNG, qualify: Qualify) -> bool:
    """True for `self.X` in a method when every value the class's methods give `self.X` is
    a Keras model."""
    if not (isinstance(expr, nodes.Attribute) and isinstance(expr.expr, nodes.Name)
            and expr.expr.name == "self"):
        return False
    function = expr.scope()
    cls = function.parent if isinstance(function, nodes.FunctionDef) else None
    if not isinstance(cls, nodes.ClassDef):
        return False
    verdicts = [_value_is_model(node.parent.value, qualify, 1)
                for node in cls.nodes_of_class(nodes.AssignAttr)
                if node.attrname == expr.attrname and isinstance(node.expr, nodes.Name)
                and node.expr.name == "self" and isinstance(node.parent, nodes.Assign)]
    return bool(verdicts) and all(v is True for v in verdicts)


def known_not_keras(expr: nodes.NodeNG, qualify: Qualify) -> bool:
    """True when `expr` is something other than a Keras model (a scikit-learn estimator, a
    notebook class that is no Keras model)."""
    try:
        values = list(expr.infer())
    except (AstroidError, RecursionError):
        return False
    known = [v for v in values if v is not astroid_util.Uninferable]
    if not known or len(known) != len(values):
        return False
    for value in known:
        cls = value._proxied if isinstance(value, bases.Instance) else None
        if not isinstance(cls, nodes.ClassDef):
            return False
        if any(normal_keras_name(base.qname()) in MODEL_CLASSES or base.qname().startswith(
                ("keras.", "tensorflow.", "tf_keras.")) for base in cls.mro()):
            return False
    return True


def is_keras_model(name: nodes.Name, qualify: Qualify, depth: int) -> bool:
    """True when every value `name` may hold that the analysis can see is a Keras model."""
    if depth > MAX_DEPTH:
        return False
    verdicts = [_value_is_model(value, qualify, depth) for value in assigned_values(name)]
    return any(v is True for v in verdicts) and not any(v is False for v in verdicts)


def _value_is_model(value: nodes.NodeNG, qualify: Qualify, depth: int) -> bool | None:
    """True: a Keras model; False: something else; None: cannot tell."""
    if isinstance(value, nodes.Name):
        return is_keras_model(value, qualify, depth + 1) or None
    if not isinstance(value, nodes.Call):
        return False if isinstance(value, (nodes.Const, nodes.List, nodes.Dict)) else None
    factory = normal_keras_name(qualify(value.func)) or ""
    if factory in MODEL_FACTORIES or factory.startswith("keras.applications."):
        return True
    if not isinstance(value.func, nodes.Name):
        return None
    for definition in definitions(value.func) or imported_definitions(value.func):
        if isinstance(definition, nodes.ClassDef):
            return _is_model_class(definition, qualify, depth + 1)
        if isinstance(definition, nodes.FunctionDef):
            returns = [r.value for r in definition.nodes_of_class(nodes.Return)
                       if r.value is not None and r.scope() is definition]
            verdicts = [_value_is_model(r, qualify, depth + 1) for r in returns]
            if verdicts and all(v is True for v in verdicts):
                return True
            return False if any(v is False for v in verdicts) else None
    return None


def _is_model_class(cls: nodes.ClassDef, qualify: Qualify, depth: int) -> bool:
    """True when a base of `cls`, through user classes, is `keras.Model` (or Sequential)."""
    if depth > MAX_DEPTH:
        return False
    for base in cls.bases:
        if normal_keras_name(qualify(base)) in MODEL_CLASSES:
            return True
        if isinstance(base, nodes.Name):
            for definition in definitions(base):
                if isinstance(definition, nodes.ClassDef) and _is_model_class(
                        definition, qualify, depth + 1):
                    return True
    return False


def normal_keras_name(qualified: str | None) -> str | None:
    """`tensorflow.keras.X` and `tf_keras.X` as `keras.X`."""
    if qualified is None:
        return None
    for prefix in ("tensorflow.keras.", "tensorflow.python.keras.", "tf_keras."):
        if qualified.startswith(prefix):
            return "keras." + qualified[len(prefix):]
    return qualified

