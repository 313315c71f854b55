"""Where steps run: deployment definitions, step bindings, and each step's needs as settings.

Deployment definitions come from the profiles in streamflow-configs/ (local, docker, slurm,
helm) and from a --deployment-file in the same format, whose names take precedence. A step is
bound by the first --target pattern that matches it, else by its cell's Jupyter-Workflow
`workflow.target`, else to the default deployment: --deployment, the only deployment of a
--deployment-file, or local.

A step's needs (--resources; one GPU for a loop calling a @gpu_task function) become settings
StreamFlow acts on, by connector type: a Slurm service, a Docker container with limits and
GPUs, a Helm release whose pods request them. `plan_deployments` returns the deployments and
bindings that go into streamflow.yml.
"""

from __future__ import annotations

import copy
import os
import re
import sys
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from nb2cwl.backends.chunk_containers import chunk_targets, first_target
from nb2cwl.backends.connector_settings import add_values, needs_target
from nb2cwl.backends.resources import parse_resources
from nb2cwl.errors import BackendError, Diagnostic, Location
from nb2cwl.ir.model import Resources, Step, Workflow
from nb2cwl.options import CompileOptions


def _profiles() -> Path:
    """streamflow-configs/: in the source tree, or where `pip install` put it (the worker
    chart the helm profile names stays beside it, at ../containers/helm/nb2cwl-worker)."""
    source = Path(__file__).resolve().parent.parent.parent / "streamflow-configs"
    installed = Path(sys.prefix) / "share" / "nb2cwl" / "streamflow-configs"
    return source if source.is_dir() or not installed.is_dir() else installed


PROFILES = _profiles()
KINDS = ("local", "docker", "slurm", "helm")
ASSEMBLE = "assemble"
SELECTORS = {"@gpu": "steps that need GPUs", "@map": "the scattered parts of parallel loops",
             "@train": "training steps (Keras fit or a GradientTape loop)"}
_NAME = re.compile(r"^[a-z][a-zA-Z0-9._-]*$")
_PART = re.compile(r"_(split|map|gather)$")
TAGGED = "step_"  # prefix of the steps named by nb2cwl:step= tags (passes/build.py)
# settings StreamFlow 0.2.0rc3 accepts but mishandles, or rejects: never emitted
_BROKEN: dict[str, dict[str, str]] = {
    "slurm": {"mincpus": "it is passed to sbatch as a wrong flag; use cpusPerTask",
              "useMinNodes": "it is passed to sbatch as a wrong flag"},
    "docker": {"addHost": "it is passed to docker run as --blkio-weight"},
    "helm": {"wait": "the schema rejects it", "serverSide": "the schema rejects it",
             "contentCache": "the schema rejects it",
             "queriesPerSecond": "it crashes StreamFlow's validation"},
    "helm4": {"wait": "the schema rejects it", "serverSide": "the schema rejects it",
              "contentCache": "the schema rejects it",
              "queriesPerSecond": "it crashes StreamFlow's validation"},
}
# deployment settings that name files: made absolute, relative to the file defining them
_PATH_KEYS = ("chart", "kubeconfig", "file", "yamlValues", "envFile", "labelFile", "sshKey",
              "passwordFile", "sshKeyPassphraseFile", "caFile", "certFile", "keyFile",
              "kubeCaFile")


@dataclass(frozen=True)
class Deployment:
    """One deployment definition, as StreamFlow gets it, plus nb2cwl's own settings for it."""

    name: str
    type: str
    entry: dict[str, Any]  # type, config and StreamFlow's other deployment keys
    origin: str  # where it was defined, for messages
    service: str | None = None  # the service steps bind to (Slurm base service, pod container)
    gpu: dict[str, Any] | None = None  # settings merged in for steps that need GPUs
    costs: dict[str, Any] | None = None  # what a step boundary costs (backends/calibration.py)

    @property
    def config(self) -> dict[str, Any]:
        """The connector configuration."""
        return self.entry.setdefault("config", {})


@dataclass
class DeploymentPlan:
    """The deployments and bindings that go into streamflow.yml."""

    deployments: dict[str, dict[str, Any]]
    bindings: list[dict[str, Any]]
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def runs_locally(self, step: str) -> bool:
        """True when step `step` (or `assemble`) runs on a deployment of type local."""
        target = next((b["target"] for b in self.bindings if b["step"] == f"/{step}"),
                      next((b["target"] for b in self.bindings if b["step"] == "/"), None))
        if target is None:
            return False
        return self.deployments.get(first_target(target)["deployment"], {}).get(
            "type") == "local"


