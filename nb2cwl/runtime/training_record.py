"""The run record of a training step: Keras fit and evaluate watched while the cells run, and
the run folder written at the end (models, history, metrics, log).

Imports nothing from nb2cwl.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from .training_workers import is_chief


class TrainingRecord:
    """Mixin for `Training`: what the step's training did, kept and written (see the module
    docstring)."""

    plan: dict[str, Any]
    strategy: Any
    replicas: int
    workers: int
    gpus: list[Any]
    seed: int | None
    started: float
    fits: list[dict[str, Any]]
    evaluations: list[Any]

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
        if not is_chief():  # saves too: a distributed model's save waits for every worker
            scratch = tempfile.mkdtemp(prefix="nb2cwl-worker-models-")
            try:
                self._save_models(namespace, scratch)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            return None
        folder = os.path.join(out, f"training-{step}")  # the workflow run versions it
        os.makedirs(folder, exist_ok=True)
        saved, problems = self._save_models(namespace, folder)
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

    def _save_models(self, namespace: dict[str, Any],
                     folder: str) -> tuple[list[str], dict[str, str]]:
        """Save the step's models as `NAME.keras` in `folder`: (saved files, problems)."""
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
        return saved, problems


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

