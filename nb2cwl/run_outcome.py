"""How a run ended, in the words the user reads: the failing cell or the engine's cause, a
full disk, and the executed notebook of a run that did not finish."""

from __future__ import annotations

import json
import os
import re
import shutil

from nb2cwl.backends.naming import executed_name
from nb2cwl.engine_errors import engine_cause
from nb2cwl.ir.model import Workflow
from nb2cwl.run_events import RunEvents


def partial_notebook(workflow: Workflow, out_dir: str, results: str | None,
                     events: RunEvents | None, why: str, error: dict) -> str | None:
    """The executed notebook of a run that did not finish (partial_notebook.py)."""
    if events is None or results is None:
        return None
    from nb2cwl.backends.naming import notebook_file_name
    from nb2cwl.partial_notebook import write_partial_notebook

    source = os.path.join(out_dir, "notebook", notebook_file_name(workflow))
    counts = {c.index: c.execution_count for s in workflow.steps for c in s.cells}
    return write_partial_notebook(source, events, os.path.join(results, executed_name(workflow)),
                                  why, error, counts)


def notebook_metadata(notebook: str) -> dict:
    """The executed notebook's nb2cwl metadata (failure, notes)."""
    try:
        with open(notebook, encoding="utf-8") as handle:
            return dict(json.load(handle).get("metadata", {}).get("nb2cwl", {}))
    except (OSError, ValueError, AttributeError):
        return {}


def disk_full_message(line: str, out_dir: str, results: str) -> str:
    """The run stopped on a full disk: remove what it had half-copied into `results` (it would
    keep the disk full), and say where, and what to do."""
    target = re.search(r"-> '([^']+)'", line)
    where = target.group(1) if target else out_dir
    job = re.search(r"[Jj]ob /(\S+?)/", line)
    what = f"step {job.group(1)}" if job else "the run's outputs"
    shutil.rmtree(results, ignore_errors=True)
    return (f"no space left on the device of {where} (writing {what}): stopped the run and "
            f"removed its partial outputs ({results}); free some space (nb2cwl cache {out_dir} "
            "--max-size SIZE prunes the step cache) and run again: the steps that finished are "
            "reused")


def failure_in(notebook: str) -> str | None:
    failure = notebook_metadata(notebook)
    return failure.get("error") or None if "failed_cell" in failure else None


def failure_message(log: list[str], status: int) -> str:
    text = "".join(log)
    workers = re.findall(r"nb2cwl: (step \S+ failed at [^\n]*: training worker [^\n]*)", text)
    if workers:  # a worker died: the others' errors (a lost peer) follow from it
        return workers[-1]
    found = re.search(r"nb2cwl: step \S+ failed at .*?(?=\n\S*\d{4}-\d\d-\d\d |\Z)", text,
                      re.S)
    if found:
        return found.group(0).strip().removeprefix("nb2cwl: ")
    transfer = re.search(r"nb2cwl: .*", text)
    if transfer:
        return transfer.group(0).strip().removeprefix("nb2cwl: ")
    cause = engine_cause(text)
    if cause:
        return f"{cause} (StreamFlow's whole log: --debug)"
    last = next((line.strip() for line in reversed(log) if line.strip()), "no output")
    return (f"StreamFlow exited with status {status}: {last} (StreamFlow's whole log: "
            "--debug)")
