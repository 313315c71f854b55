"""What the bundle's RO-Crate says about it: its files, parameters and original run.

`describe` builds the `CrateDescription` that `write_crate` turns into
`ro-crate-metadata.json`: a title and a description of every file of the bundle
(`_crate_file`), the workflow's inputs and outputs as formal parameters (`_parameters`), the
license and author given, and, with an original run, that run as a CreateAction.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from nb2cwl.backends.bundle.files import _files, load_yaml
from nb2cwl.backends.bundle.names import (
    CHECK_REPORT,
    INPUTS,
    MAP,
    OUTPUTS,
    PROVENANCE,
    SEAL,
    SUMS,
    VERIFY_STEP,
)
from nb2cwl.backends.bundle.original_run import Run
from nb2cwl.backends.crate import CrateDescription, CrateFile, Parameter, RunRecord
from nb2cwl.backends.naming import RUNTIME_ARCHIVE, notebook_file_name
from nb2cwl.ir.model import Workflow

if TYPE_CHECKING:
    from nb2cwl.backends.bundle import BundleOptions


def describe(workflow: Workflow, root: Path, options: BundleOptions,
             run: Run | None) -> CrateDescription:
    name = workflow.notebook_name
    described: list[CrateFile] = []
    for rel in _files(root):
        described.append(_crate_file(rel, name))
    run_record = None
    if run is not None:
        inputs = sorted(rel for rel in _files(root) if rel.startswith(f"{INPUTS}/"))
        objects = [f"notebook/{notebook_file_name(workflow)}", *inputs]
        run_record = RunRecord(name=f"The original run of {name} with StreamFlow",
                               start=run.start, end=run.end, results=tuple(run.outputs),
                               objects=tuple(objects))
    stamp = datetime.date.today().isoformat()
    return CrateDescription(
        name=f"{name}: a reproducible workflow bundle",
        description=(f"The notebook {name} compiled by nb2cwl into a CWL v1.2 workflow for "
                     "StreamFlow, with its inputs, environment lock, seeds and checksums"
                     + (", and the provenance and outputs of its original run" if run else "")
                     + f" (bundled {stamp})."),
        workflow="workflow.cwl",
        files=tuple(described),
        license=options.license,
        author=options.author,
        keywords=("Jupyter notebook", "CWL", "StreamFlow", "nb2cwl"),
        run=run_record,
        parameters=_parameters(root / "workflow.cwl"),
        unlisted=(CrateFile(SUMS, SUMS, "the sha256 of every other file of the bundle"),),
    )


def _parameters(path: Path) -> tuple[Parameter, ...]:
    document = load_yaml(path)
    found = []
    for direction, key in (("input", "inputs"), ("output", "outputs")):
        for item in document.get(key, []):
            kind = item.get("type")
            if isinstance(kind, dict):  # a list parameter: its items' type
                kind = kind.get("items")
            description = str(item.get("label") or "")
            if item.get("doc"):  # a notebook parameter: where it is declared
                description = f"notebook parameter {description}, declared in {item['doc']}"
            default = item.get("default")
            found.append(Parameter(direction, str(item["id"]),
                                   kind if isinstance(kind, str) else "Text", description,
                                   None if default is None else json.dumps(default)))
    return tuple(found)


def _crate_file(rel: str, notebook: str) -> CrateFile:
    base = os.path.basename(rel)
    if rel == "workflow.cwl":
        return CrateFile(rel, f"{notebook} as a CWL workflow",
                         "the CWL v1.2 workflow: one step per notebook cell", "tool")
    if rel == "workflow.packed.cwl":
        return CrateFile(rel, "the workflow in one file",
                         "workflow.cwl with every tool packed in", "packed")
    if rel.startswith("tools/"):
        step = base[:-len(".cwl")]
        what = ("checks every file of the bundle against the seal" if step == VERIFY_STEP
                else f"runs steps/{step}.py")
        return CrateFile(rel, f"CWL tool {step}", what, "tool")
    if rel.startswith("steps/"):
        return CrateFile(rel, f"step script {base}", "the cells and definitions one step runs",
                         "code")
    if rel == RUNTIME_ARCHIVE:
        return CrateFile(rel, "step runtime", "the runtime every step imports (its Python "
                         "files, zipped)", "code")
    if rel.startswith("notebook/"):
        return CrateFile(rel, base, "the source notebook")
    if rel.startswith(f"{INPUTS}/"):
        return CrateFile(rel, rel[len(INPUTS) + 1:], "a file beside the notebook that a cell "
                         "reads")
    if rel.startswith(f"{OUTPUTS}/"):
        return CrateFile(rel, rel[len(OUTPUTS) + 1:], "an output of the original run")
    fixed = {
        "job.yml": ("job.yml", "the workflow's inputs"),
        "streamflow.yml": ("streamflow.yml", "the StreamFlow configuration: deployments, "
                           "bindings, database"),
        "README.md": ("README.md", "how to run the bundle again and check it"),
        SEAL: (SEAL, "the sha256 of every file the steps read, checked by every step"),
        MAP: (MAP, "notebook cells to steps; variables and files to what carries them"),
        PROVENANCE: ("provenance of the original run", "a Workflow Run RO-Crate written by "
                     "streamflow prov"),
        CHECK_REPORT: ("nb2cwl check report", "the original run compared cell by cell with "
                       "the notebook run top to bottom in a kernel (nb2cwl check)"),
        "environment/requirements.txt": ("requirements.txt", "the environment lock: exact "
                                         "versions of every package (pip)"),
        "environment/lock.json": ("lock.json", "the Python version and why each package is "
                                  "in the lock"),
        "environment/seeds.json": ("seeds.json", "the seeds the notebook sets and the random "
                                   "state reruns start from"),
        "environment/Dockerfile": ("Dockerfile", "a container recipe for the environment"),
    }
    if rel in fixed:
        title, what = fixed[rel]
        return CrateFile(rel, title, what, about_root=rel == "README.md")
    return CrateFile(rel, base, "a deployment or configuration file of the workflow")
