"""Run one workflow step: stage inputs, replay definitions, run the cells, save the results."""

from __future__ import annotations

import ast
import builtins
import contextlib
import json
import linecache
import os
import sys
import time
import traceback
import types
from typing import TYPE_CHECKING, Any

from . import cache, files, skeleton, values
from .arguments import Arguments, parse_arguments
from .capture import OutputCapture, display
from .failure import CellFailed, mark_failed, upstream_failure, user_traceback
from .shell import StepShell

if TYPE_CHECKING:  # the training module is imported only by steps that train (~10 ms)
    from .training import Training

OUT = "nb2cwl-out"
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect


def run_step(spec: dict[str, Any], argv: list[str]) -> int:
    """Run the step described by `spec`; return the process exit status."""
    plan = spec.get("training")
    if plan is not None and plan.get("distributed", True):
        from .training import launch_workers

        status = launch_workers(argv)  # one worker per node, or just this one
        if status is not None:
            return status
    args = parse_arguments(argv)
    root = os.getcwd()
    out = os.path.join(root, OUT)
    os.makedirs(out, exist_ok=True)
    os.environ.setdefault("MPLBACKEND", f"module://{__package__}.mpl_backend")
    if os.path.realpath(os.environ.get("HOME", "")) == os.path.realpath(root):
        # StreamFlow points HOME at the job directory: keep caches (matplotlib, pip) out of
        # the files the cell is seen to write
        home = os.path.join(root, "nb2cwl-home")
        os.makedirs(home, exist_ok=True)
        os.environ["HOME"] = home
    upstream = upstream_failure(args)
    if upstream is not None:
        return _skip(spec, out, upstream)
    key = cache.cache_key(spec, args)
    if key is not None and cache.restore(key, out):
        return 0
    namespace = _user_namespace(_mentions_ipython(spec))
    trainer = _trainer(plan, namespace)  # before any TF op
    _stage_files(spec, args, root)
    sys.path.insert(0, root)  # as in the kernel: modules beside the notebook import
    before = files.snapshot(root)
    definitions = {d["key"]: d for d in spec.get("definitions", [])}
    done: set[str] = set()

    def replay(key: str) -> None:
        if key in done:
            return
        definition = definitions[key]
        for required in definition.get("requires", []):
            replay(required)
        done.add(key)
        code = compile(definition["code"], f"<cell {definition['cell']}>", "exec")
        exec(code, namespace)

    def ensure_defined(names: list[str]) -> None:
        for name in names:
            if name in namespace:
                continue
            for key, definition in definitions.items():
                if name in definition["names"]:
                    replay(key)

    report: dict[str, Any] = {"step": spec["step"], "cells": [], "started": time.time(),
                              "pid": os.getpid()}
    replayable = {n for d in definitions.values() for n in d["names"]}
    status = 0
    try:
        with trainer.scope() if trainer is not None else _nothing():
            for replay_key in spec.get("replay", []):  # not `key`: that is the cache key
                replay(replay_key)
            by_producer: dict[str, list[str]] = {}
            for item in spec.get("inputs", []):
                by_producer.setdefault(item["from"], []).append(item["var"])
            for producer, names in by_producer.items():  # one call each: shared objects stay
                source = args.one(f"values-{producer}")  # shared
                values.load_values(source, names, namespace, ensure_defined)
            for item in spec.get("rebuild", []):  # tf.data pipelines cannot be loaded
                exec(compile(item["code"], f"<cell {item['cell']}>", "exec"), namespace)
            if trainer is not None:
                _begin_training(trainer, plan, namespace)
            elif spec.get("seed"):
                _seed_tensorflow(spec["seed"], namespace)
            _run_role(spec, args, namespace, out, report, replayable)
        if trainer is not None:
            report["training"] = trainer.finish(namespace, out, spec["step"],
                                                _training_log(report, plan["cell"]))
        values.save_values(namespace, spec.get("outputs", []), spec.get("groups", []),
                           os.path.join(out, "values"), replayable)
    except CellFailed as failure:
        report["cells"].append({"index": failure.cell["index"], "outputs": failure.outputs,
                                "execution_count": failure.cell["execution_count"]})
        _record_failure(report, out, failure.cell["index"], str(failure))
    except values.TransferError as exc:
        last = spec["cells"][-1]
        message = (f"nb2cwl: {spec['notebook']}, cell {last['index']} (id {last['id']}): "
                   f"{exc}")
        _record_failure(report, out, last["index"], message)
    finally:
        changed = files.capture_changes(root, before, os.path.join(out, "files"))
        report["files"] = changed
        report["finished"] = time.time()
        with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
    if key is not None and "failed_cell" not in report:
        cache.store(key, out)
    return status


