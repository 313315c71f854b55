"""The files a run leaves, as downloads: its workflow packed into one CWL file, a Workflow
RO-Crate bundle of it with its provenance, its executed notebook and its log."""

from __future__ import annotations

import os
from pathlib import Path

from nb2cwl.errors import Nb2CwlError
from nb2cwl.integrations.runs import Run, RunStore

KINDS = ("cwl", "crate", "notebook", "logs")


class RunFileMissing(Exception):
    """The run has no such file (yet); `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 404) -> None:
        super().__init__(message)
        self.status = status


def run_file(run: Run, kind: str, store: RunStore) -> tuple[str, str, str]:
    """The path of the file, the name to save it as, and its MIME type."""
    stem = Path(run.notebook).stem
    if kind == "logs":
        if not os.path.isfile(run.log_path):
            raise RunFileMissing(f"run {run.id} has no log")
        return run.log_path, f"{stem}-{run.id}.log", "text/plain; charset=utf-8"
    if kind == "notebook":
        executed = run.executed_notebook()
        if executed is None:
            raise RunFileMissing(f"run {run.id} has no executed notebook (yet)")
        return executed, os.path.basename(executed), "application/x-ipynb+json"
    if kind == "cwl":
        return _packed(run), f"{stem}-{run.id}.cwl", "text/yaml; charset=utf-8"
    if kind == "crate":
        return _crate(run, store), f"{stem}-{run.id}.crate.zip", "application/zip"
    raise RunFileMissing(f"no such file kind {kind!r}; one of {', '.join(KINDS)}")


def _packed(run: Run) -> str:
    from nb2cwl.backends.bundle import write_packed

    target = os.path.join(run.folder, "workflow.packed.cwl")
    if not os.path.isfile(target):
        source = Path(run.meta["output"]) / "workflow.cwl"
        if not source.is_file():
            raise RunFileMissing(f"run {run.id} has no workflow (it did not compile)")
        write_packed(source, Path(target))
    return target


def _crate(run: Run, store: RunStore) -> str:
    """The run exported with its provenance (nb2cwl export --with-run), made once."""
    target = os.path.join(run.folder, "crate.zip")
    if os.path.isfile(target):
        return target
    if run.status != "done":
        raise RunFileMissing(f"run {run.id} is {run.status}: only a finished run has a crate",
                             409)
    newer = [other for other in store.runs(run.notebook)
             if other.meta["output"] == run.meta["output"] and other.status == "done"
             and other.meta["started"] > run.meta["started"]]
    if newer:  # StreamFlow's database keeps the provenance of the output folder's last run
        raise RunFileMissing(f"run {run.id}: the crate of a run is made from its output "
                             f"folder's last run, now run {newer[0].id}", 409)
    from nb2cwl.api import export_notebook
    from nb2cwl.backends.bundle import BundleOptions

    try:
        export_notebook(run.notebook, target, run.compile_options(),
                        BundleOptions(with_run=run.meta["output"], force=True))
    except Nb2CwlError as exc:
        raise RunFileMissing(f"run {run.id}: {exc}", 409) from None
    return target
