"""Run a training step under the tf.distribute strategy that fits where it runs.

Chosen at run time, from what the step finds:

- several worker processes (a Slurm allocation of several tasks, or TF_CONFIG):
  MultiWorkerMirroredStrategy, NCCL between GPUs and RING between CPUs;
- several GPUs: MirroredStrategy with NcclAllReduce;
- NB2CWL_CPU_REPLICAS=N (N > 1): MirroredStrategy over N logical CPU devices (for CPU hosts,
  tests and benchmarks);
- otherwise TensorFlow's default strategy (one device).

The launcher (`launch_workers`) starts one worker per Slurm task with `srun`, or
NB2CWL_LOCAL_WORKERS=N local processes joined through TF_CONFIG on localhost; a worker that
fails has the others killed, and a worker whose peers never arrive gives up after
NB2CWL_RENDEZVOUS_TIMEOUT seconds (default 300), since TensorFlow would wait an hour.

Keras 3 `fit` fails under MultiWorkerMirroredStrategy (an upstream bug), so a Keras-fit step
with several workers runs with tf-keras (`TF_USE_LEGACY_KERAS=1`, `keras` bound to
`tf_keras`). Custom GradientTape loops keep Keras 3; since a Keras 3 optimizer fails inside
`strategy.run` of a `tf.function` (TF 2.21), a distributed step function runs its Python
body on each replica (eagerly): the same updates, without graph compilation.

The notebook's batch size is the global batch: each of R replicas gets batch / R examples
per step, so the updates match one device. With `scale_learning_rate` the optimizer's
learning rate of a Keras-fit model is multiplied by R (this changes results).

Imports nothing from nb2cwl; TensorFlow is imported only by training steps.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

WORKER_FLAG = "NB2CWL_WORKER"
HELPER = "__nb2cwl_training__"


# --- launching the workers ---------------------------------------------------------------


def launch_workers(argv: list[str]) -> int | None:
    """Start this step's worker processes and wait for them; None when this process is the
    only worker (or one of several already started)."""
    if os.environ.get(WORKER_FLAG):
        _enter_worker_directory(argv)
        return None
    tasks = int(os.environ.get("SLURM_NTASKS", "1") or 1)
    if os.environ.get("SLURM_JOB_ID") and tasks > 1 and shutil.which("srun"):
        command = ["srun", "--kill-on-bad-exit=1", f"--ntasks={tasks}",
                   f"--export=ALL,{WORKER_FLAG}=1", sys.executable,
                   os.path.abspath(sys.argv[0]), *argv]
        return _wait_all([subprocess.Popen(command)])
    local = int(os.environ.get("NB2CWL_LOCAL_WORKERS", "1") or 1)
    if local > 1:
        return _local_workers(local, argv)
    return None


def _local_workers(count: int, argv: list[str]) -> int:
    ports = _free_ports(count)
    cluster = {"worker": [f"localhost:{port}" for port in ports]}
    script = os.path.abspath(sys.argv[0])
    absolute = _absolute_paths(argv)
    processes, scratch = [], []
    for index in range(count):
        env = dict(os.environ, **{WORKER_FLAG: "1", "TF_CONFIG": json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}})})
        cwd = None
        if index:  # other workers write their copies elsewhere: only the chief's are kept
            cwd = tempfile.mkdtemp(prefix=f"nb2cwl-worker{index}-")
            scratch.append(cwd)
        processes.append(subprocess.Popen([sys.executable, script, *absolute], env=env,
                                          cwd=cwd))
    try:
        return _wait_all(processes)
    finally:
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)


def _wait_all(processes: list[subprocess.Popen]) -> int:
    """Wait for every worker; when one fails, kill the rest (they would wait for it)."""
    try:
        while True:
            codes = [p.poll() for p in processes]
            failed = [c for c in codes if c not in (None, 0)]
            if failed:
                for process in processes:
                    if process.poll() is None:
                        process.kill()  # SIGKILL: a waiting TensorFlow worker ignores SIGTERM
                sys.stderr.write(f"nb2cwl: a training worker failed (exit {failed[0]}); "
                                 "the other workers were stopped\n")
                return failed[0] if failed[0] > 0 else 1
            if all(c == 0 for c in codes):
                return 0
            time.sleep(0.1)
    except KeyboardInterrupt:
        for process in processes:
            process.kill()
        raise


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("localhost", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _enter_worker_directory(argv: list[str]) -> None:
    """A Slurm worker other than the first runs in a scratch folder (its copies are dropped)."""
    if int(os.environ.get("SLURM_PROCID", "0") or 0) == 0:
        return
    argv[:] = _absolute_paths(argv)
    os.chdir(tempfile.mkdtemp(prefix="nb2cwl-worker-"))


def _absolute_paths(argv: list[str]) -> list[str]:
    """The step's arguments with relative paths made absolute (for a worker elsewhere)."""
    return [os.path.abspath(a) if not a.startswith("--") and os.path.exists(a) else a
            for a in argv]


