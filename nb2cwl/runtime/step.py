"""Run one workflow step: stage inputs, replay definitions, run the cells, save the results."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import (
    cache,
    cell_run,
    files,
    live,
    parameters,
    skeleton,
    timings,
    training_workers,
    values,
    warnings_once,
)
from .arguments import Arguments, parse_arguments
from .called_globals import globals_used
from .capture import OutputCapture
from .failure import (
    CellFailed,
    ScriptEnded,
    mark_failed,
    upstream_failure,
)
from .future import compiler_flags as future_flags
from .settings import SettingsReplay
from .training_workers import WORKER_FLAG, launch_workers

if TYPE_CHECKING:  # the training module is imported only by steps that train (~10 ms)
    from .kernel_shell import KernelExecutor
    from .plain_shell import PlainExecutor
    from .training import Training

    Executor = KernelExecutor | PlainExecutor

OUT = "nb2cwl-out"


def run_step(spec: dict[str, Any], argv: list[str]) -> int:
    """Run the step described by `spec`; return the process exit status."""
    plan = spec.get("training")
    distributed = plan is not None and plan.get("distributed", True)
    worker = distributed and bool(os.environ.get(WORKER_FLAG))
    if worker:  # one of the training workers started below (in a folder of its own, unless
        launch_workers(argv)  # it is the first)
    args = parse_arguments(argv)
    root = os.getcwd()
    out = os.path.join(root, OUT)
    os.makedirs(out, exist_ok=True)
    started = time.time()
    live.begin(spec["step"], **_shard(spec, args))
    if os.path.realpath(os.environ.get("HOME", "")) == os.path.realpath(root):
        # StreamFlow points HOME at the job directory (as CWL asks): the kernel has the user's
        # own (matplotlib's font cache, fonts, dotfiles), and caches must stay out of the files
        # the cell is seen to write
        os.environ["HOME"] = _user_home(root)
    upstream = upstream_failure(args)
    if upstream is not None:
        for cell in spec["cells"]:
            live.cell_event(cell, "skipped")
        live.step_event("skipped", elapsed=time.time() - started)
        return _skip(spec, out, upstream)
    raw_parameters = parameters.raw_inputs(spec, root)
    # the process that starts the training workers holds the cache entry, not the workers
    key = None if worker else cache.cache_key(spec, args, raw_parameters)
    with cache.exclusive(key):  # the same step with the same inputs (a sweep's combinations)
        named = [c["id"] for c in spec["cells"]] + [str(c["index"]) for c in spec["cells"]]
        if key is not None and cache.restore(key, out, named):  # waits, then reuses them
            _show_cached(spec, out, started)
            return 0
        if distributed and not worker:
            status = launch_workers(argv)  # one worker per node, or just this one
            if status is not None:
                if status == 0:
                    _store_workers_outputs(key, out)
                elif training_workers.failure is not None:  # the cause, last in the log
                    count = next((c["execution_count"] for c in spec["cells"]
                                  if c["index"] == plan["cell"]), None)
                    prompt = f" (In [{count}])" if count else ""
                    sys.stderr.write(f"nb2cwl: step {spec['step']} failed at "
                                     f"{spec['notebook']}, cell {plan['cell']}{prompt}: "
                                     f"{training_workers.failure}\n")
                return status
        return _execute(spec, args, root, out, key, raw_parameters)


def _store_workers_outputs(key: str | None, out: str) -> None:
    """Keep what the first training worker wrote into `out` under the step's cache key."""
    path = os.path.join(out, "report.json")
    if key is None or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    if "failed_cell" in report or "exited_cell" in report:
        return
    report["cache_key"] = key
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)
    cache.store(key, out)


def _user_home(root: str) -> str:
    """The user's home folder, as a kernel has it; a folder of the job where there is none
    this step may write to (a container's user without a home)."""
    import pwd

    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except (KeyError, OSError):
        home = ""
    if home and os.path.isdir(home) and os.access(home, os.W_OK) and \
            os.path.realpath(home) != os.path.realpath(root):
        return home
    home = os.path.join(root, "nb2cwl-home")
    os.makedirs(home, exist_ok=True)
    return home


def _shard(spec: dict[str, Any], args: Arguments) -> dict[str, Any]:
    """Which shard of a scattered loop this job runs (its chunk file's number, from 1)."""
    if spec.get("role") != "map":
        return {}
    name = os.path.basename(args.one("chunk-0"))
    digits = "".join(c for c in name if c.isdigit())
    return {"shard": int(digits) + 1} if digits else {}


def _show_cached(spec: dict[str, Any], out: str, started: float) -> None:
    """Live progress of a reused step: its cells' outputs, as the earlier run left them."""
    with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    timings.record(spec, report)  # what the earlier run measured
    if not live.active():
        return
    cells = {cell["index"]: cell for cell in spec["cells"]}
    for entry in report.get("cells", []):
        cell = cells.get(entry["index"])
        if cell is not None:
            live.cell_outputs(cell, entry["outputs"])
            live.cell_event(cell, "cached", execution_count=entry.get("execution_count"))
    live.step_event("cached", elapsed=time.time() - started)


