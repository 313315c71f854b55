"""`%%nb2cwl step [--deployment NAME]`: run one cell as a workflow step elsewhere.

The cell's inputs (the variables it reads that the kernel has) are shipped to the step, the
cell runs there as any step runs its cells (IPython's shell, the same magics and display), its
outputs stream back into this cell while it runs, and the variables it assigns, changes or
deletes are loaded back into the kernel. Modules the cell reads are imported there under
the same names instead of being shipped.

It is a small workflow of one step: a cell that loads the shipped values (from a file
beside the notebook, staged like any input file), the cell itself, and a cell that saves the
variables it changed (a file the step writes, which the run hands back).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import sys
import tempfile
import types
from typing import Any

import cloudpickle
import nbformat
from IPython.core.error import UsageError
from IPython.display import publish_display_data

from nb2cwl.integrations.runs import RunRequest, RunStore

_STEP = "nb2cwl:step=remote"


def cell_names(source: str) -> tuple[set[str], set[str], set[str]]:
    """What the cell reads, what it binds or changes, and what it deletes (nb2cwl's own
    analysis of the cell, magics included)."""
    from nb2cwl.analysis.program import analyse_notebook
    from nb2cwl.frontend.reader import read_notebook

    with tempfile.TemporaryDirectory(prefix="nb2cwl-cell-") as folder:
        path = os.path.join(folder, "cell.ipynb")
        nbformat.write(_notebook([source]), path)
        effects = analyse_notebook(read_notebook(path)).cells[0].effects
    return set(effects.reads), set(effects.writes) | set(effects.mutates), set(effects.deletes)


def _notebook(sources: list[str]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": [_STEP]})
                      for source in sources]
    return notebook


def run_cell_remotely(shell: Any, source: str, deployment: str | None,
                      store: RunStore | None = None) -> None:
    """Run `source` on `deployment` with the kernel's values; bring its results back."""
    store = store or RunStore()
    reads, changes, deletes = cell_names(source)
    namespace = shell.user_ns
    shipped = {n: namespace[n] for n in sorted(reads)
               if n in namespace and not isinstance(namespace[n], types.ModuleType)}
    modules = {n: namespace[n].__name__ for n in sorted(reads)
               if isinstance(namespace.get(n), types.ModuleType)}
    token = secrets.token_hex(4)
    here = os.getcwd()
    inputs = f".nb2cwl-step-{token}.pkl"  # beside the notebook: staged into the step
    outputs = f"nb2cwl-step-{token}-out.pkl"
    try:
        with open(os.path.join(here, inputs), "wb") as handle:
            cloudpickle.dump(shipped, handle)
    except Exception as exc:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(here, inputs))
        raise UsageError(f"%%nb2cwl step: the cell's inputs cannot be shipped: {exc}") from None
    load = ["import cloudpickle as __nb2cwl_pickle",
            f"with open({inputs!r}, 'rb') as __nb2cwl_file:",
            "    __nb2cwl_values = __nb2cwl_pickle.load(__nb2cwl_file)"]
    load += [f"{name} = __nb2cwl_values[{name!r}]" for name in shipped]
    load += [f"import {module} as {name}" for name, module in modules.items()]
    save = [f"__nb2cwl_names = {sorted(changes | deletes)!r}",
            "__nb2cwl_found = {n: globals()[n] for n in __nb2cwl_names if n in globals()}",
            f"with open({outputs!r}, 'wb') as __nb2cwl_file:",
            "    __nb2cwl_pickle.dump(__nb2cwl_found, __nb2cwl_file)"]
    scratch = tempfile.mkdtemp(prefix="nb2cwl-step-")
    try:
        run = store.start(RunRequest(
            notebook=os.path.join(here, f"nb2cwl-step-{token}.ipynb"), path="%%nb2cwl step",
            deployment=deployment, mode="all",
            content=_notebook(["\n".join(load), source, "\n".join(save)]),
            output=os.path.join(scratch, "wf")), with_parent=True)
        try:
            _stream(store, run)
        except KeyboardInterrupt:
            store.cancel(run)
            store.wait(run, 60)
            raise
        summary = run.to_json()
        if summary["status"] != "done":
            error = summary["error"] or summary["status"]
            raise UsageError(f"%%nb2cwl step: the cell failed on {summary['deployment']}: "
                             f"{error}")
        results = os.path.join(run.state.results or "", "written-files", outputs)
        with open(results, "rb") as handle:
            found = cloudpickle.load(handle)
        namespace.update(found)
        for name in deletes - set(found):
            namespace.pop(name, None)
        store.remove(run)  # its record served this cell only (a failed one is kept: its log)
    finally:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(here, inputs))
        shutil.rmtree(scratch, ignore_errors=True)


def _stream(store: RunStore, run: Any) -> None:
    """Show the cell's outputs (the second cell of the step) as they arrive."""
    for event in store.follow(run):
        if event.get("kind") != "output" or event.get("index") != 1:
            continue
        for output in event.get("outputs", []) if event.get("reset") else [event["output"]]:
            _show(output)


def _show(output: dict[str, Any]) -> None:
    kind = output.get("output_type")
    if kind == "stream":
        target = sys.stderr if output.get("name") == "stderr" else sys.stdout
        text = output.get("text", "")
        target.write("".join(text) if isinstance(text, list) else text)
        target.flush()
    elif kind in ("display_data", "execute_result"):
        publish_display_data(output.get("data", {}), output.get("metadata", {}))
    elif kind == "error":
        sys.stderr.write("\n".join(output.get("traceback", [])) + "\n")
