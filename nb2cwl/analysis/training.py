"""Find TensorFlow training in a cell: Keras `fit`, custom GradientTape loops, TF1 sessions.

The detector reads the whole-notebook astroid module, so a model built in one cell (by a
factory function, or from a user class whose base is another user class deriving from
`keras.Model`) is recognised where another cell fits it. It only reads: the passes decide what
to do with a training cell, and the step runtime carries it out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import astroid
from astroid import bases, nodes
from astroid import util as astroid_util
from astroid.exceptions import AstroidError

Qualify = Callable[[nodes.NodeNG], "str | None"]

# Names below are as `_normal` writes them: `tensorflow.keras.X` and `tf_keras.X` as `keras.X`.

#: Callables that return a Keras model.
MODEL_FACTORIES = frozenset({
    "keras.Sequential", "keras.Model", "keras.models.Sequential", "keras.models.Model",
    "keras.models.load_model", "keras.saving.load_model", "keras.models.clone_model",
})
#: Base classes that make a user class a Keras model.
MODEL_CLASSES = frozenset({"keras.Model", "keras.models.Model", "keras.Sequential",
                           "keras.models.Sequential"})
GRADIENT_TAPE = "tensorflow.GradientTape"
TF1_SESSIONS = frozenset({
    "tensorflow.Session", "tensorflow.compat.v1.Session",
    "tensorflow.compat.v1.InteractiveSession", "tensorflow.InteractiveSession",
    "tensorflow.compat.v1.train.MonitoredSession",
    "tensorflow.compat.v1.train.MonitoredTrainingSession",
    "tensorflow.compat.v1.train.SingularMonitoredSession",
    "tensorflow.train.MonitoredSession", "tensorflow.train.MonitoredTrainingSession",
})
#: Training nb2cwl finds but runs as written, on one device (a fallback with the reason).
ONE_DEVICE = frozenset({"tf1_session", "train_on_batch", "undetermined_fit"})
#: Modules whose import makes a `.fit(...)` nb2cwl cannot place a possible Keras fit.
TENSORFLOW_MODULES = ("tensorflow", "keras", "tf_keras")
SEED_FUNCTIONS = frozenset({"tensorflow.random.set_seed", "keras.utils.set_random_seed",
                            "tensorflow.compat.v1.set_random_seed"})
_MAX_DEPTH = 4  # how far calls and class bases are followed


@dataclass(frozen=True)
class TrainingSite:
    """Training found in one cell.

    `kind` is "keras_fit", "custom_loop", or one of ONE_DEVICE: "tf1_session",
    "train_on_batch" (Keras gives every replica the whole batch) or "undetermined_fit" (a
    `.fit` nb2cwl cannot tell is a Keras model's, in a TensorFlow program). `models` name the
    notebook variables holding the Keras models trained; `step_function` is the user function
    a custom loop calls per batch (None when the tape is inline in the loop body); `loops` are
    the 1-based cell lines of the `for` statements that feed the step function batches.
    """

    kind: str
    line: int
    models: tuple[str, ...]
    step_function: str | None = None
    loops: tuple[int, ...] = ()
    detail: str = ""
    within: str | None = None  # the notebook function the training is in (the cell calls it)
    # where in `within` the loop (or fit) is: a whole-module line while the cell is analysed,
    # then (cell, line of that cell)
    origin: int | tuple[int, int] | None = None


def find_training(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    """The training in the statements `body` of one cell, or None."""
    session = _first_session(body, qualify)
    if session is not None:
        return session
    fit = _first_fit(body, qualify)
    if fit is not None:
        return fit
    loop = _first_custom_loop(body, qualify)
    if loop is not None:
        return loop
    return _in_called_functions(body, qualify) or _first_unplaced(body, qualify)


def find_seed(body: list[nodes.NodeNG], qualify: Qualify) -> tuple[int, str] | None:
    """(line, seed expression source) of the last TensorFlow/Keras seed call in `body`."""
    found = None
    for call in _calls(body):
        if _normal(qualify(call.func)) in SEED_FUNCTIONS and call.args:
            found = (call.lineno, call.args[0].as_string())
    return found


# --- TF1 ---------------------------------------------------------------------------------


def _first_session(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    for call in _calls(body):
        name = qualify(call.func)
        if name in TF1_SESSIONS:
            short = name.rsplit(".", 1)[1]
            return TrainingSite(
                "tf1_session", call.lineno, (),
                detail=f"TF1 {short} code runs a graph that tf.distribute cannot place on "
                       "several devices; the cell runs as written, on one device (port it to "
                       "Keras fit or a GradientTape loop to distribute it)")
    return None


# --- Keras fit ---------------------------------------------------------------------------


def _first_fit(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    models: list[str] = []
    line = 0
    for call in _calls(body):
        func = call.func
        if not (isinstance(func, nodes.Attribute) and func.attrname == "fit"):
            continue
        if isinstance(func.expr, nodes.Name):
            if _is_keras_model(func.expr, qualify, 0) and func.expr.name not in models:
                models.append(func.expr.name)
                line = line or call.lineno
        elif _is_model_attribute(func.expr, qualify) and func.expr.as_string() not in models:
            models.append(func.expr.as_string())  # self.model in a trainer's method
            line = line or call.lineno
    if not models:
        return None
    return TrainingSite("keras_fit", line, tuple(m for m in models if "." not in m),
                        detail=f"Keras fit of {', '.join(models)}")


def _is_model_attribute(expr: nodes.NodeNG, qualify: Qualify) -> bool:
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


def _first_unplaced(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    """Training nb2cwl runs as written: a Keras model's train_on_batch (Keras 3 gives every
    replica the whole batch under a strategy), or a `.fit(...)` in a TensorFlow program on
    something nb2cwl cannot tell is a Keras model."""
    module = body[0].root() if body else None
    if module is None or not _imports_tensorflow(module):
        return None
    for call in _calls(body):
        func = call.func
        if not isinstance(func, nodes.Attribute):
            continue
        receiver = func.expr.as_string()
        if func.attrname == "train_on_batch":
            return TrainingSite(
                "train_on_batch", call.lineno, (), detail=(
                    f"{receiver}.train_on_batch(...) trains on the whole batch; under a "
                    "tf.distribute strategy Keras would give every replica the whole batch "
                    "(no speed-up), so the cell runs as written, on one device (fit or a "
                    "GradientTape loop splits the batch)"))
        if func.attrname == "fit" and not _known_not_keras(func.expr, qualify):
            return TrainingSite(
                "undetermined_fit", call.lineno, (), detail=(
                    f"{receiver}.fit(...) may train a Keras model, but nb2cwl cannot tell what "
                    f"{receiver} is (built where the analysis cannot see, e.g. in another "
                    "module or by a library); the cell runs as written, on one device"))
    return None


def _known_not_keras(expr: nodes.NodeNG, qualify: Qualify) -> bool:
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
        if any(_normal(base.qname()) in MODEL_CLASSES or base.qname().startswith(
                ("keras.", "tensorflow.", "tf_keras.")) for base in cls.mro()):
            return False
    return True


def _imports_tensorflow(module: nodes.Module) -> bool:
    for node in module.nodes_of_class((nodes.Import, nodes.ImportFrom)):
        names = [n for n, _ in node.names] if isinstance(node, nodes.Import) else [node.modname]
        if any(name.split(".")[0] in TENSORFLOW_MODULES for name in names):
            return True
    return False


def _is_keras_model(name: nodes.Name, qualify: Qualify, depth: int) -> bool:
    """True when every value `name` may hold that the analysis can see is a Keras model."""
    if depth > _MAX_DEPTH:
        return False
    verdicts = [_value_is_model(value, qualify, depth) for value in _assigned_values(name)]
    return any(v is True for v in verdicts) and not any(v is False for v in verdicts)


def _value_is_model(value: nodes.NodeNG, qualify: Qualify, depth: int) -> bool | None:
    """True: a Keras model; False: something else; None: cannot tell."""
    if isinstance(value, nodes.Name):
        return _is_keras_model(value, qualify, depth + 1) or None
    if not isinstance(value, nodes.Call):
        return False if isinstance(value, (nodes.Const, nodes.List, nodes.Dict)) else None
    factory = _normal(qualify(value.func)) or ""
    if factory in MODEL_FACTORIES or factory.startswith("keras.applications."):
        return True
    if not isinstance(value.func, nodes.Name):
        return None
    for definition in _definitions(value.func) or _imported(value.func):
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
    if depth > _MAX_DEPTH:
        return False
    for base in cls.bases:
        if _normal(qualify(base)) in MODEL_CLASSES:
            return True
        if isinstance(base, nodes.Name):
            for definition in _definitions(base):
                if isinstance(definition, nodes.ClassDef) and _is_model_class(
                        definition, qualify, depth + 1):
                    return True
    return False


# --- custom loops ------------------------------------------------------------------------


def _first_custom_loop(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    for loop in _loops(body):
        inline = _tape_and_apply(loop.body, qualify)  # in this loop, not in one inside it
        if inline:
            return TrainingSite("custom_loop", loop.lineno, tuple(_trained_models(loop)),
                                None, (loop.lineno,),
                                "custom training loop with the tape in the loop body")
        for call in _calls(loop.body):
            function = _training_function(call, qualify, 0)
            if function is None:
                continue
            loops = tuple(sorted({inner.lineno for inner in _loops([loop])
                                  if isinstance(inner, nodes.For)
                                  and any(c is call for c in _calls(inner.body))}))
            return TrainingSite("custom_loop", loop.lineno,
                                tuple(_trained_models(function)), call.func.as_string(),
                                loops, f"custom training loop calling {call.func.as_string()}")
    return None


def _training_function(call: nodes.Call, qualify: Qualify,
                       depth: int) -> nodes.FunctionDef | None:
    """The user function (or method) `call` runs when its body records a tape and applies
    gradients once per call: a function whose tape is inside a loop of its own (a per-epoch
    function) holds the batch loop; it is not a per-batch step."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(call.func, nodes.Name):
        candidates = [d for d in _definitions(call.func) if isinstance(d, nodes.FunctionDef)]
    else:  # self.train_step(...), trainer.step(...): what astroid infers
        candidates = _callees(call, call.root())
    for definition in candidates:
        if _tape_and_apply(definition.body, qualify):
            return definition
    return None