def _execute(spec: dict[str, Any], args: Arguments, root: str, out: str, key: str | None,
             raw_parameters: dict[str, Any]) -> int:
    """Run the step's cells (its outputs were not in the cache)."""
    plan = spec.get("training")
    executor = cell_run.make_executor(spec.get("skipped_magics", []),
                                      spec.get("program") == "script")
    future = spec.get("future", [])  # [cell, feature] of earlier cells
    executor.future([f for cell, f in future if cell < spec["cells"][0]["index"]])
    namespace = executor.namespace
    sys.argv = cell_run.program_argv(spec)
    trainer: Training | None = None
    _stage_files(spec, args, root)
    run_values = parameters.values(spec, raw_parameters, root)
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
        if definition.get("parameter"):  # the run's value, not the notebook's
            parameters.assign([definition["parameter"]], run_values, namespace)
            return
        flags = future_flags([f for cell, f in future if cell <= definition["cell"]])
        exec(_replayed(definition, spec.get("defining_cells", {}), executor, flags), namespace)

    def ensure_defined(names: list[str]) -> None:
        """A loaded value holds these (its functions, saved by name): replay them, and what
        their bodies use when called."""
        for name in names:
            if name in namespace:
                continue
            for key, definition in definitions.items():
                if name in definition["names"]:
                    replay(key)
                    for defined in definition["names"]:
                        ensure_defined(sorted(globals_used(namespace.get(defined))))

    report: dict[str, Any] = {"step": spec["step"], "cells": [], "started": time.time(),
                              "pid": os.getpid(), "runtime": executor.kind}
    for note in cache.discarded:  # a damaged cache entry: said in this run's notes only
        report.setdefault("cache_notes", []).append(f"step {spec['step']}: {note}")
    if run_values:  # the assembler checks they are its own run's (a sweep's combination)
        report["parameters"] = run_values
    # definitions pickled by name (the loading step replays them); a definition some step
    # hands on as a value (its state changed) is pickled with its state
    replayable = {n for d in definitions.values() for n in d["names"]} - set(
        spec.get("by_value", []))
    settings = SettingsReplay(spec.get("settings", []), definitions, namespace)
    status = 0
    try:
        # definitions and settings of earlier cells, in notebook order: an environment
        # variable a library reads when it is imported (KERAS_HOME, TF_CPP_MIN_LOG_LEVEL) is
        # set before a training step imports TensorFlow for its strategy, as in the kernel
        first = spec["cells"][0]["index"]
        if plan is not None:
            from .training import prepare_keras

            prepare_keras(plan)  # before the replayed `import keras`
        actions = [(_position(k), replay, k) for k in spec.get("replay", [])] + [
            (_position(s["key"]), settings.apply, s) for s in settings.due_before((first, -1))]
        for _, action, item in sorted(actions, key=lambda entry: entry[0]):
            action(item)
        for setting in (plan or {}).get("early_settings", []):  # made before the import
            settings.run_now(setting)
        with OutputCapture() as early:  # TensorFlow's import prints (C++ logging)
            trainer = _trainer(plan, namespace)  # before any TF op: no value is loaded yet
        if plan is not None and early.events:  # shown by the cell importing it, as in the
            cell_run.EARLY[plan.get("import_cell")] = early.events  # kernel (else by another step)
        with trainer.scope() if trainer is not None else _nothing():
            by_producer: dict[str, list[str]] = {}
            for item in spec.get("inputs", []):
                by_producer.setdefault(item["from"], []).append(item["var"])
            for producer, names in by_producer.items():  # one call each: shared objects stay
                source = args.one(f"values-{producer}")  # shared
                values.load_values(source, names, namespace, ensure_defined)
            executor.values_loaded()
            if trainer is not None:
                _begin_training(trainer, plan, namespace)
            declared = spec.get("parameters") or {}

            def after_cell(index: int) -> None:
                if index == declared.get("cell"):  # as papermill injects after that cell
                    parameters.assign(declared["names"], run_values, namespace)

            try:
                _run_role(spec, args, executor, out, report, replayable, settings, after_cell)
            except ScriptEnded as ended:  # sys.exit(0): the script's end; later cells skip
                report["cells"].append({"index": ended.cell["index"], "outputs": ended.outputs,
                                        "execution_count": ended.cell["execution_count"]})
                report["exited_cell"] = ended.cell["index"]
        if trainer is not None:
            report["training"] = trainer.finish(namespace, out, spec["step"],
                                                _training_log(report, plan["cell"]))
        if "exited_cell" in report:
            mark_failed(out, {"cell": report["exited_cell"], "step": spec["step"],
                              "exited": True})
        else:
            values.save_values(namespace, spec.get("outputs", []), spec.get("groups", []),
                               os.path.join(out, "values"), replayable)
            if spec.get("keep"):  # for pulling values into a kernel (Jupyter)
                values.keep_values(namespace, spec["keep"], os.path.join(out, "values"),
                                   replayable)
        if values.UNORDERED:
            names = ", ".join(sorted(set(values.UNORDERED)))
            note = (f"step {spec['step']}: the set(s) in {names} may iterate in another order "
                    "in later steps than here (the order follows the set's history); tag the "
                    "cells that make and iterate them nb2cwl:step=<name> to keep them together")
            report.setdefault("notes", []).append(note)
            sys.stderr.write(f"nb2cwl: note: {note}\n")
    except CellFailed as failure:
        report["cells"].append({"index": failure.cell["index"], "outputs": failure.outputs,
                                "execution_count": failure.cell["execution_count"]})
        live.cell_outputs(failure.cell, failure.outputs)
        live.cell_event(failure.cell, "failed", execution_count=failure.cell["execution_count"])
        _record_failure(report, out, failure.cell["index"], str(failure))
    except values.TransferError as exc:
        last = spec["cells"][-1]
        message = (f"nb2cwl: {spec['notebook']}, cell {last['index']} "
                   f"(In [{last['execution_count']}], id {last['id']}): "
                   f"{exc}")
        _record_failure(report, out, last["index"], message)
    finally:
        changed = files.capture_changes(root, before, os.path.join(out, "files"))
        report["files"] = changed
        report["finished"] = time.time()
        if key is not None:  # where the outputs are kept (nb2cwl's pull finds the values)
            report["cache_key"] = key
        with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
        timings.record(spec, report)
        live.step_event("failed" if "failed_cell" in report else "done",
                        elapsed=report["finished"] - report["started"],
                        shards=report.get("shards"), cache=key,
                        message=(report.get("error") or "").strip().split("\n")[0] or None)
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
    for cell, code in plan.get("preludes", []):  # definitions rewritten for the strategy
        exec(_compiled(code, cell), namespace)


