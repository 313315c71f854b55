"""`nb2cwl check`: run a notebook top to bottom in a kernel and as a workflow, and compare
every code cell's outputs (see normalise.py for what varies by nature, compare.py for what
is compared). A second reference run (`repeat`) tells nondeterministic cells from
differences the workflow made."""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace

from nb2cwl.checking.compare import Entry, compare
from nb2cwl.checking.reference import executed_outputs, reference_outputs
from nb2cwl.errors import RunError
from nb2cwl.ir.model import Workflow
from nb2cwl.options import CompileOptions

REPORT = "nb2cwl-check.json"


@dataclass
class CellVerdict:
    """One code cell: equal, differs, nondeterministic or not run, and why."""

    index: int
    cell_id: str
    verdict: str
    diff: str = ""
    step: str | None = None
    loaded: list[str] = field(default_factory=list)  # "var from cell N (step S)"
    known: list[str] = field(default_factory=list)  # what explain knew about the step
    suggestion: str = ""
    shown: str = ""  # the cell as Jupyter numbers it: "In [3]"


@dataclass
class CheckReport:
    """The check of one notebook."""

    notebook: str
    cells: list[CellVerdict]
    tolerance: float | None
    repeated: bool
    run_folder: str = ""
    kernel_seconds: float = 0.0  # the kernel's top-to-bottom run, its start included
    workflow_seconds: float = 0.0  # nb2cwl's run of the compiled workflow, engine included

    @property
    def equal(self) -> bool:
        """True when no judged cell differs."""
        return all(c.verdict != "differs" for c in self.cells)

    def to_json(self) -> dict:
        """The report as JSON data."""
        return {"notebook": self.notebook, "equal": self.equal, "rtol": self.tolerance,
                "repeated": self.repeated, "run": self.run_folder,
                "seconds": {"kernel": round(self.kernel_seconds, 3),
                            "workflow": round(self.workflow_seconds, 3)},
                "normalised": "memory addresses, %time/%timeit times, the kernel's process "
                              "id in cells' file names, progress bars' rewritten lines",
                "cells": [asdict(c) for c in self.cells]}


def check_notebook(path: str, out_dir: str, options: CompileOptions, repeat: bool = False,
                   rtol: float | None = None, timeout: int = 600) -> CheckReport:
    """Compare `path` run by a kernel with `path` run as a workflow compiled into `out_dir`."""
    from nb2cwl.api import compile_to_directory
    from nb2cwl.backends.naming import TIMINGS_FILE
    from nb2cwl.engine_database import repair_database
    from nb2cwl.launch import CACHE_DIR, Engine, run_workflow
    from nb2cwl.runtime.timings import ENV as TIMINGS_ENV
    from nb2cwl.scratch import WORKDIR_ENV, scratch_folder
    from nb2cwl.step_server import StepServer

    started = time.monotonic()
    workflow, _ = compile_to_directory(path, out_dir, options)
    compile_seconds = time.monotonic() - started
    files = [relative for relative, _ in workflow.external_files]
    started = time.monotonic()
    reference = reference_outputs(path, files, timeout)
    kernel_seconds = time.monotonic() - started
    second = reference_outputs(path, files, timeout) if repeat else None
    # as `nb2cwl run` runs it, compiling included (steps an earlier run into `out_dir`
    # finished are reused, as there: the comparison is of what a run gives)
    started = time.monotonic() - compile_seconds
    server = StepServer()
    work = scratch_folder("work")  # StreamFlow's folders of the local steps (nb2cwl.scratch)
    try:
        repaired = repair_database(out_dir)
        if repaired:
            print(f"nb2cwl: note: {repaired}", file=sys.stderr)
        timings = os.path.join(os.path.abspath(out_dir), TIMINGS_FILE)
        open(timings, "w").close()  # this run's, for the next compilation (nb2cwl run's too)
        engine = Engine(os.path.join(out_dir, CACHE_DIR), server,
                        extra_env={TIMINGS_ENV: timings, WORKDIR_ENV: work})
        server.start(options.python, engine.env, workflow.preload,
                     os.path.dirname(os.path.abspath(path)))
        summary = run_workflow(workflow, out_dir, quiet=True, engine=engine)
        results = summary.results_dir
    except RunError:  # a cell raised: the executed notebook shows the run up to it
        runs = sorted(glob.glob(os.path.join(out_dir, "runs", "*")),
                      key=lambda p: int(os.path.basename(p)) if os.path.basename(
                          p).isdigit() else -1)
        if not runs or not glob.glob(os.path.join(runs[-1], "*.executed.ipynb")):
            raise
        results = runs[-1]
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    workflow_seconds = time.monotonic() - started
    (executed,) = glob.glob(os.path.join(results, "*.executed.ipynb"))
    with open(executed, encoding="utf-8") as handle:
        actual = executed_outputs(json.load(handle))
    ids = {view.index: view.cell_id for view in workflow.cells}
    cells = [replace(_judge(index, ids.get(index, ""), reference[index], actual.get(index),
                            second.get(index) if second is not None else None,
                            second is not None, rtol, workflow),
                     shown=workflow.shown_cells([index])) for index in sorted(reference)]
    report = CheckReport(workflow.notebook_name, cells, rtol, repeat, results,
                         kernel_seconds, workflow_seconds)
    with open(os.path.join(results, REPORT), "w", encoding="utf-8") as handle:
        json.dump(report.to_json(), handle, indent=1)
        handle.write("\n")
    return report


