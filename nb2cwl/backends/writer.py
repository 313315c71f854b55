"""Write a compiled workflow into its output directory; never touch files nb2cwl did not write."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any

import nbformat
from ruamel.yaml import YAML

from nb2cwl.backends import cwl as cwl_backend
from nb2cwl.backends.deployments import DeploymentPlan
from nb2cwl.backends.job import job_document
from nb2cwl.backends.naming import (
    MANIFEST,
    RUNTIME_ARCHIVE,
    RUNTIME_PACKAGE,
    RUNTIME_SOURCE,
    notebook_file_name,
)
from nb2cwl.backends.output_dir import prepare_output_dir
from nb2cwl.backends.recovery import recovery_settings
from nb2cwl.backends.runtime_archive import write_runtime_archive
from nb2cwl.backends.step_scripts import assemble_script, step_script
from nb2cwl.backends.streamflow import streamflow_config
from nb2cwl.frontend.reader import is_script, read_document
from nb2cwl.ir.model import Workflow


def write_workflow(workflow: Workflow, out_dir: str, python: str = "python3",
                   force: bool = False, retries: int = 0, retry_delay: int = 0,
                   deployments: DeploymentPlan | None = None) -> list[str]:
    """Write workflow.cwl, tools, step scripts, runtime, job and streamflow.yml; list them."""
    archive = Path(out_dir) / RUNTIME_ARCHIVE
    previous = archive.read_bytes() if archive.is_file() else None  # (compiled code to reuse)
    prepare_output_dir(out_dir, force, workflow.notebook_path)
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    written: list[str] = []

    def put(rel: str, content: str) -> None:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        written.append(rel)

    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 100

    def put_yaml(rel: str, document: Any) -> None:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8") as handle:
            if rel.endswith(".cwl"):  # JSON, which is YAML too: StreamFlow reads it at once
                handle.write("#!/usr/bin/env cwl-runner\n")  # (nb2cwl.engine)
                json.dump(document, handle, indent=2, ensure_ascii=False)
                handle.write("\n")
            else:
                yaml.dump(document, handle)
        written.append(rel)

    def local(step: str) -> bool:
        return deployments is None or deployments.runs_locally(step)

    for step in workflow.steps:
        put(f"steps/{step.name}.py", step_script(workflow, step, local(step.name)))
        put_yaml(f"tools/{step.name}.cwl",
                 cwl_backend.as_document(cwl_backend.step_tool(workflow, step, python,
                                                                 local(step.name))))
    put("steps/assemble.py", assemble_script(workflow, local("assemble")))
    put_yaml("tools/assemble.cwl",
             cwl_backend.as_document(cwl_backend.assemble_tool(workflow, python,
                                                                     local("assemble"))))
    put_yaml("workflow.cwl", cwl_backend.as_document(cwl_backend.main_workflow(workflow)))
    write_runtime_archive(archive, previous)
    written.append(RUNTIME_ARCHIVE)
    _remove_runtime_folder(root / RUNTIME_PACKAGE)
    notebook_copy = f"notebook/{notebook_file_name(workflow)}"
    (root / "notebook").mkdir(exist_ok=True)
    if is_script(workflow.source_path):  # the executed notebook is built from its cells
        nbformat.write(read_document(workflow.source_path), str(root / notebook_copy))
    else:
        shutil.copyfile(workflow.source_path, root / notebook_copy)
    written.append(notebook_copy)
    put_yaml("job.yml", job_document(workflow, out_dir, RUNTIME_ARCHIVE, notebook_copy))
    config = streamflow_config(workflow, "workflow.cwl", "job.yml", deployments)
    config.update(recovery_settings(retries, retry_delay))
    put_yaml("streamflow.yml", config)
    put(MANIFEST, json.dumps({"generator": "nb2cwl",
                              "notebook": os.path.abspath(workflow.notebook_path),
                              "files": sorted(written)}, indent=1) + "\n")
    return written


def _remove_runtime_folder(folder: Path) -> None:
    """An earlier nb2cwl's runtime folder, its files removed with the other listed ones: its
    bytecode cache goes too, and the folder if nothing else is left in it (a user's file)."""
    cache = folder / "__pycache__"
    modules = {source.stem for source in RUNTIME_SOURCE.glob("*.py")}
    if cache.is_dir() and not cache.is_symlink() and all(
            p.is_file() and p.suffix == ".pyc" and p.name.split(".")[0] in modules
            for p in cache.iterdir()):
        shutil.rmtree(cache, ignore_errors=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


def write_run_files(workflow: Workflow, out_dir: str, fixed: dict[str, Any],
                    combinations: list[dict[str, Any]] | None = None) -> list[str]:
    """The job and StreamFlow config of a run with other parameter values, beside the compiled
    workflow; for a sweep, one pair per combination of the swept values (each with a
    StreamFlow database of its own). The configs' paths, in order.

    They are rewritten for every run and listed in the manifest, so compiling again removes
    them with the rest."""
    from nb2cwl.backends.parameters import job_values

    root = Path(out_dir)
    base = os.path.dirname(workflow.notebook_path)
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 100
    with (root / "streamflow.yml").open(encoding="utf-8") as handle:
        compiled = yaml.load(handle)
    runs = [(".run", {})] if not combinations else [
        (f".sweep-{number}", combination) for number, combination in enumerate(combinations, 1)]
    names: list[str] = []
    configs: list[str] = []
    for suffix, combination in runs:
        job = job_document(workflow, out_dir, RUNTIME_ARCHIVE,
                           f"notebook/{notebook_file_name(workflow)}")
        job.update(job_values(workflow, out_dir, {**fixed, **combination}, base))
        if combination:  # each combination's notebook is named by its swept values
            job["name_by"] = list(combination)
        config = copy.deepcopy(compiled)
        (entry,) = config["workflows"].values()
        entry["config"]["settings"] = f"job{suffix}.yml"
        if combination:  # StreamFlow processes side by side: a database each
            config["database"]["config"]["connection"] = f".streamflow/sqlite{suffix}.db"
        for rel, document in ((f"job{suffix}.yml", job), (f"streamflow{suffix}.yml", config)):
            with (root / rel).open("w", encoding="utf-8") as handle:
                yaml.dump(document, handle)
            names.append(rel)
        configs.append(str(root / f"streamflow{suffix}.yml"))
    _list_in_manifest(root, names)
    return configs


def _list_in_manifest(root: Path, names: list[str]) -> None:
    manifest = root / MANIFEST
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["files"] = sorted(set(data["files"]) | set(names))
    manifest.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
