"""Run one workflow step: stage inputs, replay definitions, run the cells, save the results."""

from __future__ import annotations

import ast
import asyncio
import builtins
import inspect
import json
import linecache
import os
import sys
import time
import traceback
import types
from typing import Any

from . import files, values
from .capture import OutputCapture, display
from .shell import StepShell

OUT = "nb2cwl-out"


class CellFailed(Exception):
    """A cell raised; carries what the user needs to see."""

    def __init__(self, cell: dict[str, Any], exc: BaseException, message: str,
                 outputs: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.cell = cell
        self.exc = exc
        self.outputs = outputs


def parse_arguments(argv: list[str]) -> dict[str, str]:
    """`--name value` pairs as a dict (the step's command line is generated, never typed)."""
    pairs: dict[str, str] = {}
    for flag, value in zip(argv[::2], argv[1::2], strict=False):
        if not flag.startswith("--"):
            raise SystemExit(f"nb2cwl step: unexpected argument {flag!r}")
        pairs[flag[2:]] = value
    return pairs


def run_step(spec: dict[str, Any], argv: list[str]) -> int:
    """Run the step described by `spec`; return the process exit status."""
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
    namespace = _user_namespace()
    _stage_files(spec, args, root)
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
    status = 0
    try:
        for key in spec.get("replay", []):
            replay(key)
        by_producer: dict[str, list[str]] = {}
        for item in spec.get("inputs", []):
            by_producer.setdefault(item["from"], []).append(item["var"])
        for producer, names in by_producer.items():  # one call each: shared objects stay shared
            source = args.get(f"values-{producer}")
            if source is None:
                raise SystemExit(f"nb2cwl step: no --values-{producer} given")
            values.load_values(source, names, namespace, ensure_defined)
        for cell in spec["cells"]:
            outputs = _run_cell(cell, namespace, spec)
            report["cells"].append({"index": cell["index"], "outputs": outputs,
                                    "execution_count": cell["execution_count"]})
        replayable = {n for d in definitions.values() for n in d["names"]}
        values.save_values(namespace, spec.get("outputs", []), spec.get("groups", []),
                           os.path.join(out, "values"), replayable)
    except CellFailed as failure:
        report["cells"].append({"index": failure.cell["index"], "outputs": failure.outputs,
                                "execution_count": failure.cell["execution_count"]})
        report["error"] = str(failure)
        sys.stderr.write(str(failure) + "\n")
        status = 1
    except values.TransferError as exc:
        report["error"] = f"nb2cwl: {spec['notebook']}, step {spec['step']}: {exc}"
        sys.stderr.write(report["error"] + "\n")
        status = 1
    finally:
        changed = files.capture_changes(root, before, os.path.join(out, "files"))
        report["files"] = changed
        report["finished"] = time.time()
        with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1)
    return status


def _user_namespace() -> dict[str, Any]:
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    shell = StepShell(namespace)
    namespace.update({"__builtins__": builtins, "display": display,
                      "get_ipython": lambda: shell})
    sys.modules["__main__"] = module
    _patch_ipython_display()
    return namespace


def _patch_ipython_display() -> None:
    # IPython's display() prints plain text when no kernel runs; in a step it is an output
    try:
        import IPython.core.display_functions as functions
        import IPython.display as public
    except ImportError:
        return
    functions.display = display  # type: ignore[assignment]
    public.display = display  # type: ignore[assignment]


def _stage_files(spec: dict[str, Any], args: dict[str, str], root: str) -> None:
    """Stage files in the order they were written: later writers win, as in Jupyter."""
    for item in spec.get("files", []):
        if "external" in item:
            files.stage(args[f"external-{item['external']}"], item["path"], root)
        else:
            files.stage_tree(args[f"files-{item['from']}"], root, item.get("paths"))


def _run_cell(cell: dict[str, Any], namespace: dict[str, Any],
              spec: dict[str, Any]) -> list[dict[str, Any]]:
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
            lines = _user_traceback(exc, filename)
            capture.error(type(exc).__name__, str(exc), lines)
            outputs = capture.outputs
            message = _failure_message(spec, cell, exc, filename)
            raise CellFailed(cell, exc, message, outputs) from None
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
    if code.co_flags & inspect.CO_COROUTINE:
        return asyncio.run(eval(code, namespace))
    return eval(code, namespace)


def _user_traceback(exc: BaseException, filename: str) -> list[str]:
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if f.filename.startswith("<cell")]
    lines = ["Traceback (most recent call last):"]
    for frame in user or frames:
        lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {frame.line}")
    lines.append(f"{type(exc).__name__}: {exc}")
    return lines


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
    body = "\n".join(_user_traceback(exc, filename))
    shown = f"\n    {text}" if text else ""
    return (f"nb2cwl: step {spec['step']} failed at {where}:{shown}\n"
            f"{type(exc).__name__}: {exc}\n{body}")