def is_chief() -> bool:
    """True for the worker whose outputs the workflow keeps."""
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    index = config.get("task", {}).get("index", 0)
    return index == 0 and int(os.environ.get("SLURM_PROCID", "0") or 0) == 0


# --- the strategy ------------------------------------------------------------------------


class Training:
    """The `__nb2cwl_training__` object a training step's code calls; chosen strategy inside."""

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.workers = _worker_count()
        self.legacy = self.workers > 1 and plan["kind"] == "keras_fit"
        if self.legacy:
            _use_legacy_keras()
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
                    gpus_per_node=len(self.gpus), port_base=_port_base())
            else:  # SlurmClusterResolver refuses gpus_per_node=0: describe the cluster here
                os.environ["TF_CONFIG"] = json.dumps(_slurm_tf_config())
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
        return _Split(value)

    def run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """`function` on every replica, each with its share of the `split` arguments; what
        it returns is the notebook's value (the code combines it: see batch_kinds)."""
        if self.replicas == 1 and self.workers == 1:
            return function(*args, **kwargs)
        if not self.legacy:  # Keras 3 optimizers fail in strategy.run of a tf.function
            function = getattr(function, "python_function", function)  # (TF 2.21): eager
        parts, sizes = _split_arguments(self.tf, (args, kwargs), self.replicas)
        total = sum(sizes)
        self._shares = [size / total if total else 0.0 for size in sizes]
        distributed = self.strategy.experimental_distribute_values_from_function(
            lambda context: parts[context.replica_id_in_sync_group])
        self._running = True
        try:
            with _unscaled_keras_losses(), _gradients_already_reduced(), \
                    _synchronized_batch_statistics():
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
        scaled = [_scale(self.tf, flat[i], weight) for i in present]
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
            result = _all_gather(tf, context, tensor)
        else:
            weight = self._shares[index] if mode == "mean" else 1.0
            result = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                        _scale(tf, tensor, weight))
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
        return _scale(self.tf, self.tf.convert_to_tensor(value), self._shares[replica[1]])

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

    # --- Keras fit and evaluate, watched for the run record ---

    @contextlib.contextmanager
    def _watch_keras(self) -> Iterator[None]:
        import keras

        model_class = keras.Model
        fit, evaluate = model_class.fit, model_class.evaluate
        training = self

        def watched_fit(model: Any, *args: Any, **kwargs: Any) -> Any:
            if training.plan.get("scale_learning_rate") and training.replicas > 1:
                _scale_learning_rate(model, training.replicas)
            start = time.perf_counter()
            history = fit(model, *args, **kwargs)
            seconds = time.perf_counter() - start
            training.fits.append({"seconds": seconds, "history": _plain(history.history),
                                  "epochs": len(history.epoch),
                                  "samples": _samples(args, kwargs)})
            return history

        def watched_evaluate(model: Any, *args: Any, **kwargs: Any) -> Any:
            result = evaluate(model, *args, **kwargs)
            training.evaluations.append(_plain(result))
            return result

        model_class.fit, model_class.evaluate = watched_fit, watched_evaluate
        try:
            yield
        finally:
            model_class.fit, model_class.evaluate = fit, evaluate

    # --- the run record ---

    def finish(self, namespace: dict[str, Any], out: str, step: str,
               log: str) -> str | None:
        """Write the run folder (models, history, metrics, log): `out`/training-STEP."""
        if not is_chief():
            return None
        folder = os.path.join(out, f"training-{step}")  # the workflow run versions it
        os.makedirs(folder, exist_ok=True)
        saved, problems = [], {}
        for name in self.plan.get("models", []):
            model = namespace.get(name)
            if model is None or not hasattr(model, "save"):
                continue
            try:
                model.save(os.path.join(folder, f"{name}.keras"))
                saved.append(f"{name}.keras")
            except Exception as exc:
                problems[name] = f"{type(exc).__name__}: {exc}"
        last = self.fits[-1] if self.fits else None
        if last is not None:
            _write_json(os.path.join(folder, "history.json"), last["history"])
        metrics: dict[str, Any] = {
            "step": step, "kind": self.plan["kind"],
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"),
            "strategy": type(self.strategy).__name__, "replicas": self.replicas,
            "workers": self.workers, "gpus": len(self.gpus),
            "seed": self.seed, "models": saved,
            "seconds": round(time.time() - self.started, 3),
        }
        if problems:
            metrics["models_not_saved"] = problems
        if last is not None:
            metrics["fit"] = {k: v for k, v in last.items() if k != "history"}
            if last["samples"] and last["seconds"] > 0:
                metrics["fit"]["samples_per_second"] = round(
                    last["samples"] * last["epochs"] / last["seconds"], 1)
            metrics["final"] = {k: v[-1] for k, v in last["history"].items() if v}
        if self.evaluations:
            metrics["evaluate"] = self.evaluations[-1]
        _write_json(os.path.join(folder, "metrics.json"), metrics)
        with open(os.path.join(folder, "training.log"), "w", encoding="utf-8") as handle:
            handle.write(log)
        return folder


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