_SOURCES: set[str] = set()  # the file names given to code run outside the cells


def _compiled(code: str, cell: int, flags: int = 0) -> types.CodeType:
    """`code` of cell `cell` (a replayed or rewritten definition) compiled under a file name
    of its own, its source registered where tracebacks and AutoGraph (a @tf.function) look
    for it: "<cell 3>", then "<cell 3'>" for the next piece of the same cell."""
    import linecache

    name = f"<cell {cell}>"
    while name in _SOURCES:
        name = name[:-1] + "'>"
    _SOURCES.add(name)
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    return compile(code, name, "exec", flags=flags)


def _replayed(definition: dict[str, Any], cells: dict[int, list], executor: Executor,
              flags: int) -> types.CodeType:
    """A replayed definition compiled as the kernel compiled it: under its cell's file name,
    at its lines there (a warning or traceback from a function defined in another step's cell
    names the file and line the kernel names)."""
    cell, line = cells.get(definition["cell"]), definition.get("line")
    name = executor.cell_file(*cell) if cell is not None and line else None
    if name is None:
        return _compiled(definition["code"], definition["cell"], flags)
    return compile("\n" * (line - 1) + definition["code"], name, "exec", flags=flags)


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


def _position(key: str) -> tuple[int, int]:
    cell, number = key.split(":")
    return int(cell), int(number)


def _run_role(spec: dict[str, Any], args: Arguments, executor: Executor, out: str,
              report: dict[str, Any], replayable: set[str], settings: SettingsReplay,
              after_cell: Callable[[int], None]) -> None:
    role = spec.get("role", "cell")
    cells = spec["cells"]
    # a split joined with the step before it runs that step's cells first, the loop's last; a
    # gather joined with the step after it runs the loop's cell first (passes/loop_joins.py)
    loop = None if role == "cell" else cells[-1] if role == "split" else cells[0]
    for cell in cells:
        settings.before_cell(cell["index"])  # those of other steps' cells before this one
        if cell is loop:
            _run_loop_part(role, cell, spec, args, executor, out, report, replayable)
            continue
        began = time.perf_counter()
        outputs = cell_run.run_cell(cell, executor, spec)
        report["cells"].append({"index": cell["index"], "outputs": outputs,
                                "execution_count": cell["execution_count"],
                                "seconds": time.perf_counter() - began})
        after_cell(cell["index"])


def _run_loop_part(role: str, cell: dict[str, Any], spec: dict[str, Any], args: Arguments,
                   executor: Executor, out: str, report: dict[str, Any],
                   replayable: set[str]) -> None:
    """The split, a map or the gather of the scattered loop in `cell`."""
    def run_code(code: str, display: bool) -> tuple[list, float]:
        # the prefix before a loop, or the gather and the rest of the cell after it
        return cell_run.run_piece(cell, code, display, executor, spec)

    filename = executor.cell_file(cell_run.raw_source(cell), cell["execution_count"])
    with warnings_once.recording():  # a scattered loop's warnings, shown once (one process)
        skeleton.run_part(role, cell, spec, args, executor.namespace, out, report, replayable,
                          run_code, filename)


def _stage_files(spec: dict[str, Any], args: Arguments, root: str) -> None:
    """Stage files in the order they were written: later writers win, as in Jupyter."""
    for item in spec.get("files", []):
        if "external" in item:
            files.stage(args.one(f"external-{item['external']}"), item["path"], root)
        else:
            files.stage_tree(args.one(f"files-{item['from']}"), root, item.get("paths"))
