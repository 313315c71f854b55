"""The CWL job file: the values of the workflow's inputs, as paths relative to it."""

from __future__ import annotations

import os
from typing import Any

from nb2cwl.backends.cwl import executed_name
from nb2cwl.backends.parameters import job_values
from nb2cwl.ir.model import Workflow


def job_document(workflow: Workflow, out_dir: str, runtime: str, notebook: str) -> dict[str, Any]:
    """job.yml contents; external input files are referenced where they are, not copied."""
    job: dict[str, Any] = {
        "runtime": {"class": "File", "path": runtime},
        "notebook": {"class": "File", "path": notebook},
        "executed_name": executed_name(workflow),
        "script_assemble": {"class": "File", "path": "steps/assemble.py"},
    }
    for step in workflow.steps:
        job[f"script_{step.name}"] = {"class": "File", "path": f"steps/{step.name}.py"}
    notebook_dir = os.path.dirname(workflow.notebook_path)
    for number, (path, kind) in enumerate(workflow.external_files):
        location = os.path.relpath(os.path.join(notebook_dir, path), os.path.abspath(out_dir))
        job[f"external_{number}"] = {"class": kind, "path": location}
    job.update(job_values(workflow, out_dir))
    return job
