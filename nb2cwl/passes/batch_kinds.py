"""How each value of a training step depends on the batch, for running it on replicas.

On R replicas each replica runs the step's per-batch code on its share of the global batch.
That is the notebook's algorithm only when every value the code passes on is turned back into
the value the notebook computes on the whole batch. Each expression gets a kind:

- `E` per example: the batch is its leading dimension (`x`, `model(x)`, `tf.square(p - y)`);
  the replicas' values, gathered in order, are the global batch's;
- `C` the same on every replica: weights, constants, models, and gradients once all-reduced;
- `S` additive: the replicas' values sum to the global batch's (`tf.reduce_sum(e)`, a sum
  divided by a constant, `tf.nn.l2_loss(e)`);
- `M` a mean over the batch (`tf.reduce_mean(e)`, a Keras loss object): the global value is
  the replicas' values weighted by their shares of the batch;
- `B` the replica's batch size (`len(x)`, `tf.shape(x)[0]`);
- `U` anything else: nb2cwl cannot tell, and does not distribute code that passes it on.

The analysis reads code text with `ast` (cells, replayed definitions, the functions the step
calls) and records the edits that make the per-replica code compute the notebook's values:
gradients all-reduced by the loss's kind, a mean added to a sum as its share, returned values
combined by kind, and calls with effects (print, a metric's update, a list's append) made once,
with the global batch's values. When a value's kind is unknown where it matters, `Unsafe`
says which line and why.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

HELPER = "__nb2cwl_training__"

E, C, S, M, B, U = "E", "C", "S", "M", "B", "U"
_REDUCED = (S, M)

#: What a value of each kind is combined with when it leaves the replicas.
COMBINE = {E: "batch", S: "sum", M: "mean", B: "sum"}


class Unsafe(Exception):
    """The code cannot run on replicas as the notebook's algorithm (the message says why)."""


# --- what library functions do to the batch ----------------------------------------------

#: Functions that work example by example (the batch stays the leading dimension).
_PER_EXAMPLE = frozenset({
    "abs", "add", "add_n", "argmax", "argmin", "cast", "clip_by_value", "concat", "cos",
    "convert_to_tensor", "divide", "divide_no_nan", "dropout", "elu", "embedding_lookup",
    "equal", "exp", "expand_dims", "floor", "gather", "gelu", "greater", "greater_equal",
    "identity", "leaky_relu", "less", "less_equal", "log", "log1p", "log_sigmoid",
    "log_softmax", "logical_and", "logical_not", "logical_or", "matmul", "maximum", "minimum",
    "multiply", "negative", "not_equal", "one_hot", "ones_like", "pow", "relu", "relu6",
    "reshape", "round", "selu", "sigmoid", "sigmoid_cross_entropy_with_logits", "sign", "sin",
    "softmax", "softmax_cross_entropy_with_logits", "softplus", "softsign",
    "sparse_softmax_cross_entropy_with_logits", "sqrt", "square", "squared_difference",
    "squeeze", "stop_gradient", "subtract", "swish", "tanh", "truediv", "where",
    "weighted_cross_entropy_with_logits", "zeros_like", "l2_normalize", "astype", "clip",
    "log_softmax_v2", "softmax_v2", "silu", "conv1d", "conv2d", "conv3d", "conv2d_transpose",
    "depthwise_conv2d", "separable_conv2d", "max_pool", "max_pool1d", "max_pool2d",
    "max_pool3d", "avg_pool", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bias_add",
    "batch_normalization",
})
#: Per-example functions whose `axis` must not be the batch's.
_AXIS_FUNCTIONS = frozenset({"argmax", "argmin", "concat", "expand_dims", "squeeze",
                             "softmax", "log_softmax", "l2_normalize"})
#: argmax/argmin reduce axis 0 when no axis is given (tf, numpy: the flattened array).
_AXIS_DEFAULT_ZERO = frozenset({"argmax", "argmin"})
_RANDOM = frozenset({"normal", "uniform", "truncated_normal", "random_normal",
                     "random_uniform", "categorical", "gamma", "poisson", "shuffle",
                     "randint", "rand", "randn", "binomial"})
_OTHER_REDUCTIONS = frozenset({"reduce_max", "reduce_min", "reduce_prod", "reduce_logsumexp",
                               "reduce_any", "reduce_all", "reduce_std", "reduce_variance",
                               "max", "min", "prod", "logsumexp", "std", "var", "norm"})
