"""The StreamFlow configuration: which workflow to run, where each step runs, and where to keep
StreamFlow's database."""

from __future__ import annotations

from typing import Any

from nb2cwl.backends.deployments import DeploymentPlan
from nb2cwl.ir.model import Workflow

DATABASE = ".streamflow/sqlite.db"


def streamflow_config(workflow: Workflow, workflow_file: str, job_file: str,
                      plan: DeploymentPlan | None = None) -> dict[str, Any]:
    """streamflow.yml contents: the deployments of `plan` (default: every step on local)."""
    if plan is None:
        plan = DeploymentPlan({"local": {"type": "local", "config": {}}},
                              [{"step": "/", "target": {"deployment": "local"}}])
    name = _workflow_name(workflow)
    return {
        "version": "v1.0",
        "workflows": {
            name: {
                "type": "cwl",
                "config": {"file": workflow_file, "settings": job_file},
                "bindings": plan.bindings,
            }
        },
        "deployments": plan.deployments,
        # relative to this file: every run keeps its metadata inside the output directory
        "database": {"type": "default", "config": {"connection": DATABASE}},
    }


def _workflow_name(workflow: Workflow) -> str:
    stem = workflow.notebook_name.rsplit(".", 1)[0].lower()
    cleaned = "".join(c if c.isalnum() or c in "._-" else "-" for c in stem).strip("-._")
    if not cleaned or not cleaned[0].isalpha():
        cleaned = "nb-" + cleaned
    return cleaned
