"""Copying into the bundle: the compiled files, the notebook's input files, deployment files.

`check_output` refuses an output name before any work is done. `copy_compiled` copies the
files the compiled output's manifest lists, `copy_inputs` copies every file beside the notebook
that a cell reads into `inputs/` and points `job.yml` there, and `carry_deployment_files` copies
the charts and templates `streamflow.yml` names by absolute path into `deployments/`, warning
about credentials and other files that stay where the bundle is run.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from ruamel.yaml import YAML

from nb2cwl.backends.bundle.names import INPUTS
from nb2cwl.backends.naming import RUNTIME_ARCHIVE, RUNTIME_PACKAGE
from nb2cwl.backends.writer import MANIFEST
from nb2cwl.errors import BundleError, OutputExistsError
from nb2cwl.ir.model import Workflow


def check_output(output: str, force: bool) -> None:
    """Refuse an output that is not a .zip name, or that exists (unless `force`)."""
    if not output.endswith(".zip"):
        raise BundleError(f"{output}: the bundle is a zip file; name it BUNDLE.zip")
    if os.path.isdir(output):
        raise OutputExistsError(f"{output} is a directory; name a zip file to write")
    if os.path.exists(output) and not force:
        raise OutputExistsError(f"{output} already exists; choose another name or pass --force "
                                "to replace it")


def copy_compiled(compiled: Path, root: Path) -> None:
    manifest = compiled / MANIFEST
    listed = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    for rel in listed:
        if rel == MANIFEST:
            continue
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(compiled / rel, target)
    if not _holds_guard(root / RUNTIME_ARCHIVE):
        raise BundleError(f"the compiled workflow has no {RUNTIME_ARCHIVE} holding "
                          f"{RUNTIME_PACKAGE}/checksums.py: compile it again with this nb2cwl")


def _holds_guard(archive: Path) -> bool:
    """The runtime's zip holds the bundle's checking code (checksums.py)."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            return f"{RUNTIME_PACKAGE}/checksums.py" in zipped.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def copy_inputs(workflow: Workflow, job: dict[str, Any], root: Path) -> None:
    """Copy each file beside the notebook the workflow reads into inputs/; point job.yml there."""
    notebook_dir = Path(workflow.notebook_path).resolve().parent
    for number, (path, kind) in enumerate(workflow.external_files):
        rel = PurePosixPath(path.replace(os.sep, "/"))
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise BundleError(f"{workflow.notebook_name}: input {path!r} is outside the "
                              "notebook's folder and cannot be bundled")
        source = notebook_dir / path
        target = root / INPUTS / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "Directory":
            if not source.is_dir():
                raise BundleError(f"{workflow.notebook_name}: input folder {path} beside the "
                                  "notebook does not exist")
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            if not source.is_file():
                raise BundleError(f"{workflow.notebook_name}: input file {path} beside the "
                                  "notebook does not exist")
            shutil.copyfile(source, target)
        job[f"external_{number}"] = {"class": kind, "path": f"{INPUTS}/{rel}"}


#: Deployment settings naming files StreamFlow reads relative to streamflow.yml: carried.
_CARRIED_KEYS = ("chart", "file")
#: Settings naming credentials or files read relative to the working directory: not carried.
_LOCAL_KEYS = ("kubeconfig", "sshKey", "passwordFile", "sshKeyPassphraseFile", "caFile",
               "certFile", "keyFile", "kubeCaFile", "yamlValues", "envFile", "labelFile")


def carry_deployment_files(root: Path) -> list[str]:
    """Copy charts and templates streamflow.yml names by absolute path into deployments/."""
    path = root / "streamflow.yml"
    yaml = YAML()
    config = yaml.load(path.read_text(encoding="utf-8"))
    warnings: list[str] = []
    changed = False

    def carry(value: str, name: str, what: str) -> str | None:
        source = Path(value)
        if not source.exists():
            warnings.append(f"deployment {name}: {what} {value} does not exist here; the "
                            "bundle names it as it is")
            return None
        target = root / "deployments" / name / source.name
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        return target.relative_to(root).as_posix()

    for name, entry in (config.get("deployments") or {}).items():
        settings = (entry or {}).get("config") or {}
        places = [(settings, key, key) for key in _CARRIED_KEYS]
        places += [(service, "file", f"service {service_name} file")
                   for service_name, service in (settings.get("services") or {}).items()
                   if isinstance(service, dict)]
        for holder, key, what in places:
            value = holder.get(key)
            if isinstance(value, str) and os.path.isabs(value):
                relative = carry(value, name, what)
                if relative is not None:
                    holder[key] = relative
                    changed = True
        for key in _LOCAL_KEYS:
            values = settings.get(key)
            for value in values if isinstance(values, list) else [values]:
                if isinstance(value, str) and value:
                    warnings.append(f"deployment {name}: {key} {value} is not in the bundle "
                                    "(credentials and files read from the working directory "
                                    "stay where you run it); provide it there")
    if changed:
        with path.open("w", encoding="utf-8") as handle:
            yaml.dump(config, handle)
    return warnings