def _judge(index: int, cell_id: str, expected: list[Entry] | None,
           actual: list[Entry] | None, again: list[Entry] | None, repeated: bool,
           rtol: float | None, workflow: Workflow) -> CellVerdict:
    if repeated and expected != again:
        return CellVerdict(index, cell_id, "nondeterministic",
                           "two runs in a kernel printed different outputs")
    if expected is None and actual is None:
        return CellVerdict(index, cell_id, "not run")
    result = compare(expected or [], actual or [], rtol)
    if result.equal:
        verdict = "equal within rtol" if result.within_tolerance else "equal"
        return CellVerdict(index, cell_id, verdict)
    return _explained(CellVerdict(index, cell_id, "differs", result.diff), workflow)


def _explained(verdict: CellVerdict, workflow: Workflow) -> CellVerdict:
    """What the workflow did around the cell: its step, the values it loaded, what explain
    knew, and the tag that would keep the cells together."""
    step = next((s for s in workflow.steps if any(c.index == verdict.index for c in s.cells)),
                None)
    view = next((v for v in workflow.cells if v.index == verdict.index), None)
    if step is None:
        return replace(verdict, known=list(view.notes) if view else [])
    loaded = [f"{i.var} from {workflow.shown_cells([i.producer_cell])} (step {i.producer})"
              if i.producer
              else f"{i.var} from beside the notebook" for i in step.inputs]
    known = [*step.reasons, *(view.notes if view else ()),
             *(f.reason for f in workflow.fallbacks if f.cell == verdict.index)]
    settings = [f"{workflow.shown_cells([s.cell_index])}: {s.code.splitlines()[0]}"
                for s in workflow.settings
                if s.cell_index < verdict.index and s.cell_index not in
                {c.index for c in step.cells}]
    if settings:
        known.append("settings replayed before it: " + "; ".join(settings))
    producers = sorted({i.producer_cell for i in step.inputs if i.producer_cell is not None})
    suggestion = ""
    if producers:
        cells = workflow.shown_cells([*producers, verdict.index])
        suggestion = (f"tag the cells {cells} nb2cwl:step=together so they share a step, and "
                      "please report the difference")
    return replace(verdict, step=step.name, loaded=loaded, known=known, suggestion=suggestion)


def render(report: CheckReport) -> str:
    """The report as text, one line per cell and the details of the differences."""
    lines = [f"{report.notebook}: " + ("every cell prints what Jupyter prints"
                                       if report.equal else "some cells differ from Jupyter")]
    if report.tolerance is not None:
        lines.append(f"(numbers compared with a relative tolerance of {report.tolerance})")
    for cell in report.cells:
        named = f"{cell.shown}, id {cell.cell_id}" if cell.shown else cell.cell_id
        lines.append(f"  cell {cell.index:>3} ({named}): {cell.verdict}")
        if cell.verdict != "differs":
            continue
        lines += [f"      {line}" for line in cell.diff.splitlines()]
        if cell.step:
            lines.append(f"      ran in step {cell.step}, loading: "
                         + (", ".join(cell.loaded) or "nothing from other steps"))
        lines += [f"      explain: {note}" for note in cell.known]
        if cell.suggestion:
            lines.append(f"      try: {cell.suggestion}")
    if report.kernel_seconds and report.workflow_seconds:
        difference = report.kernel_seconds - report.workflow_seconds
        outcome = (f"{difference:.1f} s gained" if difference >= 0 else
                   f"{-difference:.1f} s slower")
        lines.append(f"time: {report.workflow_seconds:.1f} s as a workflow, "
                     f"{report.kernel_seconds:.1f} s in a Jupyter kernel top to bottom (its "
                     f"start included): {report.workflow_seconds / report.kernel_seconds:.2f}x, "
                     f"{outcome}")
    lines.append(f"report: {os.path.join(report.run_folder, REPORT)}")
    return "\n".join(lines) + "\n"
