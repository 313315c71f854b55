"""ro-crate-metadata.json for a bundle: a Workflow RO-Crate 1.0, written with ro-crate-py."""

from __future__ import annotations

import datetime
import os
import platform
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rocrate.model.contextentity import ContextEntity
from rocrate.model.person import Person
from rocrate.rocrate import ROCrate

#: RO-Crate 1.1 is the version the Workflow RO-Crate 1.0 profile builds on.
RO_CRATE_VERSION = "1.1"
WORKFLOW_PROFILE = "https://w3id.org/workflowhub/workflow-ro-crate/1.0"
RO_CRATE_PROFILE = "https://w3id.org/ro/crate/1.1"
BIOSCHEMAS_WORKFLOW = "https://bioschemas.org/profiles/ComputationalWorkflow/1.0-RELEASE"
BIOSCHEMAS_PARAMETER = "https://bioschemas.org/profiles/FormalParameter/1.0-RELEASE"
NO_LICENSE = ("not specified: the notebook's author gave no license to nb2cwl export "
              "(--license); ask them before reusing it")
_PARAMETER_TYPES = {"File": "File", "Directory": "Dataset", "string": "Text", "int": "Integer",
                    "long": "Integer", "float": "Float", "double": "Float", "boolean": "Boolean"}

_FORMATS = {
    ".cwl": "text/x-yaml", ".yml": "text/x-yaml", ".yaml": "text/x-yaml",
    ".py": "text/x-python", ".ipynb": "application/x-ipynb+json", ".json": "application/json",
    ".md": "text/markdown", ".txt": "text/plain", ".sha256": "text/plain",
    ".zip": "application/zip", ".csv": "text/csv", ".png": "image/png", ".npy":
    "application/octet-stream", ".pkl": "application/octet-stream",
}


@dataclass(frozen=True)
class CrateFile:
    """A file of the bundle as the crate describes it."""

    path: str
    name: str
    description: str
    kind: str = "file"  # "file", "code" (Python source), "tool" (CWL), "packed" (CWL)
    about_root: bool = False


@dataclass(frozen=True)
class Parameter:
    """A workflow input or output, for the Bioschemas FormalParameter the crate lists."""

    direction: str  # "input" or "output"
    name: str
    type: str  # the CWL type
    description: str = ""
    default: str | None = None  # its default value, as JSON


@dataclass(frozen=True)
class RunRecord:
    """The original run, for the crate's CreateAction."""

    name: str
    start: str | None
    end: str | None
    results: tuple[str, ...]  # bundle paths of the run's outputs
    objects: tuple[str, ...]  # bundle paths of the run's inputs


@dataclass(frozen=True)
class CrateDescription:
    """Everything the crate says about the bundle."""

    name: str
    description: str
    workflow: str  # bundle path of the main workflow
    files: tuple[CrateFile, ...]
    license: str | None = None
    author: str | None = None
    keywords: tuple[str, ...] = ()
    run: RunRecord | None = None
    parameters: tuple[Parameter, ...] = ()
    unlisted: tuple[CrateFile, ...] = field(default=())  # written after the crate


def license_id(text: str) -> str:
    """An SPDX identifier as its URL; a URL as given."""
    if "://" in text:
        return text
    return f"https://spdx.org/licenses/{text}"


def write_crate(root: Path, info: CrateDescription) -> None:
    """Write `root/ro-crate-metadata.json` describing the bundle's files (already in `root`)."""
    crate = ROCrate(version=RO_CRATE_VERSION)
    crate.name = info.name
    crate.description = info.description
    if info.keywords:
        crate.keywords = list(info.keywords)
    license_: Any = NO_LICENSE
    if info.license:
        license_ = crate.add(ContextEntity(crate, license_id(info.license), properties={
            "@type": "CreativeWork", "name": info.license}))
    crate.license = license_
    author = None
    if info.author:
        author = crate.add(Person(crate, "#author", properties={"name": info.author}))
        crate.root_dataset["author"] = author
    python = crate.add(ContextEntity(crate, "#python", properties={
        "@type": "ComputerLanguage", "name": "Python",
        "identifier": {"@id": "https://www.python.org/"}, "url": {"@id": "https://www.python.org/"},
        "version": platform.python_version()}))
    described = {f.path: f for f in info.files}
    main = described[info.workflow]
    properties = _properties(main, info.workflow)
    properties.update({"conformsTo": {"@id": BIOSCHEMAS_WORKFLOW},
                       "dateCreated": datetime.date.today().isoformat(), "license": license_})
    if author is not None:
        properties["creator"] = author
    workflow = crate.add_workflow(source=root / info.workflow, dest_path=info.workflow, main=True,
                                  lang="cwl", lang_version="v1.2", properties=properties)
    for direction in ("input", "output"):
        entities = [crate.add(ContextEntity(crate, f"#{direction}-{p.name}", properties={
            "@type": "FormalParameter", "name": p.name,
            "additionalType": _PARAMETER_TYPES.get(p.type, "Text"),
            "conformsTo": {"@id": BIOSCHEMAS_PARAMETER},
            **({"description": p.description} if p.description else {}),
            **({"defaultValue": p.default} if p.default is not None else {})}))
            for p in info.parameters if p.direction == direction]
        if entities:
            workflow[direction] = _one_or_many(entities)
    cwl = workflow.lang
    tools = []
    for item in info.files:
        if item.path == info.workflow:
            continue
        properties = _properties(item, item.path)
        if item.kind in ("tool", "packed"):
            properties["@type"] = ["File", "SoftwareSourceCode"]
            properties["programmingLanguage"] = {"@id": cwl.id}
        elif item.kind == "code":
            properties["@type"] = ["File", "SoftwareSourceCode"]
            properties["programmingLanguage"] = {"@id": python.id}
        if item.about_root:
            properties["about"] = {"@id": "./"}
        entity = crate.add_file(source=root / item.path, dest_path=item.path,
                                properties=properties)
        if item.kind == "tool":
            tools.append(entity)
    if tools:
        workflow["hasPart"] = _one_or_many(tools)
    for item in info.unlisted:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # written after the crate: no source yet
            crate.add_file(source=None, dest_path=item.path,
                           properties=_properties(item, item.path))
    if info.run is not None:
        _add_run(crate, workflow, info.run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crate.write(root)


def _properties(item: CrateFile, path: str) -> dict[str, Any]:
    properties: dict[str, Any] = {"name": item.name, "description": item.description}
    fmt = _FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None and os.path.basename(path) == "Dockerfile":
        fmt = "text/plain"
    properties["encodingFormat"] = fmt or "application/octet-stream"
    return properties


def _add_run(crate: ROCrate, workflow: Any, run: RunRecord) -> None:
    action: dict[str, Any] = {
        "@type": "CreateAction",
        "name": run.name,
        "instrument": {"@id": workflow.id},
        "actionStatus": {"@id": "http://schema.org/CompletedActionStatus"},
        "object": _one_or_many([{"@id": quote(path)} for path in run.objects]),
        "result": _one_or_many([{"@id": quote(path)} for path in run.results]),
    }
    if run.start:
        action["startTime"] = run.start
    if run.end:
        action["endTime"] = run.end
    entity = crate.add(ContextEntity(crate, "#original-run", properties=action))
    crate.root_dataset["mentions"] = entity


def _one_or_many(items: list[Any]) -> Any:
    return items[0] if len(items) == 1 else items
