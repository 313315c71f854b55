"""The public entry points: compile a notebook to the IR, and write it as a workflow."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from nb2cwl.analysis.dataflow import build_dataflow, needed_cells
from nb2cwl.analysis.program import analyse_notebook
from nb2cwl.backends.calibration import deployment_costs
from nb2cwl.backends.deployments import bind_steps, plan_deployments
from nb2cwl.backends.naming import TIMINGS_FILE
from nb2cwl.errors import DirectiveError, Location, OptionError
from nb2cwl.frontend.directives import TAG_NOT_CHOSEN, TAG_SKIP
from nb2cwl.frontend.model import Notebook
from nb2cwl.frontend.reader import read_notebook
from nb2cwl.ir.model import Workflow
from nb2cwl.ir.validate import InvalidWorkflow, validate_workflow
from nb2cwl.options import CompileOptions
from nb2cwl.passes.build import build_workflow
from nb2cwl.passes.cost_model import read_last_run, read_profile, with_profile
from nb2cwl.passes.loop_joins import join_loop_parts
from nb2cwl.passes.partition import partition
from nb2cwl.passes.scatter import scatter_loops
from nb2cwl.passes.scatter_cost import scatter_decisions
from nb2cwl.passes.training import prepare_training
from nb2cwl.stopping import shield

if TYPE_CHECKING:
    from nb2cwl.analysis.dataflow import Dataflow
    from nb2cwl.backends.bundle import BundleOptions, BundleSummary
    from nb2cwl.backends.write_request import WriteRequest


def compile_notebook(path: str, options: CompileOptions | None = None) -> Workflow:
    """Read, analyse and lower the notebook at `path` to a validated workflow IR."""
    with _collector_paused():
        return _compile(path, options or CompileOptions())


@contextmanager
def _collector_paused() -> Iterator[None]:
    """astroid builds many long-lived objects: CPython's cyclic garbage collector would scan
    them over and over while they grow, which makes large notebooks compile in more than
    linear time. It runs again (and frees what was built) as soon as compiling ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _compile(path: str, options: CompileOptions) -> Workflow:
    notebook = read_notebook(path, options.content)
    flow = build_dataflow(analyse_notebook(notebook))
    if options.only_cells:  # the chosen cells and what they need; the others do not run
        notebook = skip_unneeded(notebook, flow, options.only_cells)
        flow = build_dataflow(analyse_notebook(notebook))
    workflow = build_workflow(flow)
    profile = None
    if options.profile:
        try:
            profile = read_profile(options.profile)
        except ValueError as exc:
            raise OptionError(f"--profile: {exc}", Location(notebook.name)) from None
    elif options.last_run_in:  # what nb2cwl's own last run measured
        profile = read_last_run(os.path.join(options.last_run_in, TIMINGS_FILE),
                                {c.cell_id: c.source for c in notebook.cells})
    workflow = with_profile(workflow, profile)
    if options.scatter:
        sequential, made = scatter_decisions(workflow, *deployment_costs(workflow, options),
                                             options)
        workflow = scatter_loops(workflow, options.chunks, sequential, made)
    try:
        validate_workflow(workflow)
    except InvalidWorkflow as exc:
        raise DirectiveError(str(exc), notebook.location()) from None
    workflow = bind_steps(workflow, options)  # where each step runs, and what it needs there
    costs, default = deployment_costs(workflow, options)
    workflow = partition(workflow, costs, default, profile, options.granularity, options.swept)
    if options.granularity != "cell":
        workflow = join_loop_parts(workflow, options.swept)
    if options.keep_values:
        workflow = replace(workflow, keep_values=True)
    # after partitioning: a step function defined in a cell the training step now runs in
    # place is rewritten there, not only replayed before it
    return prepare_training(workflow, options.scale_learning_rate)


def skip_unneeded(notebook: Notebook, flow: Dataflow, chosen: tuple[str, ...]) -> Notebook:
    """`notebook` with every code cell tagged nb2cwl:skip but the `chosen` ones (cell ids, or
    indices as text) and the cells they need."""
    by_id = {cell.cell_id: cell.index for cell in notebook.cells}
    indices = set()
    for item in chosen:
        if item in by_id:
            index = by_id[item]
        elif item.isdigit() and int(item) < len(notebook.cells):
            index = int(item)
        else:
            raise OptionError(f"--cells: no cell {item!r} (give cell ids or indices)",
                              Location(notebook.name))
        cell = notebook.cells[index]
        if not cell.is_code:
            raise OptionError(f"--cells {item}: cell {index} is a {cell.cell_type} cell, which "
                              "does not run; give code cells", notebook.location(cell))
        indices.add(index)
    keep = needed_cells(flow, indices)
    cells = tuple(
        cell if not cell.is_code or cell.index in keep or TAG_SKIP in cell.tags
        else replace(cell, tags=(*cell.tags, TAG_NOT_CHOSEN)) for cell in notebook.cells)
    return replace(notebook, cells=cells)


def compile_to_directory(path: str, out_dir: str,
                         options: CompileOptions | None = None) -> tuple[Workflow, list[str]]:
    """Compile `path` and write the workflow into `out_dir`; return the IR and files written.
    Unless `options` say otherwise, the last run in `out_dir` gives the cells' costs."""
    request = compile_for_directory(path, out_dir, options)
    with shield():  # a signal waits until the directory is complete: never left half written
        return request.workflow, request.write()


def compile_for_directory(path: str, out_dir: str,
                          options: CompileOptions | None = None) -> WriteRequest:
    """Compile `path` for `out_dir` and check that it may be written there (OutputExistsError
    when the folder holds what nb2cwl did not write, or another notebook's workflow); what
    writing it takes, without writing it: the folder keeps its earlier workflow until then
    (`nb2cwl run` has its StreamFlow process write it, which imports CWL's library anyway)."""
    from nb2cwl.backends.output_dir import check_output_dir
    from nb2cwl.backends.write_request import WriteRequest

    options = options or CompileOptions()
    if options.last_run_in is None:
        options = replace(options, last_run_in=out_dir)
    workflow = compile_notebook(path, options)
    deployments = plan_deployments(workflow, options)  # before writing: bad bindings stop here
    workflow = replace(workflow, diagnostics=(*workflow.diagnostics, *deployments.diagnostics))
    check_output_dir(out_dir, options.force, workflow.notebook_path)
    return WriteRequest(workflow, out_dir, os.getcwd(), options.python,
                        options.force, options.retries, options.retry_delay, deployments)


def export_notebook(path: str, output: str, options: CompileOptions | None = None,
                    bundle: BundleOptions | None = None) -> tuple[Workflow, BundleSummary]:
    """Compile `path` and write it as a reproducible bundle, the zip `output`."""
    import tempfile

    from nb2cwl.backends.bundle import BundleOptions, check_output, export_bundle

    bundle = bundle or BundleOptions()
    check_output(output, bundle.force)  # before compiling: never overwrite a user's file
    options = replace(options or CompileOptions(), force=False)
    with tempfile.TemporaryDirectory(prefix="nb2cwl-export-") as work:
        compiled = f"{work}/compiled"
        workflow, _ = compile_to_directory(path, compiled, options)
        summary = export_bundle(workflow, compiled, output, bundle)
    return workflow, summary