def _tape_and_apply(body: list[nodes.NodeNG], qualify: Qualify) -> bool:
    """True when `body` itself (not a loop or function inside it) records a GradientTape and
    applies gradients (`apply_gradients`, or Keras 3's `optimizer.apply`)."""
    tape = apply = False
    for node in _nodes_outside_loops(body):
        if isinstance(node, nodes.With):
            tape = tape or any(isinstance(ctx, nodes.Call) and qualify(ctx.func) == GRADIENT_TAPE
                               for ctx, _ in node.items)
        elif isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute):
            apply = apply or node.func.attrname in ("apply_gradients", "apply")
    return tape and apply


def _trained_models(scope: nodes.NodeNG) -> list[str]:
    """Global names whose `trainable_variables`/`trainable_weights` a tape differentiates."""
    names: list[str] = []
    for node in scope.nodes_of_class(nodes.Attribute):
        if node.attrname in ("trainable_variables", "trainable_weights") and isinstance(
                node.expr, nodes.Name) and node.expr.name not in names:
            if isinstance(node.expr.scope(), nodes.FunctionDef) and node.expr.name in \
                    node.expr.scope().locals:
                continue  # a local model: nothing the notebook keeps
            names.append(node.expr.name)
    return names


# --- training inside the functions a cell calls --------------------------------------------


