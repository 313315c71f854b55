"""The public entry points: compile a notebook to the IR, and write it as a workflow."""

from __future__ import annotations

from nb2cwl.analysis.dataflow import build_dataflow
from nb2cwl.analysis.program import analyse_notebook
from nb2cwl.backends.writer import write_workflow
from nb2cwl.errors import DirectiveError
from nb2cwl.frontend.reader import read_notebook
from nb2cwl.ir.model import Workflow
from nb2cwl.ir.validate import InvalidWorkflow, validate_workflow
from nb2cwl.options import CompileOptions
from nb2cwl.passes.build import build_workflow
from nb2cwl.passes.fuse import fuse_linear_chains
from nb2cwl.passes.scatter import scatter_loops


def compile_notebook(path: str, options: CompileOptions | None = None) -> Workflow:
    """Read, analyse and lower the notebook at `path` to a validated workflow IR."""
    options = options or CompileOptions()
    notebook = read_notebook(path)
    flow = build_dataflow(analyse_notebook(notebook))
    workflow = build_workflow(flow)
    if options.scatter:
        workflow = scatter_loops(workflow, options.chunks)
    if options.fuse:
        workflow = fuse_linear_chains(workflow)
    try:
        validate_workflow(workflow)
    except InvalidWorkflow as exc:
        raise DirectiveError(str(exc), notebook.location()) from None
    return workflow


def compile_to_directory(path: str, out_dir: str,
                         options: CompileOptions | None = None) -> tuple[Workflow, list[str]]:
    """Compile `path` and write the workflow into `out_dir`; return the IR and files written."""
    options = options or CompileOptions()
    workflow = compile_notebook(path, options)
    written = write_workflow(workflow, out_dir, python=options.python, force=options.force,
                             retries=options.retries, retry_delay=options.retry_delay)
    return workflow, written
