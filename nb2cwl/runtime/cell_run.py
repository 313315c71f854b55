"""Run a cell, or a piece of one (a scattered loop's split or gather), as the Jupyter kernel
runs it: in IPython's own shell where IPython is importable, with the kernel's sys.argv, its
outputs captured; and what a step says when a cell fails."""

from __future__ import annotations

import os
import sys
import traceback
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import live
from .capture import OutputCapture
from .failure import CellFailed, ScriptEnded, ends_script, user_traceback

if TYPE_CHECKING:
    from .kernel_shell import KernelExecutor
    from .plain_shell import PlainExecutor

    Executor = KernelExecutor | PlainExecutor


def raw_source(cell: dict[str, Any]) -> str:
    """The cell as the notebook has it (the spec leaves it out where it is the code)."""
    return cell.get("source", cell["code"])


def program_argv(spec: dict[str, Any]) -> list[str]:
    """The sys.argv the cells see: `python script.py`'s for a script (the script's name
    alone), the kernel's for a notebook (ipykernel's launcher and its connection file)."""
    if spec.get("program") == "script":
        return [spec["notebook"]]
    import importlib.util

    found = importlib.util.find_spec("ipykernel_launcher")
    launcher = found.origin if found is not None and found.origin else "ipykernel_launcher.py"
    runtime = os.path.join(os.path.expanduser("~"), ".local", "share", "jupyter", "runtime")
    return [launcher, "-f", os.path.join(runtime, f"kernel-nb2cwl-{os.getpid()}.json")]


def make_executor(skipped_magics: list[str], script: bool = False) -> Executor:
    """IPython's own shell where IPython is importable (as in Jupyter), else plain exec."""
    module = types.ModuleType("__main__")
    _hints_module()
    try:
        from .kernel_shell import create
    except ImportError as exc:
        from .plain_shell import PlainExecutor

        sys.stderr.write(f"nb2cwl: IPython cannot be imported here ({exc}): the cells run as "
                         "plain Python; magics other than a few shell and file ones, and "
                         "IPython's display formatting, are not available\n")
        executor = PlainExecutor(module)
    else:
        executor = create(module, skipped_magics)
    executor.script = script  # SystemExit(0) ends a script quietly, as `python` does
    sys.modules["__main__"] = module
    return executor


def _hints_module() -> None:
    """`from nb2cwl import parallel_task` works in a step where nb2cwl is not installed."""
    import importlib.util

    if "nb2cwl" in sys.modules or importlib.util.find_spec("nb2cwl") is not None:
        return
    stub = types.ModuleType("nb2cwl")
    stub.parallel_task = stub.gpu_task = lambda function: function  # type: ignore[attr-defined]
    sys.modules["nb2cwl"] = stub


#: Outputs made before the cells, for the cell whose code made them in the kernel.
EARLY: dict[int | None, list[Any]] = {}


def run_cell(cell: dict[str, Any], executor: Executor, spec: dict[str, Any]) -> Any:
    """Run one cell as the kernel would; its outputs."""
    count = cell["execution_count"]
    if count is None:  # a blank cell: Jupyter runs nothing and gives it no number
        live.cell_event(cell, "done", execution_count=None)
        return []
    live.cell_event(cell, "running")
    with OutputCapture() as capture:
        capture.events[:0] = EARLY.pop(cell["index"], [])
        sender = None
        if live.active():  # the outputs so far, while the cell runs
            sender = live.CellOutputs(cell, lambda: capture.outputs)
            capture.listener = sender.changed
        ok, error = executor.run_cell(cell, count)
    if sender is not None:
        sender.close()
    if not ok and ends_script(spec, error):
        raise ScriptEnded(cell, capture.outputs)
    if not ok:
        _failed(cell, error, spec, capture, executor.filename_of(count))
    outputs = capture.outputs
    live.cell_outputs(cell, outputs)
    live.cell_event(cell, "done", execution_count=count)
    return outputs


def run_piece(cell: dict[str, Any], code: str, display: bool, executor: Executor,
               spec: dict[str, Any]) -> tuple[list, float]:
    """Run part of a cell; its timed events and duration (laid out on the cell's timeline)."""
    count = cell["execution_count"]
    with OutputCapture() as capture:
        ok, error = executor.run_code(code, display and not cell.get("quiet"), count,
                                      last=display, source=raw_source(cell))
    if not ok:
        _failed(cell, error, spec, capture, executor.filename_of(count))
    return capture.events, capture.duration


def _failed(cell: dict[str, Any], error: BaseException | None, spec: dict[str, Any],
            capture: OutputCapture, filename: str) -> None:
    if isinstance(error, KeyboardInterrupt):
        raise error
    message = failure_message(spec, cell, error, lambda name: name.startswith(filename))
    failure = CellFailed(cell, error, message, capture.outputs)
    failure.events, failure.duration = capture.events, capture.duration
    raise failure from None


def failure_message(spec: dict[str, Any], cell: dict[str, Any], exc: BaseException | None,
                    in_cell: Callable[[str], bool]) -> str:
    """What the step says of a failed cell: where (the notebook, the cell as Jupyter numbers
    it, the line and its text) and the error with the cell's own frames (`in_cell`: whether a
    frame's file name is the cell's)."""
    tb = exc.__traceback__ if exc is not None else None
    frames = [f for f in traceback.extract_tb(tb) if in_cell(f.filename)]
    line = frames[-1].lineno if frames else getattr(exc, "lineno", None)
    if isinstance(exc, SyntaxError):
        line = exc.lineno
    where = (f"{spec['notebook']}, cell {cell['index']} (In [{cell['execution_count']}], "
             f"id {cell['id']})")
    lines = cell["code"].splitlines()
    text = ""
    if line:
        where += f", line {line}"
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    body = "\n".join(user_traceback(exc)) if exc is not None else ""
    shown = f"\n    {text}" if text else ""
    return (f"nb2cwl: step {spec['step']} failed at {where}:{shown}\n"
            f"{type(exc).__name__}: {exc}\n{body}")