def _worker_count() -> int:
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    workers = len(config.get("cluster", {}).get("worker", []))
    if workers:
        return workers
    if os.environ.get(WORKER_FLAG) and os.environ.get("SLURM_STEP_NUM_TASKS"):
        return int(os.environ["SLURM_STEP_NUM_TASKS"])
    return 1


def _use_legacy_keras() -> None:
    """Keras 3 `fit` cannot run under MultiWorkerMirroredStrategy: use tf-keras instead."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    try:
        import tf_keras
    except ImportError:
        raise SystemExit("nb2cwl: Keras fit on several workers needs tf-keras "
                         "(pip install tf-keras) where the step runs") from None
    sys.modules["keras"] = tf_keras


def _port_base() -> int:
    return 20000 + int(os.environ.get("SLURM_JOB_ID", "0")) % 10000 * 4


def _slurm_tf_config() -> dict[str, Any]:
    """TF_CONFIG for the Slurm step this worker is a task of (one port per task)."""
    hosts = subprocess.run(["scontrol", "show", "hostnames",
                            os.environ["SLURM_STEP_NODELIST"]], capture_output=True,
                           text=True, check=True).stdout.split()
    per_node = _tasks_per_node(os.environ.get("SLURM_STEP_TASKS_PER_NODE", "1"), len(hosts))
    base = _port_base()
    workers = [f"{host}:{base + local}" for host, count in zip(hosts, per_node, strict=True)
               for local in range(count)]
    return {"cluster": {"worker": workers},
            "task": {"type": "worker", "index": int(os.environ["SLURM_PROCID"])}}


def _tasks_per_node(text: str, nodes: int) -> list[int]:
    """Slurm's `2(x3),1` as [2, 2, 2, 1]."""
    counts: list[int] = []
    for part in text.split(","):
        if "(x" in part:
            value, repeat = part.split("(x")
            counts += [int(value)] * int(repeat.rstrip(")"))
        else:
            counts.append(int(part))
    return counts[:nodes] if len(counts) >= nodes else counts + [1] * (nodes - len(counts))


def _scale_learning_rate(model: Any, replicas: int) -> None:
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or getattr(optimizer, "_nb2cwl_scaled", False):
        return
    optimizer.learning_rate = float(optimizer.learning_rate) * replicas
    optimizer._nb2cwl_scaled = True


