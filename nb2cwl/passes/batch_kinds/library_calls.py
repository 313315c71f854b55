"""What library functions (TensorFlow, NumPy, Keras) do to the batch, and Keras loss objects."""

from __future__ import annotations

import ast
from collections.abc import Callable

from nb2cwl.passes.batch_kinds.kinds import REDUCED, B, C, E, M, S, U, Unsafe
from nb2cwl.passes.batch_kinds.program import Program
from nb2cwl.passes.batch_kinds.scope import Scope

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


class LibraryCallKinds:
    """Mixin for `ReplicaCode`: the kinds of library calls and of Keras loss objects."""

    program: Program

    # provided by ReplicaCode and its other mixins
    at: Callable[[Scope, ast.AST], str]
    expr: Callable[[ast.expr, Scope], str]

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
            if first in REDUCED:
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

    def _library(self, name: str) -> bool:
        return name.startswith(_LIBRARIES) and not name.startswith("tensorflow.keras")

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


def _fixes_first_dimension(shape: ast.expr) -> bool:
    """A reshape whose first dimension is a literal other than -1 merges or splits examples."""
    if isinstance(shape, (ast.List, ast.Tuple)) and shape.elts:
        first = shape.elts[0]
        if isinstance(first, ast.UnaryOp) and isinstance(first.op, ast.USub):
            return False
        return isinstance(first, ast.Constant) and first.value not in (-1, None)
    return False