def _trainer(plan: dict[str, Any] | None, namespace: dict[str, Any]) -> Training | None:
    """The training step's strategy helper, bound in the namespace for the rewritten loop."""
    if plan is None:
        return None
    from .training import HELPER, Training

    trainer = Training(plan)
    namespace[HELPER] = trainer
    return trainer


@contextlib.contextmanager
def _nothing() -> Any:
    yield


def _begin_training(trainer: Training, plan: dict[str, Any],
                    namespace: dict[str, Any]) -> None:
    trainer.begin(namespace)
    if plan.get("prelude"):  # the step function, rewritten for the strategy
        exec(compile(plan["prelude"], f"<cell {plan['cell']}>", "exec"), namespace)


def _seed_tensorflow(seed: str, namespace: dict[str, Any]) -> None:
    """An earlier cell seeded TensorFlow: a fresh step process starts from that seed too."""
    if "keras" in sys.modules or "tensorflow" in sys.modules:  # (its replayed imports
        from .training import seed_tensorflow  # load them when it uses them)

        seed_tensorflow(seed, namespace)


def _training_log(report: dict[str, Any], cell: int) -> str:
    """What the training cell printed (its progress lines)."""
    return "".join(
        "".join(output.get("text", "")) for entry in report["cells"] if entry["index"] == cell
        for output in entry["outputs"] if output.get("output_type") == "stream")


def _record_failure(report: dict[str, Any], out: str, cell: int, message: str) -> None:
    report["error"] = message
    report["failed_cell"] = cell
    sys.stderr.write(message + "\n")
    mark_failed(out, {"cell": cell, "step": report["step"]})


def _skip(spec: dict[str, Any], out: str, upstream: dict[str, Any]) -> int:
    """An earlier cell raised: like Jupyter's Run All, this step's cells do not run."""
    mark_failed(out, upstream)
    if spec.get("role") == "split":
        for number in range(len(spec["plan"]["iterables"])):
            folder = os.path.join(out, f"chunks_{number}")
            os.makedirs(folder, exist_ok=True)
            values.dump_object([], os.path.join(folder, "chunk-000000.pkl"), set(), "no items")
    if spec.get("role") == "map":
        values.dump_object([], os.path.join(out, "results.pkl"), set(), "no results")
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as handle:
        json.dump({"step": spec["step"], "cells": [], "skipped_after": upstream}, handle)
    return 0


def _run_role(spec: dict[str, Any], args: Arguments, namespace: dict[str, Any], out: str,
              report: dict[str, Any], replayable: set[str]) -> None:
    role = spec.get("role", "cell")
    if role == "cell":
        for cell in spec["cells"]:
            outputs = _run_cell(cell, namespace, spec)
            report["cells"].append({"index": cell["index"], "outputs": outputs,
                                    "execution_count": cell["execution_count"]})
        return
    cell, plan = spec["cells"][0], spec["plan"]

    def run_code(code: str, display: bool) -> tuple[list, float]:
        return _run_cell({**cell, "code": code, "quiet": cell["quiet"] or not display},
                         namespace, spec, raw=True)

    if role == "split":
        report["prefix_events"], report["prefix_duration"] = skeleton.split(
            plan, namespace, out, run_code, replayable)
    elif role == "map":
        chunk_files = [args.one(f"chunk-{n}") for n in range(len(plan["iterables"]))]
        skeleton.run_items(plan, namespace, chunk_files, out, replayable)
    elif role == "gather":
        with open(args.one("prefix-report"), encoding="utf-8") as handle:
            split_report = json.load(handle)
        prefix = (split_report.get("prefix_events", []), split_report.get("prefix_duration", 0))
        where = (f"nb2cwl: step {spec['step']} failed at {spec['notebook']}, cell "
                 f"{cell['index']} (id {cell['id']}), line {plan['line']}, in an iteration "
                 "of the loop")
        try:
            outputs = skeleton.gather(plan, namespace, args.get("results", []), prefix,
                                      run_code, where)
        except skeleton.LoopFailed as failed:
            raise CellFailed(cell, None, str(failed), failed.outputs) from None
        report["cells"].append({"index": cell["index"], "outputs": outputs,
                                "execution_count": cell["execution_count"]})