def _samples(args: tuple, kwargs: dict[str, Any]) -> int | None:
    """Training examples per epoch of a fit on arrays (None for datasets and generators)."""
    x = args[0] if args else kwargs.get("x")
    try:
        count = len(x)  # type: ignore[arg-type]
    except TypeError:
        return None
    if hasattr(x, "element_spec"):
        return None  # a tf.data.Dataset: len() counts batches
    split = kwargs.get("validation_split") or 0.0
    return int(count * (1 - split))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def _write_json(path: str, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)


class _Split:
    """An argument of `run` split along its first axis across the replicas."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _split_arguments(tf: Any, arguments: Any, replicas: int) -> tuple[list[Any], list[int]]:
    """Per replica, `arguments` with each `_Split` value's arrays cut into contiguous shares
    along their first axis (sizes differ by at most one); the shares' sizes."""
    flat = tf.nest.flatten(arguments, expand_composites=False)
    sized = []
    for item in flat:
        if isinstance(item, _Split):
            for leaf in tf.nest.flatten(item.value):
                shape = getattr(leaf, "shape", None)
                if shape is not None and len(shape) > 0:
                    sized.append(int(shape[0]))
    if not sized:
        raise ValueError("nb2cwl: the batch handed to the replicas has no first axis to split")
    if len(set(sized)) > 1:
        raise ValueError(f"nb2cwl: the batch's arrays have different first dimensions "
                         f"({sorted(set(sized))}); nb2cwl splits a batch along that axis")
    count = sized[0]
    sizes = [count // replicas + (1 if r < count % replicas else 0) for r in range(replicas)]
    bounds = [sum(sizes[:r]) for r in range(replicas + 1)]

    def cut(item: Any, r: int) -> Any:
        if not isinstance(item, _Split):
            return item

        def leaf(value: Any) -> Any:
            shape = getattr(value, "shape", None)
            if shape is None or len(shape) == 0:
                return value
            return value[bounds[r]:bounds[r + 1]]

        return tf.nest.map_structure(leaf, item.value)

    parts = [tf.nest.pack_sequence_as(arguments, [cut(item, r) for item in flat])
             for r in range(replicas)]
    return parts, sizes


def _all_gather(tf: Any, context: Any, tensor: Any) -> Any:
    """The replicas' tensors concatenated in order (all-gather takes few dtypes: others go
    through int32 or float32 and back)."""
    dtype = tensor.dtype
    if dtype in (tf.float32, tf.float16, tf.float64, tf.int32, tf.int64):
        return context.all_gather(tensor, axis=0)
    carrier = tf.float32 if dtype.is_floating else tf.int32
    return tf.cast(context.all_gather(tf.cast(tensor, carrier), axis=0), dtype)


def _scale(tf: Any, value: Any, weight: float) -> Any:
    if weight == 1.0:
        return value
    if isinstance(value, tf.IndexedSlices):
        return tf.IndexedSlices(value.values * tf.cast(weight, value.values.dtype),
                                value.indices, value.dense_shape)
    return tf.math.multiply_no_nan(value, tf.cast(weight, value.dtype))


@contextlib.contextmanager
def _gradients_already_reduced() -> Iterator[None]:
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
def _synchronized_batch_statistics() -> Iterator[None]:
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
def _unscaled_keras_losses() -> Iterator[None]:
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


def _quiet_strategy(record: logging.LogRecord) -> bool:
    """Drop the strategy's own log lines ("Reduce to ... then broadcast", "Using
    MirroredStrategy eagerly ...", TensorFlow's retracing warnings about the strategy's own
    functions): the cell shows what it shows in the kernel."""
    if "/tensorflow/python/distribute/" in record.pathname.replace("\\", "/"):
        return False
    return _STRATEGY_CODE.search(record.getMessage()) is None


_STRATEGY_CODE = re.compile(r"\b(?:CollectiveAllReduce|MirroredStrategy|"
                            r"MultiWorkerMirroredStrategy|_batch_all_gather|cross_device_ops)\b")