def _in_called_functions(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    """Training in a notebook function (or method) a statement of `body` calls, directly or
    through other notebook functions: `main()`, `train(ds)`, `Trainer().fit_model()`."""
    module = body[0].root() if body else None
    seen: set[int] = set()
    for call in _calls(body):
        for function in _callees(call, module):
            found = _search(function, qualify, module, seen, 1)
            if found is None:
                continue
            site, name = found
            return TrainingSite(
                site.kind, call.lineno, () if site.kind == "keras_fit" else site.models,
                site.step_function, (), site.detail, within=name, origin=site.line)
    return None


def _search(function: nodes.FunctionDef, qualify: Qualify, module: nodes.Module | None,
            seen: set[int], depth: int) -> tuple[TrainingSite, str] | None:
    """The training in `function`'s body, or in a notebook function it calls; with the name of
    the function it is in."""
    if depth > _MAX_DEPTH or id(function) in seen:
        return None
    seen.add(id(function))
    site = (_first_session(function.body, qualify) or _first_fit(function.body, qualify)
            or _first_custom_loop(function.body, qualify)
            or _first_unplaced(function.body, qualify))
    if site is not None:
        return site, function.name
    for call in _calls(function.body):
        for callee in _callees(call, module):
            found = _search(callee, qualify, module, seen, depth + 1)
            if found is not None:
                return found
    return None


def _callees(call: nodes.Call, module: nodes.Module | None) -> list[nodes.FunctionDef]:
    """The notebook's own functions and methods `call` may run (a class: its __init__)."""
    try:
        inferred = list(call.func.infer())
    except (AstroidError, RecursionError):
        return []
    found: list[nodes.FunctionDef] = []
    for value in inferred:
        if isinstance(value, bases.BoundMethod):
            value = value._proxied
        if isinstance(value, nodes.ClassDef):
            init = value.locals.get("__init__")
            value = init[0] if init else None
        if isinstance(value, nodes.FunctionDef) and module is not None and \
                value.root() is module:
            found.append(value)
    if not found and isinstance(call.func, nodes.Attribute):  # a decorated method
        found = _methods(call.func, module)                   # (@tf.function) infers as
    return found                                              # the decorator's result


def _methods(attribute: nodes.Attribute, module: nodes.Module | None) -> list[nodes.FunctionDef]:
    """The notebook class methods `obj.name` names, where `obj` is one of its instances."""
    try:
        owners = list(attribute.expr.infer())
    except (AstroidError, RecursionError):
        return []
    found: list[nodes.FunctionDef] = []
    for owner in owners:
        cls = owner._proxied if isinstance(owner, bases.Instance) else owner
        if not isinstance(cls, nodes.ClassDef) or module is None or cls.root() is not module:
            continue
        found += [m for m in cls.locals.get(attribute.attrname, [])
                  if isinstance(m, nodes.FunctionDef)]
    return found


# --- helpers -----------------------------------------------------------------------------


def _nodes_outside_loops(body: list[nodes.NodeNG]) -> Iterator[nodes.NodeNG]:
    """The nodes of `body`, not descending into loops, functions or classes inside it."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (nodes.For, nodes.While, nodes.FunctionDef, nodes.ClassDef,
                             nodes.Lambda)):
            continue
        stack.extend(reversed(list(node.get_children())))


def _calls(body: list[nodes.NodeNG]) -> Iterator[nodes.Call]:
    for stmt in body:
        yield from stmt.nodes_of_class(nodes.Call)


def _loops(body: list[nodes.NodeNG]) -> Iterator[nodes.For | nodes.While]:
    for stmt in body:
        yield from stmt.nodes_of_class((nodes.For, nodes.While))


def _definitions(name: nodes.Name) -> list[nodes.NodeNG]:
    """The def/class statements `name` may refer to where it stands."""
    try:
        _, assigned = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return []
    return [a for a in assigned if isinstance(a, (nodes.FunctionDef, nodes.ClassDef))]


def _imported(name: nodes.Name) -> list[nodes.NodeNG]:
    """The def/class statements an imported `name` refers to (a module beside the
    notebook: `from netlib import build_model`)."""
    try:
        _, assigned = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return []
    found: list[nodes.NodeNG] = []
    for statement in assigned:
        if not isinstance(statement, nodes.ImportFrom) or statement.level:
            continue
        original = next((n for n, alias in statement.names if (alias or n) == name.name), None)
        folder = os.path.dirname(statement.root().file or "")
        path = os.path.join(folder, *statement.modname.split(".")) + ".py"
        if original is None or not folder or not os.path.isfile(path):
            continue
        try:  # the kernel runs beside the notebook: its modules import from there
            module = astroid.MANAGER.ast_from_file(path, statement.modname)
        except (AstroidError, SyntaxError, RecursionError):
            continue
        found += [d for d in module.locals.get(original, [])
                  if isinstance(d, (nodes.FunctionDef, nodes.ClassDef))]
    return found


def _assigned_values(name: nodes.Name) -> list[nodes.NodeNG]:
    """The expressions assigned to `name` where it stands (module scope: every cell)."""
    try:
        _, assigned = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return []
    values: list[nodes.NodeNG] = []
    for target in assigned:
        parent = target.parent
        if isinstance(target, nodes.AssignName) and isinstance(parent, (nodes.Assign,
                                                                          nodes.AnnAssign)):
            if parent.value is not None:
                values.append(parent.value)
        elif isinstance(target, nodes.AssignName) and isinstance(parent, nodes.NamedExpr):
            values.append(parent.value)
    return values


def _normal(qualified: str | None) -> str | None:
    """`tensorflow.keras.X` and `tf_keras.X` as `keras.X`."""
    if qualified is None:
        return None
    for prefix in ("tensorflow.keras.", "tensorflow.python.keras.", "tf_keras."):
        if qualified.startswith(prefix):
            return "keras." + qualified[len(prefix):]
    return qualified
