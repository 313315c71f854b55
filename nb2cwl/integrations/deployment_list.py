"""The deployments a notebook can run on, each checked: its StreamFlow configuration against
StreamFlow's schema, and whether what it needs answers from here (sbatch for Slurm, a Docker
engine, a Kubernetes configuration and helm)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from nb2cwl.backends.deployments import (
    KINDS,
    Deployment,
    load_deployment_file,
    load_profile,
    notebook_definitions,
)
from nb2cwl.errors import Nb2CwlError
from nb2cwl.ir.model import Workflow

PROBE_TIMEOUT = 5  # seconds for one sinfo or docker info


@dataclass(frozen=True)
class DeploymentStatus:
    """One deployment as the sidebar lists it."""

    name: str
    kind: str
    source: str  # profile, file or notebook
    available: bool
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """As the server's API sends it."""
        return {"name": self.name, "kind": self.kind, "source": self.source,
                "available": self.available, "reason": self.reason}


def list_deployments(workflow: Workflow | None = None,
                     deployment_file: str | None = None) -> list[DeploymentStatus]:
    """The profiles, the deployments of `deployment_file` and of the notebook's own metadata,
    each validated and probed. A name defined twice is listed once: the notebook's, then the
    file's definition wins over a profile, as when compiling."""
    found: dict[str, tuple[Deployment | None, str, str | None]] = {}
    for kind in KINDS:
        try:
            found[kind] = (load_profile(kind), "profile", None)
        except Nb2CwlError as exc:
            found[kind] = (None, "profile", str(exc))
    if deployment_file:
        try:
            found.update({n: (d, "file", None)
                          for n, d in load_deployment_file(deployment_file).items()})
        except Nb2CwlError as exc:
            found[os.path.basename(deployment_file)] = (None, "file", str(exc))
    if workflow is not None:
        found.update({n: (d, "notebook", None)
                      for n, d in notebook_definitions(workflow).items()})
    listed = []
    for name, (deployment, source, problem) in found.items():
        if deployment is None:
            listed.append(DeploymentStatus(name, "unknown", source, False, problem))
            continue
        reason = _invalid(deployment) or _unreachable(deployment)
        listed.append(DeploymentStatus(name, deployment.type, source, reason is None, reason))
    return listed


def _invalid(deployment: Deployment) -> str | None:
    """StreamFlow's schema's complaint about the deployment's configuration, if any."""
    from streamflow.config.validator import SfValidator
    from streamflow.core.exception import WorkflowDefinitionException

    document = {"version": "v1.0", "deployments": {deployment.name: deployment.entry}}
    try:
        SfValidator().validate(document)
    except WorkflowDefinitionException as exc:
        lines = [line.strip(" -") for line in str(exc).splitlines()[1:] if line.strip()]
        return "invalid StreamFlow configuration: " + ("; ".join(lines[:2]) or str(exc))
    return None


def _unreachable(deployment: Deployment) -> str | None:
    """Why the deployment cannot run steps from here, or None."""
    kind = deployment.type
    if kind == "local":
        return None
    if kind == "slurm":
        return _probe(["sinfo", "-h", "-o", "%P"], "sbatch", "Slurm")
    if kind == "docker":
        return _probe(["docker", "info", "--format", "{{.ServerVersion}}"], "docker", "Docker")
    if kind in ("helm", "helm4", "helm3", "kubernetes"):
        config = deployment.config.get("kubeconfig") or os.environ.get("KUBECONFIG") or \
            os.path.expanduser("~/.kube/config")
        if not os.path.isfile(str(config).split(os.pathsep)[0]):
            return f"no Kubernetes configuration ({config})"
        if kind != "kubernetes" and shutil.which("helm") is None:
            return "helm is not on PATH"
    return None


def _probe(command: list[str], needed: str, what: str) -> str | None:
    if shutil.which(needed) is None or shutil.which(command[0]) is None:
        return f"{needed} is not on PATH"
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{what} does not answer: {exc}"
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()
        return f"{what} does not answer: {last[-1] if last else f'exit {done.returncode}'}"
    return None