def bind_steps(workflow: Workflow, options: CompileOptions) -> Workflow:
    """Give every step its deployment name and its resource needs."""
    resources = [(p, parse_resources(spec, f"--resources {p}={spec}"))
                 for p, spec in options.resources]
    diagnostics = [d for d in workflow.diagnostics if d.code != "target-not-bound"]
    _check_patterns(workflow, [p for p, _ in resources], "--resources", diagnostics)
    default = default_deployment(options)
    steps = []
    for step in workflow.steps:
        needs = next((r for p, r in resources if _matches(p, step, gpu=_hinted_gpu(step))),
                     step.resources)  # the notebook's own (Kale's limit:nvidia.com/gpu:N)
        if _hinted_gpu(step) and not needs.gpus:
            needs = replace(needs, gpus=1)
        step = replace(step, resources=needs)
        target = next((d for p, d in options.targets if _matches(p, step)), None)
        steps.append(replace(step, target=target or step.target or default))
    workflow = replace(workflow, steps=tuple(steps))
    _check_patterns(workflow, [p for p, _ in options.targets], "--target", diagnostics)
    return replace(workflow, diagnostics=tuple(diagnostics))


def default_deployment(options: CompileOptions) -> str:
    """The deployment of steps nothing else binds."""
    if options.deployment:
        return options.deployment
    if options.deployment_file:
        defined = load_deployment_file(options.deployment_file)
        if len(defined) == 1:
            return next(iter(defined))
    return "local"


def assemble_target(options: CompileOptions) -> str:
    """The deployment of the step that writes the executed notebook."""
    match = next((d for p, d in options.targets if not p.startswith("@")
                  and fnmatchcase(ASSEMBLE, p)), None)
    return match or default_deployment(options)


def plan_deployments(workflow: Workflow, options: CompileOptions) -> DeploymentPlan:
    """The deployments steps are bound to, with one variant per distinct set of needs.

    A --deployment-file's definitions win over those of the notebook's own metadata."""
    defined = notebook_definitions(workflow)
    if options.deployment_file:
        defined.update(load_deployment_file(options.deployment_file))
    plan = DeploymentPlan({}, [])
    chosen: dict[str, Deployment] = {}

    def deployment(name: str, who: str, where: Location) -> Deployment:
        if name not in chosen:
            found = defined.get(name) or (load_profile(name) if name in KINDS else None)
            if found is None:
                known = sorted(set(defined) | set(KINDS))
                raise BackendError(
                    f"{who} names deployment {name!r}, which is not defined; define it in a "
                    "--deployment-file or in the notebook's 'workflow.deployments' metadata, "
                    f"or use one of: {', '.join(known)}", where)
            chosen[name] = _customised(found, options)
            _check_broken(chosen[name])
        return chosen[name]

    default = default_deployment(options)
    notebook = Location(workflow.notebook_name)
    root = needs_target(deployment(default, "--deployment", notebook), Resources(), plan,
                    "the default", notebook)
    plan.bindings.append({"step": "/", "target": root})
    for step in workflow.steps:
        first = step.cells[0]
        where = Location(workflow.notebook_name, first.index, first.cell_id)
        name = step.target or default
        who = f"step {step.name} ({_source(step, options, default)})"
        target = needs_target(deployment(name, who, where), step.resources, plan,
                          f"step {step.name}", where)
        target = chunk_targets(step, target, plan.deployments, options.chunks)
        if target != root:
            plan.bindings.append({"step": f"/{step.name}", "target": target})
    name = assemble_target(options)
    target = needs_target(deployment(name, "--target for step assemble", notebook), Resources(),
                      plan, "step assemble", notebook)
    if target != root:
        plan.bindings.append({"step": f"/{ASSEMBLE}", "target": target})
    _check_unused_options(options, chosen, plan, notebook)
    return plan


def load_profile(kind: str) -> Deployment:
    """The built-in profile for `kind` (local, docker, slurm, helm) from streamflow-configs/."""
    path = PROFILES / f"{kind}.yml"
    if not path.is_file() and kind == "local":  # compiling needs no profile: local is plain
        return Deployment("local", "local", {"type": "local", "config": {}}, "built-in",
                          costs={"step_seconds": 0.25, "bytes_per_second": 2e8})
    if not path.is_file():
        raise BackendError(f"the built-in deployment profile {path} is missing; pass your own "
                           "deployments with --deployment-file")
    return _read_definitions(path, f"profile {path.name}")[kind]


