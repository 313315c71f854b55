"""The values a run's steps saved, loaded again (`%nb2cwl pull NAME`).

A run started from Jupyter runs with `--keep-values`: each step saves the variables its cells
define (besides those later steps read) into its entry of the rerun cache of the workflow's
output folder, and tells the entry in the run's events. The value of a variable is the one
the last step that saved it left, as after running the notebook top to bottom.
"""

from __future__ import annotations

import json
import os
from typing import Any

from nb2cwl.integrations.runs import Run
from nb2cwl.launch import CACHE_DIR
from nb2cwl.runtime import values as saved_values


class PullError(Exception):
    """A value cannot be loaded; the message says why."""


def saved_folders(run: Run) -> list[tuple[str, str]]:
    """(step, values folder) of every step of `run` whose outputs were kept, in the order the
    steps ended."""
    folders = []
    cache = os.path.join(run.meta["output"], CACHE_DIR)
    for name in run.state.order or list(run.state.steps):
        step = run.state.steps.get(name, {})
        key = step.get("cache")
        if not key:
            continue
        folder = os.path.join(cache, str(key), "out", "values")
        if os.path.isfile(os.path.join(folder, saved_values.INDEX)):
            folders.append((name, folder))
    return folders


def pull_values(run: Run, names: list[str], namespace: dict[str, Any]) -> dict[str, str]:
    """Bind `names` into `namespace` from the last step of `run` that saved each; return the
    step each came from. Raise PullError naming what cannot be found."""
    run.read_events()
    if run.status != "done":
        raise PullError(f"run {run.id} is {run.status}: values are loaded from a finished run")
    found: dict[str, str] = {}
    where: dict[str, str] = {}
    for step, folder in saved_folders(run):
        with open(os.path.join(folder, saved_values.INDEX), encoding="utf-8") as handle:
            index = json.load(handle)
        for name in names:
            if name in index:
                found[name], where[name] = folder, step
    missing = [name for name in names if name not in found]
    if missing:
        raise PullError(
            f"run {run.id} saved no value of {', '.join(missing)}: no cell it ran binds it, or "
            "the value cannot be saved (the run's log says why)")
    by_folder: dict[str, list[str]] = {}
    for name, folder in found.items():
        by_folder.setdefault(folder, []).append(name)
    for folder, wanted in by_folder.items():
        saved_values.load_values(folder, wanted, namespace, lambda _names: None)
    return where
