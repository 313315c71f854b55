"""Find TensorFlow training in a cell: Keras `fit`, custom GradientTape loops, TF1 sessions.

The detector reads the whole-notebook astroid module, so a model built in one cell (by a
factory function, or from a user class whose base is another user class deriving from
`keras.Model`) is recognised where another cell fits it. It only reads: the passes decide what
to do with a training cell, and the step runtime carries it out.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

from astroid import nodes

from nb2cwl.analysis.astroid_lookup import (
    MAX_DEPTH,
    callees,
    calls_in,
    definitions,
    loops_in,
    nodes_outside_loops,
)
from nb2cwl.analysis.keras_models import (
    is_keras_model,
    is_model_attribute,
    known_not_keras,
    normal_keras_name,
)

Qualify = Callable[[nodes.NodeNG], "str | None"]

# Names below are as `normal_keras_name` writes them: `tensorflow.keras.X` and `tf_keras.X` as
# `keras.X`; which values are Keras models is in `keras_models`.

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
    for call in calls_in(body):
        if normal_keras_name(qualify(call.func)) in SEED_FUNCTIONS and call.args:
            found = (call.lineno, call.args[0].as_string())
    return found


# --- TF1 ---------------------------------------------------------------------------------


def _first_session(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    for call in calls_in(body):
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
    for call in calls_in(body):
        func = call.func
        if not (isinstance(func, nodes.Attribute) and func.attrname == "fit"):
            continue
        if isinstance(func.expr, nodes.Name):
            if is_keras_model(func.expr, qualify, 0) and func.expr.name not in models:
                models.append(func.expr.name)
                line = line or call.lineno
        elif is_model_attribute(func.expr, qualify) and func.expr.as_string() not in models:
            models.append(func.expr.as_string())  # self.model in a trainer's method
            line = line or call.lineno
    if not models:
        return None
    return TrainingSite("keras_fit", line, tuple(m for m in models if "." not in m),
                        detail=f"Keras fit of {', '.join(models)}")


def _first_unplaced(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    """Training nb2cwl runs as written: a Keras model's train_on_batch (Keras 3 gives every
    replica the whole batch under a strategy), or a `.fit(...)` in a TensorFlow program on
    something nb2cwl cannot tell is a Keras model."""
    module = body[0].root() if body else None
    if module is None or not _imports_tensorflow(module):
        return None
    for call in calls_in(body):
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
        if func.attrname == "fit" and not known_not_keras(func.expr, qualify):
            return TrainingSite(
                "undetermined_fit", call.lineno, (), detail=(
                    f"{receiver}.fit(...) may train a Keras model, but nb2cwl cannot tell what "
                    f"{receiver} is (built where the analysis cannot see, e.g. in another "
                    "module or by a library); the cell runs as written, on one device"))
    return None


def _imports_tensorflow(module: nodes.Module) -> bool:
    """Whether the notebook (the whole module of its cells) imports TensorFlow anywhere;
    found once per module: asked for every cell, the walk made compiling quadratic."""
    known = _TENSORFLOW_IMPORTED.get(module)
    if known is None:
        known = _TENSORFLOW_IMPORTED[module] = _walk_for_tensorflow(module)
    return known


_TENSORFLOW_IMPORTED: weakref.WeakKeyDictionary[nodes.Module, bool] = weakref.WeakKeyDictionary()


def _walk_for_tensorflow(module: nodes.Module) -> bool:
    for node in module.nodes_of_class((nodes.Import, nodes.ImportFrom)):
        names = [n for n, _ in node.names] if isinstance(node, nodes.Import) else [node.modname]
        if any(name.split(".")[0] in TENSORFLOW_MODULES for name in names):
            return True
    return False


# --- custom loops ------------------------------------------------------------------------


def _first_custom_loop(body: list[nodes.NodeNG], qualify: Qualify) -> TrainingSite | None:
    for loop in loops_in(body):
        inline = _tape_and_apply(loop.body, qualify)  # in this loop, not in one inside it
        if inline:
            return TrainingSite("custom_loop", loop.lineno, tuple(_trained_models(loop)),
                                None, (loop.lineno,),
                                "custom training loop with the tape in the loop body")
        for call in calls_in(loop.body):
            function = _training_function(call, qualify, 0)
            if function is None:
                continue
            loops = tuple(sorted({inner.lineno for inner in loops_in([loop])
                                  if isinstance(inner, nodes.For)
                                  and any(c is call for c in calls_in(inner.body))}))
            return TrainingSite("custom_loop", loop.lineno,
                                tuple(_trained_models(function)), call.func.as_string(),
                                loops, f"custom training loop calling {call.func.as_string()}")
    return None


def _training_function(call: nodes.Call, qualify: Qualify,
                       depth: int) -> nodes.FunctionDef | None:
    """The user function (or method) `call` runs when its body records a tape and applies
    gradients once per call: a function whose tape is inside a loop of its own (a per-epoch
    function) holds the batch loop; it is not a per-batch step."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(call.func, nodes.Name):
        candidates = [d for d in definitions(call.func) if isinstance(d, nodes.FunctionDef)]
    else:  # self.train_step(...), trainer.step(...): what astroid infers
        candidates = callees(call, call.root())
    for definition in candidates:
        if _tape_and_apply(definition.body, qualify):
            return definition
    return None


def _tape_and_apply(body: list[nodes.NodeNG], qualify: Qualify) -> bool:
    """True when `body` itself (not a loop or function inside it) records a GradientTape and
    applies gradients (`apply_gradients`, or Keras 3's `optimizer.apply`)."""
    tape = apply = False
    for node in nodes_outside_loops(body):
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
    for call in calls_in(body):
        for function in callees(call, module):
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
    if depth > MAX_DEPTH or id(function) in seen:
        return None
    seen.add(id(function))
    site = (_first_session(function.body, qualify) or _first_fit(function.body, qualify)
            or _first_custom_loop(function.body, qualify)
            or _first_unplaced(function.body, qualify))
    if site is not None:
        return site, function.name
    for call in calls_in(function.body):
        for callee in callees(call, module):
            found = _search(callee, qualify, module, seen, depth + 1)
            if found is not None:
                return found
    return None
