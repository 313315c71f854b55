"""Run a training step under the tf.distribute strategy that fits where it runs.

Chosen at run time, from what the step finds:

- several worker processes (a Slurm allocation of several tasks, or TF_CONFIG):
  MultiWorkerMirroredStrategy, NCCL between GPUs and RING between CPUs;
- several GPUs: MirroredStrategy with NcclAllReduce;
- NB2CWL_CPU_REPLICAS=N (N > 1): MirroredStrategy over N logical CPU devices (for CPU hosts,
  tests and benchmarks);
- otherwise TensorFlow's default strategy (one device).

Keras 3 `fit` fails under MultiWorkerMirroredStrategy (an upstream bug), so a Keras-fit step
with several workers runs with tf-keras (`TF_USE_LEGACY_KERAS=1`, `keras` bound to
`tf_keras`). Custom GradientTape loops keep Keras 3; since a Keras 3 optimizer fails inside
`strategy.run` of a `tf.function` (TF 2.21), a distributed step function runs its Python
body on each replica (eagerly): the same updates, without graph compilation.

The notebook's batch size is the global batch: each of R replicas gets batch / R examples
per step, so the updates match one device. With `scale_learning_rate` the optimizer's
learning rate of a Keras-fit model is multiplied by R (this changes results).

The workers are started in `training_workers`; the batch is cut into shares and the
replicas' values combined in `batch_shares`; what Keras does on the replicas is set in
`keras_on_replicas`; the run record (Keras fit and evaluate watched, the run folder written)
in `training_record`.

Imports nothing from nb2cwl; TensorFlow is imported only by training steps.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.util
import inspect
import json
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

from .batch_shares import Split, all_gather, scale, split_arguments
from .keras_on_replicas import (
    gradients_already_reduced,
    synchronized_batch_statistics,
    unscaled_keras_losses,
)
from .training_record import TrainingRecord
from .training_workers import port_base, slurm_tf_config, worker_count

HELPER = "__nb2cwl_training__"


# --- the strategy ------------------------------------------------------------------------


class Training(TrainingRecord):
    """The `__nb2cwl_training__` object a training step's code calls; chosen strategy inside."""

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.workers = worker_count()
        self.legacy = self.workers > 1 and plan["kind"] == "keras_fit"
        if self.legacy:  # `keras` is tf-keras already (prepare_keras, before the replays)
            _same_keras_home()
            from .capture import hide_descriptor_lines

            hide_descriptor_lines(_TF_KERAS_NATIVE_LOGS)
        import tensorflow as tf

        self.tf = tf
        self.gpus = tf.config.list_physical_devices("GPU")
        self.cpu_replicas = int(os.environ.get("NB2CWL_CPU_REPLICAS", "1") or 1)
        if not plan.get("distributed", True):
            self.strategy = tf.distribute.get_strategy()
        else:
            self.strategy = self._choose(tf)
        self.replicas = int(self.strategy.num_replicas_in_sync)
        if self.replicas > 1 or self.workers > 1:  # not what the notebook prints in a kernel
            logging.getLogger("tensorflow").addFilter(_quiet_strategy)
        self.fits: list[dict[str, Any]] = []
        self.evaluations: list[Any] = []
        self.seed: int | None = None
        self.started = time.time()

    def _choose(self, tf: Any) -> Any:
        if self.workers > 1:
            return self._multi_worker(tf)
        if len(self.gpus) > 1:
            return tf.distribute.MirroredStrategy(cross_device_ops=tf.distribute.NcclAllReduce())
        if self.cpu_replicas > 1 and not self.gpus:
            cpu = tf.config.list_physical_devices("CPU")[0]
            # before any TensorFlow op runs: the step has not loaded a value yet
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * self.cpu_replicas)
            devices = [f"/cpu:{i}" for i in range(self.cpu_replicas)]
            return tf.distribute.MirroredStrategy(devices=devices)
        return tf.distribute.get_strategy()

    def _multi_worker(self, tf: Any) -> Any:
        implementation = (tf.distribute.experimental.CommunicationImplementation.NCCL
                          if self.gpus else
                          tf.distribute.experimental.CommunicationImplementation.RING)
        options = tf.distribute.experimental.CommunicationOptions(implementation=implementation)
        resolver = None
        if "TF_CONFIG" not in os.environ and os.environ.get("SLURM_JOB_ID"):
            if self.gpus:  # SlurmClusterResolver runs nvidia-smi unless told the count
                resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
                    gpus_per_node=len(self.gpus), port_base=port_base())
            else:  # SlurmClusterResolver refuses gpus_per_node=0: describe the cluster here
                os.environ["TF_CONFIG"] = json.dumps(slurm_tf_config())
        timeout = int(float(os.environ.get("NB2CWL_RENDEZVOUS_TIMEOUT", "300")))
        sys.stderr.write(f"nb2cwl: waiting up to {timeout} s for the other training workers "
                         "(NB2CWL_RENDEZVOUS_TIMEOUT)\n")
        sys.stderr.flush()
        # TensorFlow blocks in C++ holding the interpreter: only the kernel can end the wait
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(max(timeout, 1))
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver,
                                                            communication_options=options)
        with strategy.scope():  # every worker meets here once, or the alarm ends the wait
            strategy.reduce("SUM", strategy.run(lambda: tf.constant(1.0)), axis=None)
        signal.alarm(0)
        return strategy

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """The strategy's scope: models, optimizers and checkpoints made in it are mirrored."""
        with self.strategy.scope(), self._watch_keras():
            yield

    def begin(self, namespace: dict[str, Any]) -> None:
        """Seed as the notebook does and make ops deterministic (before the cells run)."""
        seed = self.plan.get("seed")
        if seed is None:
            return
        try:
            value = int(eval(seed, namespace))  # the notebook's own seed expression
        except Exception:
            return
        import keras

        keras.utils.set_random_seed(value)
        self.tf.config.experimental.enable_op_determinism()
        self.seed = value

    # --- what the rewritten custom loop calls ---

    def split(self, value: Any) -> Any:
        """Mark `value` (the batch, or what the loop computed from it) to be split across the
        replicas along its first axis; other arguments of `run` go to every replica."""
        if self.replicas == 1 and self.workers == 1:
            return value
        return Split(value)

    def run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """`function` on every replica, each with its share of the `split` arguments; what
        it returns is the notebook's value (the code combines it: see batch_kinds)."""
        if self.replicas == 1 and self.workers == 1:
            return function(*args, **kwargs)
        if not self.legacy:  # Keras 3 optimizers fail in strategy.run of a tf.function
            function = getattr(function, "python_function", function)  # (TF 2.21): eager
        parts, sizes = split_arguments(self.tf, (args, kwargs), self.replicas)
        total = sum(sizes)
        self._shares = [size / total if total else 0.0 for size in sizes]
        distributed = self.strategy.experimental_distribute_values_from_function(
            lambda context: parts[context.replica_id_in_sync_group])
        self._running = True
        try:
            with unscaled_keras_losses(), gradients_already_reduced(), \
                    synchronized_batch_statistics():
                result = self.strategy.run(lambda both: function(*both[0], **both[1]),
                                           args=(distributed,))
        finally:
            self._running = False
        return self.tf.nest.map_structure(self._first, result)

    def _first(self, value: Any) -> Any:
        """The first local replica's value (every replica holds the same, all-reduced)."""
        try:
            return self.strategy.experimental_local_results(value)[0]
        except (TypeError, ValueError, AttributeError):
            return value

    def _replica(self) -> tuple[Any, int] | None:
        """(replica context, global replica id) inside `run` on several replicas; else None."""
        if not getattr(self, "_running", False):
            return None
        context = self.tf.distribute.get_replica_context()
        if context is None or context.num_replicas_in_sync == 1:
            return None
        index = context.replica_id_in_sync_group
        if not isinstance(index, int):
            index = int(self.tf.get_static_value(index))
        return context, index

    def all_reduce_gradients(self, gradients: Any, mode: str) -> Any:
        """The gradient of the notebook's loss over the global batch, on every replica: the
        replicas' gradients added ("sum": the loss is a sum over the batch) or weighted by
        their shares of the batch ("mean"). The optimizer then applies it as it is."""
        replica = self._replica()
        if replica is None:
            return gradients
        context, index = replica
        weight = self._shares[index] if mode == "mean" else 1.0
        flat = self.tf.nest.flatten(gradients, expand_composites=False)
        present = [i for i, g in enumerate(flat) if g is not None]
        scaled = [scale(self.tf, flat[i], weight) for i in present]
        reduced = context.all_reduce(self.tf.distribute.ReduceOp.SUM, scaled) if scaled else []
        for i, value in zip(present, reduced, strict=True):
            flat[i] = value
        return self.tf.nest.pack_sequence_as(gradients, flat)

    def total(self, value: Any, mode: str) -> Any:
        """The notebook's value of a per-replica `value`: gathered in order ("batch"),
        added ("sum") or weighted by the replicas' shares ("mean")."""
        replica = self._replica()
        if replica is None or value is None:
            return value
        context, index = replica
        tf = self.tf
        python = isinstance(value, (int, float)) and not isinstance(value, bool)
        tensor = tf.convert_to_tensor(value)
        if mode == "batch":
            result = all_gather(tf, context, tensor)
        else:
            weight = self._shares[index] if mode == "mean" else 1.0
            result = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                        scale(tf, tensor, weight))
        if python:
            return type(value)(result.numpy())
        if hasattr(value, "__array__") and not tf.is_tensor(value):
            return result.numpy()
        return result

    def share(self, value: Any) -> Any:
        """A mean (or a constant) added to a sum over the batch: this replica's share of it,
        so that the replicas' sums add up to the notebook's."""
        replica = self._replica()
        if replica is None:
            return value
        return scale(self.tf, self.tf.convert_to_tensor(value), self._shares[replica[1]])

    def once(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """A call with effects (print, a metric's update) made by the first replica only, with
        the global batch's values (its arguments were combined with `total`)."""
        replica = self._replica()
        if replica is None:
            return function(*args, **kwargs)
        if replica[1] == 0:
            return function(*args, **kwargs)
        return None

    def per_example(self, function: Any) -> Any:
        """`function`, checked on replicas to be a Keras layer or model (which works example
        by example), as the analysis assumed of a callable it could not see."""
        if self._replica() is None:
            return function
        import keras

        if isinstance(function, keras.layers.Layer):
            return function
        raise TypeError(
            f"nb2cwl: {function!r} is called on a share of the batch as if it worked example "
            "by example, but it is not a Keras layer or model; it may reduce over the batch. "
            "Run this step on one replica (unset NB2CWL_CPU_REPLICAS) or call a Keras model "
            "there")


def seed_tensorflow(seed: str, namespace: dict[str, Any]) -> int | None:
    """Seed Python, NumPy and TensorFlow with the notebook's seed expression `seed`, evaluated
    in the step's namespace; the value, or None when it cannot be evaluated here."""
    try:
        value = int(eval(seed, namespace))  # the notebook's own expression
    except Exception:  # an expression the step cannot evaluate: leave the generators
        return None
    import keras

    keras.utils.set_random_seed(value)
    return value


def prepare_keras(plan: dict[str, Any] | None) -> None:
    """Before the step replays the notebook's imports: a Keras-fit step on several workers
    gets tf-keras wherever its code imports `keras` (Keras 3 `fit` cannot run under
    MultiWorkerMirroredStrategy). tf-keras itself is imported when the code first imports
    `keras`, so the settings of earlier cells (KERAS_HOME, TF_CPP_MIN_LOG_LEVEL) come first."""
    if plan is None or plan["kind"] != "keras_fit" or worker_count() <= 1:
        return
    if importlib.util.find_spec("tf_keras") is None:
        raise SystemExit("nb2cwl: Keras fit on several workers needs tf-keras "
                         "(pip install tf-keras) where the step runs")
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    for name in [n for n in sys.modules if n == "keras" or n.startswith("keras.")]:
        del sys.modules[name]  # imported before the step (nothing of the notebook's ran yet)
    if not any(isinstance(finder, _KerasIsTfKeras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _KerasIsTfKeras())


class _KerasIsTfKeras(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import keras` (and `keras.x`) gives tf-keras' module of the same name."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname == "keras" or fullname.startswith("keras."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module("tf_keras" + spec.name[len("keras"):])

    def exec_module(self, module: Any) -> None:
        """tf-keras' module is already executed."""


def _same_keras_home() -> None:
    """The data sets tf-keras downloads or finds go where Keras 3's do: tf-keras' `get_file`
    ignores KERAS_HOME, which Keras 3 (in the kernel) honours, so a worker would load another
    copy of a data set than the kernel, or try to download one."""
    home = os.environ.get("KERAS_HOME")
    if not home:
        return
    from tf_keras.src.utils import data_utils

    original = data_utils.get_file
    if getattr(original, "__wrapped__", None) is not None:
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def get_file(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        if bound.arguments.get("cache_dir") is None:  # (the data sets pass None)
            bound.arguments["cache_dir"] = home
        return original(*bound.args, **bound.kwargs)

    for name, module in list(sys.modules.items()):  # `from ... import get_file` copies
        if name.startswith("tf_keras") and getattr(module, "get_file", None) is original:
            module.get_file = get_file


def _quiet_strategy(record: logging.LogRecord) -> bool:
    """Drop the strategy's own log lines ("Reduce to ... then broadcast", "Using
    MirroredStrategy eagerly ...", TensorFlow's retracing warnings about the strategy's own
    functions): the cell shows what it shows in the kernel."""
    if "/tensorflow/python/distribute/" in record.pathname.replace("\\", "/"):
        return False
    return _STRATEGY_CODE.search(record.getMessage()) is None


#: TensorFlow's C++ log lines when tf-keras' fit feeds NumPy arrays to several workers (a
#: generator data set): Keras 3 in the kernel does not make one, and so shows neither.
_TF_KERAS_NATIVE_LOGS = re.compile(
    r"^[IWEF]\d{4} [\d:.]+\s+\d+ (?:generator_dataset_op\.cc:\d+\] Memory patch applied|"
    r"dataset\.cc:\d+\] Input of GeneratorDatasetOp::Dataset will not be optimized)")
_STRATEGY_CODE = re.compile(r"\b(?:CollectiveAllReduce|MirroredStrategy|"
                            r"MultiWorkerMirroredStrategy|_batch_all_gather|cross_device_ops)\b")