def _user_namespace(patch_ipython: bool) -> dict[str, Any]:
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    shell = StepShell(namespace)
    namespace.update({"__builtins__": builtins, "display": display,
                      "get_ipython": lambda: shell})
    sys.modules["__main__"] = module
    _hints_module()
    if patch_ipython:  # importing IPython costs ~60 ms: only when the code uses it
        _patch_ipython_display()
    return namespace


def _hints_module() -> None:
    """`from nb2cwl import parallel_task` works in a step where nb2cwl is not installed."""
    import importlib.util

    if "nb2cwl" in sys.modules or importlib.util.find_spec("nb2cwl") is not None:
        return
    stub = types.ModuleType("nb2cwl")
    stub.parallel_task = stub.gpu_task = lambda function: function  # type: ignore[attr-defined]
    sys.modules["nb2cwl"] = stub


def _mentions_ipython(spec: dict[str, Any]) -> bool:
    texts = [c["code"] for c in spec["cells"]] + [d["code"] for d in spec.get("definitions", [])]
    return any("IPython" in text for text in texts)


def _patch_ipython_display() -> None:
    # IPython's display() prints plain text when no kernel runs; in a step it is an output
    try:
        import IPython.core.display_functions as functions
        import IPython.display as public
    except ImportError:
        return
    functions.display = display  # type: ignore[assignment]
    public.display = display  # type: ignore[assignment]


def _stage_files(spec: dict[str, Any], args: Arguments, root: str) -> None:
    """Stage files in the order they were written: later writers win, as in Jupyter."""
    for item in spec.get("files", []):
        if "external" in item:
            files.stage(args.one(f"external-{item['external']}"), item["path"], root)
        else:
            files.stage_tree(args.one(f"files-{item['from']}"), root, item.get("paths"))


def _run_cell(cell: dict[str, Any], namespace: dict[str, Any], spec: dict[str, Any],
              raw: bool = False) -> Any:
    """Run one cell; its outputs, or with `raw` its timed events and duration."""
    filename = f"<cell {cell['index']}>"
    source = cell["code"]
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    with OutputCapture() as capture:
        try:
            value = _execute(source, filename, namespace)
            if value is not None and not cell.get("quiet"):
                capture.result(value, cell["execution_count"])
        except BaseException as exc:  # the user's code may raise anything, SystemExit too
            if isinstance(exc, KeyboardInterrupt):
                raise
            lines = user_traceback(exc, filename)
            capture.error(type(exc).__name__, str(exc), lines)
            message = _failure_message(spec, cell, exc, filename)
            failure = CellFailed(cell, exc, message, capture.outputs)
            failure.events, failure.duration = capture.events, capture.duration
            raise failure from None
    if raw:
        return capture.events, capture.duration
    return capture.outputs


def _execute(source: str, filename: str, namespace: dict[str, Any]) -> Any:
    tree = ast.parse(source, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    body = compile(tree, filename, "exec", flags=flags)
    _run(body, namespace)
    if last is None:
        return None
    expression = compile(ast.Expression(last.value), filename, "eval", flags=flags)
    return _run(expression, namespace)


def _run(code: types.CodeType, namespace: dict[str, Any]) -> Any:
    if code.co_flags & _CO_COROUTINE:
        import asyncio  # only cells with top-level await need it

        return asyncio.run(eval(code, namespace))
    return eval(code, namespace)


def _failure_message(spec: dict[str, Any], cell: dict[str, Any], exc: BaseException,
                     filename: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    line = frames[-1].lineno if frames else None
    where = f"{spec['notebook']}, cell {cell['index']} (id {cell['id']})"
    if line:
        where += f", line {line}"
        text = cell["code"].splitlines()[line - 1].strip() if line <= len(
            cell["code"].splitlines()) else ""
    else:
        text = ""
    body = "\n".join(user_traceback(exc, filename))
    shown = f"\n    {text}" if text else ""
    return (f"nb2cwl: step {spec['step']} failed at {where}:{shown}\n"
            f"{type(exc).__name__}: {exc}\n{body}")
