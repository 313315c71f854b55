"""What Keras and TensorFlow are made to do while the replicas run a rewritten training step:
apply the gradients the step all-reduced itself as they are, normalise batches with the global
batch's statistics, and leave a loss object's value unscaled.

Imports nothing from nb2cwl; Keras is imported only when the step runs on replicas.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def gradients_already_reduced() -> Iterator[None]:
    """The rewritten step all-reduces its gradients itself (`all_reduce_gradients`): a Keras 3
    optimizer applies them as they are instead of summing the replicas' again."""
    try:
        from keras.src.backend.tensorflow.optimizer import TFOptimizer
    except ImportError:
        yield
        return
    reduce = TFOptimizer._all_reduce_sum_gradients
    TFOptimizer._all_reduce_sum_gradients = lambda self, grads_and_vars: list(grads_and_vars)
    others = _other_optimizers()
    for cls, _ in others:
        cls.apply_gradients = _refuse_apply
    try:
        yield
    finally:
        TFOptimizer._all_reduce_sum_gradients = reduce
        for cls, apply in others:
            cls.apply_gradients = apply


def _other_optimizers() -> list[tuple[type, Any]]:
    """Optimizer classes other than Keras 3's that sum the replicas' gradients themselves
    (TF1's tf.compat.v1.train optimizers, tf-keras'): the rewritten step cannot use them."""
    found = []
    try:
        from tensorflow.python.training.optimizer import Optimizer as TF1Optimizer

        found.append((TF1Optimizer, TF1Optimizer.apply_gradients))
    except ImportError:
        pass
    legacy = sys.modules.get("tf_keras")
    if legacy is not None:
        for cls in {legacy.optimizers.Optimizer, legacy.optimizers.legacy.Optimizer}:
            found.append((cls, cls.apply_gradients))
    return found


def _refuse_apply(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(
        f"nb2cwl: {type(self).__name__} sums the replicas' gradients itself, and the step's "
        "gradients are already the global batch's: it would apply them once per replica. "
        "Use a Keras 3 optimizer (keras.optimizers), or run this step on one replica "
        "(unset NB2CWL_CPU_REPLICAS)")


@contextlib.contextmanager
def synchronized_batch_statistics() -> Iterator[None]:
    """BatchNormalization normalises with the global batch's mean and variance (all-reduced),
    as on one device, instead of each replica's share's."""
    try:
        from keras.src import ops
        from keras.src.layers.normalization.batch_normalization import BatchNormalization
    except ImportError:
        yield
        return
    moments = BatchNormalization._moments

    def synchronized(self: Any, inputs: Any, mask: Any) -> Any:
        if mask is None:
            return ops.moments(inputs, axes=self._reduction_axes, synchronized=True)
        return moments(self, inputs, mask)

    BatchNormalization._moments = synchronized
    try:
        yield
    finally:
        BatchNormalization._moments = moments


@contextlib.contextmanager
def unscaled_keras_losses() -> Iterator[None]:
    """Keras 3 divides a loss object's value by the replica count under a strategy, where a
    loss the notebook computes itself (tf.reduce_mean) is not: in the rewritten loop every
    replica's loss is the mean over its own share of the batch, its gradients are
    all-reduced by that share (all_reduce_gradients), and what the step returns is combined
    into the notebook's value. Keras' own fit scales and unscales by itself; it is not
    affected."""
    try:
        from keras.src.losses import loss as keras_loss
    except ImportError:  # tf-keras or another Keras: nothing to undo
        yield
        return
    scale = keras_loss.scale_loss_for_distribution
    keras_loss.scale_loss_for_distribution = lambda value: value
    try:
        yield
    finally:
        keras_loss.scale_loss_for_distribution = scale

