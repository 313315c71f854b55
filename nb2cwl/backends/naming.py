"""Names of what a compiled workflow produces, and the hash seed its steps run with (light: the
launcher imports it at start-up)."""

from __future__ import annotations

import os
from pathlib import Path

from nb2cwl.ir.model import Workflow

EXECUTED_SUFFIX = ".executed.ipynb"
#: What nb2cwl wrote into an output folder, and for which notebook (backends/writer.py).
MANIFEST = ".nb2cwl-manifest.json"
#: The lock of an output folder (nb2cwl.run_lock), taken before anything is written.
RUN_LOCK = ".nb2cwl-run.lock"
#: Every step hashes strings alike (PYTHONHASHSEED): a set of strings, or a dict built from one,
#: iterates in one order in every step, as in one kernel; each new process would pick its own.
HASH_SEED = "0"
RUNTIME_PACKAGE = "nb2cwl_runtime"
#: What every workflow gets a copy of, as RUNTIME_PACKAGE: the code that runs inside a step.
RUNTIME_SOURCE = Path(__file__).resolve().parent.parent / "runtime"
#: The runtime as a workflow holds it: one zip file of RUNTIME_PACKAGE's Python files, which a
#: step imports from (zipimport). One file, not a folder of thirty: StreamFlow registers and
#: stages every file of a step's inputs, for every step (backends/runtime_archive.py).
RUNTIME_ARCHIVE = f"{RUNTIME_PACKAGE}.zip"
#: Each cell's seconds in the folder's last run (nb2cwl.runtime.timings): the next
#: compilation's costs.
TIMINGS_FILE = ".nb2cwl-timings.jsonl"


def executed_name(workflow: Workflow) -> str:
    """File name of the executed notebook the workflow produces (a sweep's combinations add
    their values: NAME@lr=0.1,batch=32.executed.ipynb)."""
    stem = workflow.notebook_name.rsplit(".", 1)[0]
    return f"{stem}{EXECUTED_SUFFIX}"


def notebook_file_name(workflow: Workflow) -> str:
    """File name of the notebook copy in a compiled workflow (a script becomes .ipynb)."""
    name = workflow.notebook_name
    return name if name.lower().endswith(".ipynb") else name.rsplit(".", 1)[0] + ".ipynb"


def default_output_dir(notebook: str) -> str:
    """Where a notebook compiles when no output is given: NOTEBOOK-wf beside it."""
    stem = os.path.splitext(os.path.basename(notebook))[0]
    return os.path.join(os.path.dirname(os.path.abspath(notebook)), f"{stem}-wf")