_SUMS = frozenset({"reduce_sum", "sum", "l2_loss", "count_nonzero", "compute_average_loss"})
_MEANS = frozenset({"reduce_mean", "mean", "average"})
#: Library modules whose functions the tables describe (after alias resolution).
_LIBRARIES = ("tensorflow", "numpy", "keras.ops", "keras.backend", "keras.activations",
              "keras.random")
_EFFECTS = frozenset({"print", "summary", "tensorflow.print"})  # library calls with effects
#: Methods that change their object (used for their value, they would run on every replica).
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear",
                       "update", "add", "discard", "setdefault", "assign", "assign_add",
                       "assign_sub", "write", "send", "put"})
#: What builds a Keras layer or model (applied example by example).
_LAYER_MAKERS = ("keras.Sequential", "keras.Model", "keras.models.", "keras.layers.",
                 "keras.applications.", "keras.saving.load_model", "keras.Layer")


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


@dataclass
class Scope:
    """The names of one function (or of the lifted loop body) as the analysis walks it."""

    kinds: dict[str, str]
    function: ast.FunctionDef | None  # None: the lifted body of a loop
    unit: Unit
    nested: dict[str, ast.FunctionDef] = field(default_factory=dict)
    outer: Scope | None = None
    returns: list[str] = field(default_factory=list)
    local_names: set[str] = field(default_factory=set)
    layers: set[str] = field(default_factory=set)  # local names holding Keras layers/models
    entry: bool = False  # the step function itself: what it returns leaves the replicas

    def is_layer(self, name: str, program: Program) -> bool:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.layers:
                return True
            if name in scope.kinds:
                return False
            scope = scope.outer
        return name in program.layers

    def kind(self, name: str) -> str | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.kinds:
                return scope.kinds[name]
            scope = scope.outer
        return None


@dataclass
class Findings:
    """What the analysis found in the replicas' code."""

    gradients: int = 0  # tape.gradient calls all-reduced
    applies: int = 0  # optimizer updates


