"""A step's needs (--resources; one GPU for a loop calling a @gpu_task function) as the
settings of its deployment's connector: a Slurm service with its cores, memory, GPUs and nodes;
a Docker container with limits and GPUs; a Helm release whose pods request them. A deployment
without needs is used as it is; each combination of needs gets one variant, shared by the
steps that have it.
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any

from nb2cwl.backends.resources import describe
from nb2cwl.errors import BackendError, Diagnostic, Location

if TYPE_CHECKING:
    from nb2cwl.backends.deployments import Deployment, DeploymentPlan
    from nb2cwl.ir.model import Resources

# added to a GPU step's container when the deployment says nothing (NCCL needs shared memory)
DOCKER_GPU_DEFAULTS: dict[str, Any] = {"shmSize": 2 << 30,
                                       "ulimit": ["memlock=-1", "stack=67108864"]}
HELM_SERVICE = "worker"


def needs_target(deployment: Deployment, needs: Resources, plan: DeploymentPlan, who: str,
             where: Location) -> dict[str, Any]:
    """Add the deployment (or its variant for `needs`) to the plan; return the binding target."""
    kind = deployment.type
    if needs.nodes > 1 and kind not in ("slurm", "helm", "helm4"):
        raise BackendError(f"{who} asks for {needs.nodes} nodes, but deployment "
                           f"{deployment.name} ({kind}) runs on one machine; bind it to a Slurm "
                           "deployment", where)
    if kind == "slurm":
        return _slurm(deployment, needs, plan)
    if kind == "docker":
        return _docker(deployment, needs, plan)
    if kind in ("helm", "helm4", "kubernetes"):
        return _pods(deployment, needs, plan, who, where)
    plan.deployments.setdefault(deployment.name, deployment.entry)
    if kind == "local" and needs.cores and needs.cores > (os.cpu_count() or 1):
        plan.diagnostics.append(Diagnostic(
            "resources-exceed-local", f"{who} needs {needs.cores} cores but this machine has "
            f"{os.cpu_count()}; StreamFlow will wait for them forever on deployment "
            f"{deployment.name}", where))
    elif kind != "local" and (needs.gpus or needs.cores or needs.memory_mb):
        plan.diagnostics.append(Diagnostic(
            "resources-not-configured", f"{who} needs {describe(needs)}; nb2cwl writes these "
            f"into the CWL ResourceRequirement only, not into the {kind} connector settings of "
            f"deployment {deployment.name}", where))
    target: dict[str, Any] = {"deployment": deployment.name}
    if deployment.service:
        target["service"] = deployment.service
    return target


def _slurm(deployment: Deployment, needs: Resources, plan: DeploymentPlan) -> dict[str, Any]:
    services = deployment.config.get("services") or {}
    base = deployment.service or ("default" if "default" in services else None)
    if base is not None and base not in services:
        raise BackendError(f"deployment {deployment.name} ({deployment.origin}): service "
                           f"{base!r} named by nb2cwl.service is not among its services")
    entry = plan.deployments.setdefault(deployment.name, deployment.entry)
    if needs.is_default:
        return {"deployment": deployment.name, **({"service": base} if base else {})}
    name = f"{base or 'nb2cwl'}-{describe(needs)}"
    service = copy.deepcopy(services.get(base, {})) if base else {}
    if needs.gpus:
        service.update(copy.deepcopy(deployment.gpu or {}))  # e.g. the GPU partition
    if needs.cores:
        service["cpusPerTask"] = needs.cores
    if needs.memory_mb:
        service["mem"] = f"{needs.memory_mb}M"
    if needs.gpus:
        service["gres"] = f"gpu:{needs.gpus}"
        service.pop("gpus", None)
    if needs.nodes > 1:
        service["nodes"] = str(needs.nodes)
        service["ntasksPerNode"] = 1
    entry["config"].setdefault("services", {})[name] = service
    return {"deployment": deployment.name, "service": name}


def _docker(deployment: Deployment, needs: Resources, plan: DeploymentPlan) -> dict[str, Any]:
    if needs.is_default:
        plan.deployments.setdefault(deployment.name, deployment.entry)
        return {"deployment": deployment.name}
    name = f"{deployment.name}-{describe(needs)}"
    if name not in plan.deployments:
        entry = copy.deepcopy(deployment.entry)
        config = entry["config"]
        if needs.gpus:
            config.update(copy.deepcopy(
                deployment.gpu if deployment.gpu is not None else DOCKER_GPU_DEFAULTS))
            config["gpus"] = str(needs.gpus)
        if needs.cores:
            config["cpus"] = needs.cores
        if needs.memory_mb:
            config["memory"] = needs.memory_mb * 1024 * 1024
        plan.deployments[name] = entry
    return {"deployment": name}


def _pods(deployment: Deployment, needs: Resources, plan: DeploymentPlan, who: str,
          where: Location) -> dict[str, Any]:
    service = deployment.service or HELM_SERVICE
    name = deployment.name
    if needs.is_default:
        plan.deployments.setdefault(name, deployment.entry)
    elif deployment.type == "kubernetes":
        plan.deployments.setdefault(name, deployment.entry)
        plan.diagnostics.append(Diagnostic(
            "resources-not-configured", f"{who} needs {describe(needs)}; write the requests "
            f"into the manifests of kubernetes deployment {name}", where))
    else:
        name = f"{deployment.name}-{describe(needs)}"
        if name not in plan.deployments:
            entry = copy.deepcopy(deployment.entry)
            values: dict[str, Any] = {}
            if needs.gpus:
                values.update(deployment.gpu or {})
                values["gpus"] = needs.gpus
            if needs.cores:
                values["resources.cpu"] = needs.cores
            if needs.memory_mb:
                values["resources.memory"] = f"{needs.memory_mb}Mi"
            if needs.nodes > 1:
                values["replicas"] = needs.nodes
            add_values(entry["config"], values)
            plan.deployments[name] = entry
    target: dict[str, Any] = {"deployment": name, "service": service}
    if needs.nodes > 1:
        target["locations"] = needs.nodes
    return target


def add_values(config: dict[str, Any], values: dict[str, Any]) -> None:
    """Append chart values to commandLineValues (helm --set; the later value wins)."""
    pairs = [f"{k}={v}" for k, v in values.items()]
    existing = config.get("commandLineValues")
    config["commandLineValues"] = ",".join(([existing] if existing else []) + pairs)
