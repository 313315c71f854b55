"""What running steps costs on each deployment: measured by `nb2cwl calibrate`, else the
figures the deployment's profile carries (streamflow-configs/<kind>.yml, `nb2cwl.costs`).

Measurements are kept per deployment name in a calibration file: $NB2CWL_CALIBRATION, else
$XDG_CONFIG_HOME/nb2cwl/calibration.json (~/.config/nb2cwl/calibration.json).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nb2cwl.backends.deployments import (
    KINDS,
    Deployment,
    default_deployment,
    load_deployment_file,
    load_profile,
    notebook_definitions,
)
from nb2cwl.errors import BackendError
from nb2cwl.ir.model import Workflow
from nb2cwl.options import CompileOptions
from nb2cwl.passes.cost_model import Costs


def calibration_file() -> Path:
    """Where measured costs are kept."""
    if os.environ.get("NB2CWL_CALIBRATION"):
        return Path(os.environ["NB2CWL_CALIBRATION"])
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"),
                                                             ".config")
    return Path(base) / "nb2cwl" / "calibration.json"


def read_calibration() -> dict[str, dict[str, Any]]:
    """Measured costs by deployment name ({} when there are none or the file is unusable)."""
    try:
        data = json.loads(calibration_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_calibration(name: str, costs: Costs) -> Path:
    """Keep `costs` measured for deployment `name`; return the file."""
    path = calibration_file()
    data = read_calibration()
    data[name] = {"step_seconds": costs.step_seconds,
                  "bytes_per_second": costs.bytes_per_second, "cores": costs.cores,
                  "source": costs.source}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def deployment_costs(workflow: Workflow, options: CompileOptions) -> tuple[dict[str, Costs],
                                                                           Costs]:
    """The costs of every deployment the steps are bound to, and of the default one."""
    defined = notebook_definitions(workflow)
    if options.deployment_file:
        defined.update(load_deployment_file(options.deployment_file))
    measured = read_calibration()
    names = {step.target for step in workflow.steps if step.target}
    default_name = default_deployment(options)
    found = {name: costs_of(name, defined, measured) for name in names | {default_name}}
    return found, found[default_name]


def costs_of(name: str, defined: dict[str, Deployment],
             measured: dict[str, dict[str, Any]]) -> Costs:
    """Measured costs of deployment `name`, else its profile's, else its kind's."""
    entry = measured.get(name)
    if isinstance(entry, dict):
        return _costs(entry, str(entry.get("source") or f"measured by nb2cwl calibrate "
                                                       f"({calibration_file()})"))
    deployment = defined.get(name) or (load_profile(name) if name in KINDS else None)
    if deployment is not None and deployment.costs:
        return _costs(deployment.costs, f"the costs deployment {name} declares")
    kind = deployment.type if deployment is not None else "local"
    profile = load_profile(kind if kind in KINDS else "local")
    if not profile.costs:
        raise BackendError(f"the built-in profile {kind} declares no costs (nb2cwl.costs)")
    return _costs(profile.costs, f"the {profile.name} profile's figures (measure them with "
                                 "nb2cwl calibrate)")


def _costs(entry: dict[str, Any], source: str) -> Costs:
    cores = entry.get("cores", "auto")
    return Costs(float(entry.get("step_seconds", 0.25)),
                 float(entry.get("bytes_per_second", 2e8)),
                 os.cpu_count() or 1 if cores in (None, "auto") else int(cores), source)