class ReplicaCode:
    """Walks the code each replica runs, giving kinds and recording the edits it needs."""

    def __init__(self, program: Program, loop_batch: set[str], recording: bool = True,
                 where: Callable[[Unit, int], str] | None = None) -> None:
        self.program = program
        self.where = where or (lambda unit, line: f"cell {unit.cell}, line {line}")
        self.loop_batch = loop_batch  # names holding the global batch where the loop runs
        self.recording = recording  # False: only the kinds (code that runs once, unchanged)
        self.findings = Findings()
        self._analysed: dict[tuple[int, tuple[tuple[str, str], ...]], str] = {}
        self._active: list[int] = []
        self._captures: list[set[tuple[str, int, int, str]]] = []  # edits of the functions
        self._rewrites: dict[int, set[tuple[str, int, int, str]]] = {}  # being analysed

    def at(self, scope: Scope, node: ast.AST) -> str:
        """Where `node` is, as the user reads it."""
        return self.where(scope.unit, node.lineno)  # type: ignore[attr-defined]

    def wrap(self, unit: Unit, node: ast.AST, opening: str, closing: str = ")") -> None:
        start, end = unit.span(node)
        self.edit(unit, start, start, opening)
        self.edit(unit, end, end, closing)

    def edit(self, unit: Unit, start: int, end: int, text: str) -> None:
        if self._captures:
            self._captures[-1].add((unit.key, start, end, text))
        if self.recording:
            unit.edit(start, end, text)

    # --- statements ---

    def body(self, statements: list[ast.stmt], scope: Scope) -> None:
        for statement in statements:
            self.statement(statement, scope)

    def statement(self, node: ast.stmt, scope: Scope) -> None:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            if value is None:
                return
            kind = self.expr(value, scope)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                self.assign(target, kind, scope, node)
        elif isinstance(node, ast.AugAssign):
            if not isinstance(node.target, ast.Name):
                raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node)}` changes an object "
                             "outside the step on every replica")
            current = scope.kind(node.target.id) or C
            added = self.expr(node.value, scope)
            if isinstance(node.op, (ast.Add, ast.Sub)) and added == S and current in (M, C):
                raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node)}` adds a sum over "
                             "the batch to a value every replica holds; write it as "
                             f"`{node.target.id} = {node.target.id} + ...`")
            kind = self._binop(node.op, current, added, node.target, node.value, scope, node)
            self.assign(node.target, kind, scope, node)
        elif isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Call):
                self.effect_call(node.value, scope)
            else:
                self.expr(node.value, scope)
        elif isinstance(node, ast.With):
            for item in node.items:
                manager = item.context_expr
                name = self.program.qualified(manager.func if isinstance(manager, ast.Call)
                                              else manager) or ""
                if not name.startswith(("tensorflow.", "keras.")):
                    raise Unsafe(f"{self.at(scope, node)}: `with {ast.unparse(manager)}` would "
                                 "be entered on every replica; nb2cwl runs TensorFlow's own "
                                 "context managers (GradientTape, name_scope, device) there")
                kind = self.expr(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, C if kind != U else U, scope, node)
            self.body(node.body, scope)
        elif isinstance(node, (ast.If, ast.While)):
            kind = self.expr(node.test, scope)
            if kind != C:
                raise Unsafe(f"{self.at(scope, node)}: the condition `{ast.unparse(node.test)}` "
                             "depends on the batch: each replica sees only its share of it "
                             "and they may take different branches")
            self.body(node.body, scope)
            self.body(node.orelse, scope)
        elif isinstance(node, ast.For):
            kind = self.expr(node.iter, scope)
            if kind != C:
                raise Unsafe(f"{self.at(scope, node)}: the loop over `{ast.unparse(node.iter)}` "
                             "depends on the batch")
            self.assign(node.target, C, scope, node)
            self.body(node.body, scope)
            self.body(node.orelse, scope)
        elif isinstance(node, ast.Return):
            self.returned(node, scope)
        elif isinstance(node, ast.Try):
            self.body(node.body, scope)
            for handler in node.handlers:
                self.body(handler.body, scope)
            self.body(node.orelse, scope)
            self.body(node.finalbody, scope)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node)}`: every replica would "
                         f"change {', '.join(node.names)}")
        elif isinstance(node, ast.FunctionDef):
            scope.nested[node.name] = node
            scope.kinds[node.name] = C
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue, ast.Import, ast.ImportFrom)):
            return
        elif isinstance(node, ast.Assert):
            self.expr(node.test, scope)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node)}` changes an "
                                 "object outside the step on every replica")
        elif isinstance(node, ast.Raise):
            return
        else:
            raise Unsafe(f"{self.at(scope, node)}: nb2cwl does not run a "
                         f"`{type(node).__name__}` statement on replicas")

    def assign(self, target: ast.expr, kind: str, scope: Scope, node: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            scope.kinds[target.id] = kind
            scope.local_names.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.assign(element.value if isinstance(element, ast.Starred) else element,
                            kind, scope, node)
        else:
            raise Unsafe(f"{self.at(scope, node)}: `{ast.unparse(node).splitlines()[0]}` changes "
                         "an object outside the step on every replica")

    def returned(self, node: ast.Return, scope: Scope) -> None:
        if node.value is None:
            return
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        kinds = [self.expr(v, scope) for v in values]
        for value, kind in zip(values, kinds, strict=True):
            if kind == U and scope.entry:
                raise Unsafe(f"{self.at(scope, value)}: cannot tell how the returned "
                             f"`{ast.unparse(value)}` depends on the batch (a per-example "
                             "value, a mean or a sum over the batch)")
            if kind in COMBINE and scope.entry:
                self.wrap(scope.unit, value, f"{HELPER}.total(", f", {COMBINE[kind]!r})")
        scope.returns.append(kinds[0] if len(kinds) == 1 else (C if set(kinds) == {C} else U))

    # --- calls made for their effects ---

    def effect_call(self, call: ast.Call, scope: Scope) -> None:
        func = call.func
        name = self.program.qualified(func) or ""
        attribute = func.attr if isinstance(func, ast.Attribute) else None
        if attribute in ("apply_gradients", "apply", "minimize"):
            self.optimizer_update(call, scope)
            return
        if attribute == "watch":  # tape.watch(x): each replica's tape
            self.expr(call, scope)
            return
        if self._library(name) and name.rsplit(".", 1)[-1] not in _EFFECTS \
                and not name.startswith("tensorflow.summary"):
            self.expr(call, scope)  # a library function for its value, which is dropped
            return
        function = self._user_function(func, scope)
        if function is not None:
            self.expr(call, scope)  # its body is analysed (and its effects made once)
            return
        # anything else has effects outside the step: once, with the global batch's values
        kinds = [self.expr(a.value if isinstance(a, ast.Starred) else a, scope)
                 for a in call.args] + [self.expr(k.value, scope) for k in call.keywords]
        if isinstance(func, ast.Attribute):
            self.expr(func.value, scope)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            raise Unsafe(f"{self.at(scope, call)}: `{ast.unparse(call)}` passes * or ** "
                         "arguments nb2cwl cannot split")
        for argument, kind in zip([*call.args, *(k.value for k in call.keywords)], kinds,
                                  strict=True):
            if kind == U:
                raise Unsafe(f"{self.at(scope, call)}: cannot tell how `{ast.unparse(argument)}`"
                             f", passed to {ast.unparse(func)}, depends on the batch")
        unit = scope.unit
        start, func_end = unit.span(func)
        paren = unit.code.index("(", func_end)
        self.edit(unit, start, start, f"{HELPER}.once(")
        self.edit(unit, paren, paren + 1, ", " if call.args or call.keywords else "")
        for argument, kind in zip([*call.args, *(k.value for k in call.keywords)], kinds,
                                  strict=True):
            if kind in COMBINE:
                self.wrap(unit, argument, f"{HELPER}.total(", f", {COMBINE[kind]!r})")

    def optimizer_update(self, call: ast.Call, scope: Scope) -> None:
        kinds = [self.expr(a, scope) for a in call.args] + [
            self.expr(k.value, scope) for k in call.keywords]
        if isinstance(call.func, ast.Attribute):
            self.expr(call.func.value, scope)
        if call.func.attr == "minimize":  # type: ignore[attr-defined]
            raise Unsafe(f"{self.at(scope, call)}: optimizer.minimize computes its own gradients; "
                         "nb2cwl distributes tape.gradient + apply_gradients")
        if any(k != C for k in kinds):
            raise Unsafe(f"{self.at(scope, call)}: the gradients applied by "
                         f"`{ast.unparse(call.func)}` do not come from a GradientTape of the "
                         "step (nb2cwl all-reduces those)")
        self.findings.applies += 1

    # --- expressions ---

    def expr(self, node: ast.expr, scope: Scope) -> str:
        kind = self._expr(node, scope)
        return kind

    def _expr(self, node: ast.expr, scope: Scope) -> str:
        if isinstance(node, ast.Constant):
            return C
        if isinstance(node, ast.Name):
            known = scope.kind(node.id)
            if known is not None:
                return known
            if node.id in self.loop_batch:
                raise Unsafe(f"{self.at(scope, node)}: the step reads the batch `{node.id}` from "
                             "outside instead of taking it as an argument")
            return C  # a global: a model, an optimizer, a constant
        if isinstance(node, ast.Attribute):
            base = self.expr(node.value, scope)
            if base == E and node.attr in ("shape",):
                return "shape"
            if base in (E, S, M, B) and node.attr in ("T", "mT"):
                return U
            return base if base != "shape" else U
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value, scope)
            index = self.expr(node.slice, scope)
            if base == "shape":
                return B if _is_zero(node.slice) else C
            if base == "shape_tensor":
                return B if _is_zero(node.slice) else C
            if base == C:
                return C if index == C else (E if index == E else U)
            if base == E:
                if index == C and _keeps_batch(node.slice):
                    return E
                return U
            if base in _REDUCED and index == C:
                return base
            return U
        if isinstance(node, ast.BinOp):
            return self._binop(node.op, self.expr(node.left, scope),
                               self.expr(node.right, scope), node.left, node.right, scope,
                               node)
        if isinstance(node, ast.UnaryOp):
            kind = self.expr(node.operand, scope)
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                return kind
            return kind if kind in (C, E) else U
        if isinstance(node, ast.BoolOp):
            kinds = {self.expr(v, scope) for v in node.values}
            return C if kinds == {C} else (E if kinds <= {C, E} else U)
        if isinstance(node, ast.Compare):
            kinds = {self.expr(v, scope) for v in [node.left, *node.comparators]}
            return C if kinds == {C} else (E if kinds <= {C, E} else U)
        if isinstance(node, ast.IfExp):
            if self.expr(node.test, scope) != C:
                return U
            a, b = self.expr(node.body, scope), self.expr(node.orelse, scope)
            return a if a == b else U
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            kinds = {self.expr(e.value if isinstance(e, ast.Starred) else e, scope)
                     for e in node.elts}
            return C if kinds <= {C} else (E if kinds == {E} else U)
        if isinstance(node, ast.Dict):
            kinds = {self.expr(v, scope) for v in node.values if v is not None}
            return C if kinds <= {C} else U
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            inner = Scope({}, scope.function, scope.unit, outer=scope)
            for generator in node.generators:
                if self.expr(generator.iter, inner) != C:
                    return U
                self.assign(generator.target, C, inner, ast.Pass(lineno=node.lineno))
                for condition in generator.ifs:
                    if self.expr(condition, inner) != C:
                        return U
            return self.expr(node.elt, inner)
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        if isinstance(node, ast.JoinedStr):
            kinds = {self.expr(v, scope) for v in node.values}
            return C if kinds <= {C} else U
        if isinstance(node, ast.FormattedValue):
            return self.expr(node.value, scope)
        if isinstance(node, ast.Slice):
            parts = [p for p in (node.lower, node.upper, node.step) if p is not None]
            return C if all(self.expr(p, scope) == C for p in parts) else U
        if isinstance(node, ast.Lambda):
            return C
        if isinstance(node, ast.NamedExpr):
            kind = self.expr(node.value, scope)
            self.assign(node.target, kind, scope, ast.Pass(lineno=node.lineno))
            return kind
        return U

    def _binop(self, op: ast.operator, a: str, b: str, left: ast.expr, right: ast.expr,
               scope: Scope, node: ast.AST) -> str:
        if isinstance(op, (ast.Add, ast.Sub)):
            if a == b and a in (C, E, S, M):
                return a
            if {a, b} == {E, C}:
                return E
            if {a, b} == {M, C}:
                return M
            if a == S and b in (M, C):  # the mean or constant counted once: as its share
                self.wrap(scope.unit, right, f"{HELPER}.share(")
                return S
            if b == S and a in (M, C):
                self.wrap(scope.unit, left, f"{HELPER}.share(")
                return S
            return U
        if isinstance(op, ast.Mult):
            if a == C:
                return b if b in (C, E, S, M) else U
            if b == C:
                return a if a in (E, S, M) else U
            return E if a == b == E else U
        if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)):
            if b == C:
                return a if a in (C, E, S, M) else U
            if a == S and b == B and isinstance(op, ast.Div):
                return M  # a sum over the replica's examples divided by their count
            if a == E and b == E:
                return E
            if a in (C, E) and b == E:
                return E
            return U
        if isinstance(op, ast.Pow):
            return a if b == C and a in (C, E) else U
        if isinstance(op, ast.MatMult):
            if a == E and b == C:
                return E
            return C if a == b == C else U
        return C if a == b == C else U

    def call(self, call: ast.Call, scope: Scope) -> str:
        func = call.func
        args = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
        keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
        if isinstance(func, ast.Attribute) and func.attr == "gradient" and args:
            return self.gradient(call, scope)
        name = self.program.qualified(func)
        if name is not None and self._library(name):
            return self.library_call(name, call, args, keywords, scope)
        if name is not None and name.startswith("keras.losses.") and \
                name.rsplit(".", 1)[-1][:1].islower():
            kinds = [self.expr(a, scope) for a in args] + [
                self.expr(v, scope) for v in keywords.values()]
            return E if E in kinds and set(kinds) <= {E, C} else (C if set(kinds) <= {C}
                                                                   else U)
        if isinstance(func, ast.Name):
            if func.id in ("len",) and args:
                return B if self.expr(args[0], scope) == E else C
            if func.id in ("float", "int", "bool", "abs"):
                return self.expr(args[0], scope) if args else C
            if func.id in ("zip", "list", "tuple", "enumerate", "range", "sum", "min", "max",
                           "sorted", "reversed", "isinstance", "getattr", "hasattr", "str",
                           "repr", "format", "round", "iter", "dict", "set", "type", "id"):
                kinds = {self.expr(a, scope) for a in args}
                if func.id == "sum" and kinds <= {C}:
                    return C
                return C if kinds <= {C} else U
            if func.id == "next":
                raise Unsafe(f"{self.at(scope, call)}: `{ast.unparse(call)}` inside the step: "
                             "each replica would draw batches of its own")
            loss = self._loss_object(func.id, scope)
            if loss is not None:
                kinds = {self.expr(a, scope) for a in [*args, *keywords.values()]}
                if kinds <= {C}:
                    return C
                return loss if kinds <= {E, C} else U
        function = self._user_function(func, scope)
        if function is not None:
            return self.user_call(function, call, args, keywords, scope)
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value, scope)
            kinds = {self.expr(a, scope) for a in [*args, *keywords.values()]}
            if base == E:
                if func.attr in ("numpy", "astype", "reshape", "__array__") and kinds <= {C}:
                    return E
                return U
            if base in _REDUCED:
                return base if func.attr in ("numpy", "item", "__float__") else U
            if base == B:
                return B if func.attr in ("numpy", "item") else U
            if base != C:
                return U
            if func.attr in _MUTATORS:
                raise Unsafe(f"{self.at(scope, call)}: `{ast.unparse(call)}` changes "
                             f"{ast.unparse(func.value)} on every replica")
            if kinds <= {C}:
                return C
            methods = self.program.methods.get(func.attr, [])
            if methods:  # a method of a notebook class: what its body does
                results = set()
                for method in methods:
                    parameters = [a.arg for a in method.args.posonlyargs + method.args.args]
                    bound = dict.fromkeys(parameters, C)
                    for index, argument in enumerate(args):
                        if index + 1 < len(parameters):
                            bound[parameters[index + 1]] = self.expr(argument, scope)
                    for key, value in keywords.items():
                        bound[key] = self.expr(value, scope)
                    results.add(self.function(method, bound, None))
                return results.pop() if len(results) == 1 else U
        else:
            self.expr(func, scope)
            kinds = {self.expr(a, scope) for a in [*args, *keywords.values()]}
        if kinds <= {C}:
            return C
        if not kinds <= {E, C}:
            return U
        # a Keras layer or model works example by example; another callable object (held in
        # an attribute, or passed in) is checked where it runs: the step stops rather than
        # treat a loss object or a reduction as per-example
        if not (isinstance(func, ast.Name) and scope.is_layer(func.id, self.program)):
            self.wrap(scope.unit, func, f"{HELPER}.per_example(")
        return E

    def gradient(self, call: ast.Call, scope: Scope) -> str:
        target = call.args[0]
        kind = self.expr(target, scope)
        for other in [*call.args[1:], *(k.value for k in call.keywords)]:
            self.expr(other, scope)
        if kind in (U, B):
            raise Unsafe(f"{self.at(scope, call)}: cannot tell how the loss "
                         f"`{ast.unparse(target)}` depends on the batch: nb2cwl distributes "
                         "a loss that is a mean or a sum over the batch (or a sum of such "
                         "terms), so the replicas' gradients add up to the global batch's")
        mode = "mean" if kind in (M, C) else "sum"
        self.wrap(scope.unit, call, f"{HELPER}.all_reduce_gradients(", f", {mode!r})")
        self.findings.gradients += 1
        return C

    def library_call(self, name: str, call: ast.Call, args: list[ast.expr],
                     keywords: dict[str, ast.expr], scope: Scope) -> str:
        short = name.rsplit(".", 1)[-1]
        kinds = [self.expr(a, scope) for a in args]
        keyword_kinds = {k: self.expr(v, scope) for k, v in keywords.items()}
        everything = set(kinds) | set(keyword_kinds.values())
        if short in _RANDOM or ".random." in name:
            shape = keywords.get("shape", args[0] if args else None)
            if shape is not None and self._per_example_shape(shape, scope):
                return E  # each replica draws for its own examples
            raise Unsafe(f"{self.at(scope, call)}: `{ast.unparse(call)}` draws random numbers of "
                         "a fixed shape on every replica; draw them for the replica's "
                         "examples (a shape from tf.shape(x)[0]) or before the step")
        if everything <= {C}:
            if short in ("shape",) and args:
                return C
            return C
        if short == "shape" and kinds and kinds[0] == E:
            return "shape_tensor"
        if short in ("size",):
            return U
        axis = keywords.get("axis", args[1] if len(args) > 1 and short not in (
            "clip_by_value", "where", "matmul", "one_hot", "gather", "embedding_lookup",
            "compute_average_loss") else None)
        if short in _OTHER_REDUCTIONS:  # per example over other axes; never over the batch
            first = kinds[0] if kinds else C
            if first == E and axis is not None and not _mentions_zero(axis) and \
                    self.expr(axis, scope) == C:
                return E
            return U
        if short in _SUMS or short in _MEANS:
            first = kinds[0] if kinds else C
            if short == "compute_average_loss":
                return S if first == E else U
            if first == E:
                if axis is None or _mentions_zero(axis):
                    return S if short in _SUMS else M
                return E if self.expr(axis, scope) == C else U
            if first in _REDUCED:
                return first
            return U
        if short == "cast" and kinds and kinds[0] in (B, S, M):
            return kinds[0]
        if short in _PER_EXAMPLE:
            if short in _AXIS_FUNCTIONS:
                if axis is None and short in _AXIS_DEFAULT_ZERO and name.startswith(
                        ("tensorflow", "numpy")):
                    return U
                if axis is not None and _mentions_zero(axis):
                    return U
            if short == "reshape" and len(args) > 1 and _fixes_first_dimension(args[1]):
                return U
            if short == "matmul" and len(kinds) > 1 and kinds[1] != C:
                return U
            if short in ("gather", "embedding_lookup") and kinds and kinds[0] != C:
                return U
            return E if everything <= {E, C} else U
        return U

    def _per_example_shape(self, shape: ast.expr, scope: Scope) -> bool:
        """True for a shape whose first dimension is the replica's batch size."""
        if isinstance(shape, (ast.Tuple, ast.List)) and shape.elts:
            return self.expr(shape.elts[0], scope) == B
        return self.expr(shape, scope) == "shape_tensor"

    def user_call(self, function: ast.FunctionDef, call: ast.Call, args: list[ast.expr],
                  keywords: dict[str, ast.expr], scope: Scope) -> str:
        parameters = [a.arg for a in function.args.posonlyargs + function.args.args]
        bound: dict[str, str] = dict.fromkeys(parameters, C)
        layers: set[str] = set()
        for index, argument in enumerate(args):
            kind = self.expr(argument, scope)
            if index < len(parameters):
                bound[parameters[index]] = kind
                if isinstance(argument, ast.Name) and scope.is_layer(argument.id,
                                                                      self.program):
                    layers.add(parameters[index])
            elif function.args.vararg is not None:
                bound[function.args.vararg.arg] = U if kind != C else C
        for key, value in keywords.items():
            bound[key] = self.expr(value, scope)
            if isinstance(value, ast.Name) and scope.is_layer(value.id, self.program):
                layers.add(key)
        for extra in function.args.kwonlyargs:
            bound.setdefault(extra.arg, C)
        return self.function(function, bound, scope, layers)

    def function(self, function: ast.FunctionDef, bound: dict[str, str],
                 caller: Scope | None, layers: set[str] | None = None,
                 entry: bool = False) -> str:
        """Analyse `function`'s body on the replicas with its parameters of kinds `bound`;
        the kind of what it returns."""
        key = (id(function), tuple(sorted(bound.items())) + tuple(
            ("layer", n) for n in sorted(layers or ())) + (("entry", str(entry)),))
        if key in self._analysed:
            return self._analysed[key]
        if len(self._active) > 4 or id(function) in self._active:
            where = self.where(self._unit_of(function, caller), function.lineno)
            raise Unsafe(f"{where}: {function.name} calls itself or nests too "
                         "deep for nb2cwl to follow")
        unit = self._unit_of(function, caller)
        outer = caller if caller is not None and function.name in _nested_names(caller) else None
        scope = Scope(dict(bound), function, unit, outer=outer, layers=set(layers or ()),
                      entry=entry)
        for node in function.body:
            if isinstance(node, ast.FunctionDef):
                scope.nested[node.name] = node
        self._active.append(id(function))
        self._captures.append(set())
        try:
            self.body(function.body, scope)
        finally:
            self._active.pop()
            edits = self._captures.pop()
        if self._rewrites.setdefault(id(function), edits) != edits:
            where = self.where(unit, function.lineno)
            raise Unsafe(f"{where}: {function.name} is called with values that "
                         "need different rewrites on the replicas (a per-example value in one "
                         "call, the same value everywhere in another); nb2cwl rewrites a "
                         "function one way")
        kinds = set(scope.returns)
        result = C if not kinds else (kinds.pop() if len(kinds) == 1 else U)
        self._analysed[key] = result
        return result

    # --- names ---

    def _library(self, name: str) -> bool:
        return name.startswith(_LIBRARIES) and not name.startswith("tensorflow.keras")

    def _user_function(self, func: ast.expr, scope: Scope) -> ast.FunctionDef | None:
        if not isinstance(func, ast.Name):
            return None
        current: Scope | None = scope
        while current is not None:
            if func.id in current.nested:
                return current.nested[func.id]
            if func.id in current.kinds and func.id not in current.nested:
                return None  # a local value (a model, a layer)
            current = current.outer
        found = self.program.functions.get(func.id)
        return found[1] if found else None

    def _unit_of(self, function: ast.FunctionDef, caller: Scope | None) -> Unit:
        if id(function) in self.program.owner:
            return self.program.owner[id(function)]
        for unit in self.program.units:
            if any(node is function for node in ast.walk(unit.tree)):
                self.program.owner[id(function)] = unit
                return unit
        assert caller is not None
        return caller.unit

    def _loss_object(self, name: str, scope: Scope) -> str | None:
        """M (S, E) when `name` holds a Keras loss object reducing by mean (sum, none)."""
        values = list(self.program.assigned.get(name, []))
        if scope.function is not None:
            values = [n.value for n in ast.walk(scope.function)
                      if isinstance(n, ast.Assign) and any(
                          isinstance(t, ast.Name) and t.id == name for t in n.targets)] or values
        verdicts = set()
        for value in values:
            if not isinstance(value, ast.Call):
                return None
            qualified = self.program.qualified(value.func) or ""
            short = qualified.rsplit(".", 1)[-1]
            if not (qualified.startswith("keras.losses.") and short[:1].isupper()):
                return None
            reduction = next((k.value for k in value.keywords if k.arg == "reduction"), None)
            if reduction is None or (isinstance(reduction, ast.Constant) and reduction.value in (
                    "sum_over_batch_size", "auto")):
                verdicts.add(M)
            elif isinstance(reduction, ast.Constant) and reduction.value == "sum":
                verdicts.add(S)
            elif isinstance(reduction, ast.Constant) and reduction.value in ("none", None):
                verdicts.add(E)
            else:
                return U
        return verdicts.pop() if len(verdicts) == 1 else None


