"""A compiled workflow waiting to be written into its output folder, and where it is written.

`nb2cwl compile` writes at once. `nb2cwl run` hands the request to its StreamFlow process
(nb2cwl.engine), which writes it before it runs it: that process imports CWL's library
(cwl-utils) for StreamFlow anyway, and waits for its command line while the notebook
compiles; the compiling process then never imports that library (a fifth of a second, on the
way to every run's first step).
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nb2cwl.backends.deployments import DeploymentPlan
    from nb2cwl.ir.model import Workflow

#: The line the StreamFlow process prints when writing failed, before the reason.
FAILED = "nb2cwl: writing the compiled workflow failed: "


@dataclass(frozen=True)
class WriteRequest:
    """What `write_workflow` needs (nb2cwl.backends.writer)."""

    workflow: Workflow
    out_dir: str
    cwd: str  # the compiling process's working folder: these paths may be relative to it
    python: str
    force: bool
    retries: int
    retry_delay: int
    deployments: DeploymentPlan

    def write(self) -> list[str]:
        """Write it (callers hold signals meanwhile: nb2cwl.stopping.shield), from the
        compiling process's working folder; the files written."""
        from nb2cwl.backends.writer import write_workflow

        here = os.getcwd()
        os.chdir(self.cwd)  # a long-lived StreamFlow process (Jupyter's) started elsewhere
        try:
            return write_workflow(self.workflow, self.out_dir, python=self.python,
                                  force=self.force, retries=self.retries,
                                  retry_delay=self.retry_delay, deployments=self.deployments)
        finally:
            os.chdir(here)

    def deployment_kinds(self) -> frozenset[str]:
        """The deployment types its streamflow.yml will use (local, slurm, docker, ...)."""
        return frozenset(str(d.get("type")) for d in self.deployments.deployments.values())

    def save(self, folder: str) -> str:
        """Keep it in `folder` (the run's private scratch folder) for the StreamFlow process;
        the file's path."""
        path = os.path.join(folder, "compiled.pickle")
        with open(path, "wb") as handle:
            pickle.dump(self, handle, protocol=pickle.HIGHEST_PROTOCOL)
        return path


def write_saved(path: str) -> str | None:
    """In the StreamFlow process: write the request kept at `path`; None when written, else
    the reason it was not (one line)."""
    try:
        with open(path, "rb") as handle:
            request = pickle.load(handle)
        # the nb2cwl process checked the folder (compile_for_directory), and has written
        # its run's files there since: this writes over what nb2cwl wrote, as --force would
        replace(request, force=True).write()
    except Exception as exc:  # the nb2cwl process shows it as a compile error
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None