def load_deployment_file(path: str) -> dict[str, Deployment]:
    """The deployments a --deployment-file defines, by name."""
    return _read_definitions(Path(path), f"--deployment-file {path}")


def notebook_definitions(workflow: Workflow) -> dict[str, Deployment]:
    """The deployments the notebook's Jupyter-Workflow metadata defines, by name."""
    if not workflow.notebook_deployments:
        return {}
    entries = {name: _jupyter_workflow_entry(entry)
               for name, entry in workflow.notebook_deployments.items()}
    return _parse_definitions(entries, f"the 'workflow' metadata of {workflow.notebook_name}",
                              Path(workflow.notebook_path).parent)


def _jupyter_workflow_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """Jupyter-Workflow's `helm` and `helm3` are Helm 3 charts: StreamFlow's `helm`."""
    entry = dict(entry)
    if entry.get("type") in ("helm3", "helm2"):
        entry["type"] = "helm"
    return entry


def _read_definitions(path: Path, origin: str) -> dict[str, Deployment]:
    try:
        document = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BackendError(f"{origin}: cannot read it: {exc.strerror}") from None
    except YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BackendError(f"{origin}: not valid YAML: {first}") from None
    entries = document.get("deployments") if isinstance(document, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise BackendError(f"{origin}: expected a 'deployments' mapping of names to "
                           "{type, config} (see streamflow-configs/)")
    return _parse_definitions(entries, origin, path.resolve().parent)


def _parse_definitions(entries: dict[str, Any], origin: str, base: Path
                       ) -> dict[str, Deployment]:
    found = {}
    for name, entry in entries.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise BackendError(f"{origin}: deployment name {name!r} must start with a lowercase "
                               "letter and hold only letters, digits, '.', '_' and '-'")
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise BackendError(f"{origin}: deployment {name} needs a 'type' (local, docker, "
                               "slurm, helm, ...) and a 'config' mapping")
        entry = copy.deepcopy(entry)
        own = entry.pop("nb2cwl", None) or {}
        if not isinstance(own, dict) or not set(own) <= {"service", "gpu", "costs"}:
            raise BackendError(f"{origin}: deployment {name}: 'nb2cwl' may hold only 'service', "
                               "'gpu' and 'costs'")
        costs = own.get("costs")
        if costs is not None and not (isinstance(costs, dict) and set(costs) <= {
                "step_seconds", "bytes_per_second", "cores"}):
            raise BackendError(f"{origin}: deployment {name}: 'nb2cwl.costs' may hold "
                               "step_seconds, bytes_per_second and cores")
        if entry.get("config") is None:
            entry["config"] = {}
        if not isinstance(entry["config"], dict):
            raise BackendError(f"{origin}: deployment {name}: 'config' must be a mapping")
        gpu = own.get("gpu")
        if gpu is not None and not isinstance(gpu, dict):
            raise BackendError(f"{origin}: deployment {name}: 'nb2cwl.gpu' must be a mapping")
        _absolute_paths(entry["config"], base)
        found[name] = Deployment(name, entry["type"], entry, origin, own.get("service"), gpu,
                                 costs)
    return found


def _absolute_paths(config: dict[str, Any], base: Path) -> None:
    """Relative file settings are relative to the definitions file; StreamFlow's are not."""
    def fix(value: Any) -> Any:
        if isinstance(value, str) and value and not os.path.isabs(value) \
                and (base / value).exists():
            return str((base / value).resolve())
        if isinstance(value, list):
            return [fix(v) for v in value]
        return value

    for key in _PATH_KEYS:
        if key in config:
            config[key] = fix(config[key])
    for service in (config.get("services") or {}).values():
        if isinstance(service, dict) and "file" in service:
            service["file"] = fix(service["file"])


def _customised(found: Deployment, options: CompileOptions) -> Deployment:
    """A private copy with --image and --chart applied."""
    deployment = replace(found, entry=copy.deepcopy(found.entry),
                         gpu=copy.deepcopy(found.gpu))
    if options.image and deployment.type == "docker":
        deployment.config["image"] = options.image
        if deployment.gpu:
            deployment.gpu.pop("image", None)
    if deployment.type in ("helm", "helm4"):
        if options.chart:
            chart = Path(options.chart)
            if not (chart.is_dir() and (chart / "Chart.yaml").is_file()) and not (
                    chart.is_file() and chart.name.endswith((".tgz", ".tar.gz"))):
                raise BackendError(f"--chart {options.chart}: not a chart directory (with "
                                   "Chart.yaml) or a packaged chart (.tgz)")
            deployment.config["chart"] = str(chart.resolve())
        if options.image:
            add_values(deployment.config, {"image": options.image})
            if deployment.gpu:
                deployment.gpu.pop("image", None)
    if deployment.type == "helm3":
        raise BackendError(f"deployment {deployment.name} ({deployment.origin}): the helm3 "
                           "connector of StreamFlow 0.2.0rc3 rejects 'chart'; use type: helm")
    return deployment


def _check_broken(deployment: Deployment) -> None:
    broken = _BROKEN.get(deployment.type, {})
    settings = [deployment.config]
    if deployment.type == "slurm":
        settings += [s for s in (deployment.config.get("services") or {}).values()
                     if isinstance(s, dict)]
    for mapping in settings:
        for key, why in broken.items():
            if key in mapping:
                raise BackendError(f"deployment {deployment.name} ({deployment.origin}): "
                                   f"remove {key!r}: in StreamFlow 0.2.0rc3 {why}")


def _check_unused_options(options: CompileOptions, chosen: dict[str, Deployment],
                          plan: DeploymentPlan, where: Location) -> None:
    kinds = {d.type for d in chosen.values()}
    if options.image and not kinds & {"docker", "helm", "helm4"}:
        plan.diagnostics.append(Diagnostic(
            "option-unused", "--image is set but no step runs on a docker or helm deployment",
            where))
    if options.chart and not kinds & {"helm", "helm4"}:
        plan.diagnostics.append(Diagnostic(
            "option-unused", "--chart is set but no step runs on a helm deployment", where))


def _source(step: Step, options: CompileOptions, default: str) -> str:
    """What bound `step` to its deployment, for messages."""
    for pattern, name in options.targets:
        if _matches(pattern, step):
            return f"--target {pattern}={name}"
    if step.target != default:
        return "cell metadata workflow.target"
    return "--deployment" if options.deployment else "the default deployment"


def _hinted_gpu(step: Step) -> bool:
    """A loop calling a @gpu_task function: its per-item part needs a GPU."""
    return step.plan is not None and step.plan.gpu and step.role in ("map", "cell")


def _matches(pattern: str, step: Step, gpu: bool | None = None) -> bool:
    if pattern == "@gpu":
        return bool(step.resources.gpus) if gpu is None else gpu
    if pattern == "@map":
        return step.role == "map"
    if pattern == "@train":
        return step.training is not None
    names = [step.name]
    if step.role in ("split", "map", "gather"):
        names.append(_PART.sub("", step.name))
    # a step made by the tag nb2cwl:step=train is called step_train: `train` matches it too
    names += [n.removeprefix(TAGGED) for n in names if n.startswith(TAGGED)]
    return any(fnmatchcase(name, pattern) for name in names)


def _check_patterns(workflow: Workflow, patterns: list[str], option: str,
                    diagnostics: list[Diagnostic]) -> None:
    names = [s.name for s in workflow.steps] + [ASSEMBLE]
    for pattern in patterns:
        if pattern.startswith("@"):
            if pattern not in SELECTORS:
                raise BackendError(f"{option} {pattern}: unknown selector; use "
                                   + " or ".join(f"{k} ({v})" for k, v in SELECTORS.items()))
            if not any(_matches(pattern, s, gpu=_hinted_gpu(s) or None)
                       for s in workflow.steps):
                diagnostics.append(Diagnostic("pattern-unmatched", f"{option} {pattern} "
                                              "matches no step", Location(workflow.notebook_name)))
            continue
        if any(_matches(pattern, s) for s in workflow.steps) or fnmatchcase(ASSEMBLE, pattern):
            continue
        if any(c in pattern for c in "*?["):
            diagnostics.append(Diagnostic("pattern-unmatched", f"{option} {pattern} matches no "
                                          "step", Location(workflow.notebook_name)))
            continue
        raise BackendError(f"{option} {pattern}: no step is called {pattern!r}; the steps are "
                           f"{', '.join(names)} (see nb2cwl explain)",
                           Location(workflow.notebook_name))