def _nested_names(scope: Scope) -> set[str]:
    names: set[str] = set()
    current: Scope | None = scope
    while current is not None:
        names |= set(current.nested)
        current = current.outer
    return names


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def _mentions_zero(axis: ast.expr) -> bool:
    """True when the axis expression names the batch axis (0), or is not a literal."""
    values = axis.elts if isinstance(axis, (ast.Tuple, ast.List)) else [axis]
    for value in values:
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(
                value.operand, ast.Constant):
            continue  # -1, -2: counted from the end, not the batch's axis
        if not isinstance(value, ast.Constant) or value.value == 0 or value.value is None:
            return True
    return False


def _keeps_batch(index: ast.expr) -> bool:
    """`x[:, 0]`, `x[..., :3]`: indexing that keeps every example."""
    first = index.elts[0] if isinstance(index, ast.Tuple) and index.elts else index
    if isinstance(first, ast.Slice):
        return first.lower is None and first.upper is None and first.step is None and \
            isinstance(index, ast.Tuple)
    return isinstance(first, ast.Constant) and first.value is Ellipsis


def _fixes_first_dimension(shape: ast.expr) -> bool:
    """A reshape whose first dimension is a literal other than -1 merges or splits examples."""
    if isinstance(shape, (ast.List, ast.Tuple)) and shape.elts:
        first = shape.elts[0]
        if isinstance(first, ast.UnaryOp) and isinstance(first.op, ast.USub):
            return False
        return isinstance(first, ast.Constant) and first.value not in (-1, None)
    return False


def names_read(nodes: list[ast.AST]) -> Iterator[ast.Name]:
    """Every Name loaded in `nodes`."""
    for node in nodes:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                yield inner
