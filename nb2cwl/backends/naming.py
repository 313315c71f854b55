"""Names of what a compiled workflow produces (light: the launcher imports it at start-up)."""

from __future__ import annotations

from nb2cwl.ir.model import Workflow


def executed_name(workflow: Workflow) -> str:
    """File name of the executed notebook the workflow produces."""
    stem = workflow.notebook_name.rsplit(".", 1)[0]
    return f"{stem}.executed.ipynb"
