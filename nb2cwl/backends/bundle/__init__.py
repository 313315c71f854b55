"""Reproducible workflow bundles: a compiled workflow as a zipped Workflow RO-Crate.

`export_bundle` takes a compiled output directory and writes a zip whose root holds
`ro-crate-metadata.json` and `streamflow.yml`, so `streamflow run DIR/streamflow.yml` reruns
it after unzipping. Besides the compiled files, the bundle holds the input files that were
beside the notebook, the workflow packed into one file, an environment lock, the map from cells
to steps and from variables to the files that carry them, the seeds, and with a run, StreamFlow's
own provenance and the run's outputs.

Integrity, in two layers:

- `CHECKSUMS.sha256` lists the sha256 of every file (`sha256sum -c` reads it). `nb2cwl verify`
  checks it before it reads anything else.
- At run time, without `nb2cwl verify`: every tool's command carries the sha256 of
  `nb2cwl_runtime/checksums.py` and of the seal `nb2cwl-seal.json`, the sha256 of every file
  the steps read. A one-line bootstrap in the command checks `checksums.py` before executing
  it; `checksums.guard` checks the seal, then the step's own files, and only then runs the
  step's script. A first step, `nb2cwl_verify`, checks every file of the seal and every other
  step waits for it, so a changed file stops the run before any cell runs.
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from cwl_utils.pack import pack
from cwl_utils.parser import cwl_v1_2 as cwl
from ruamel.yaml import YAML

from nb2cwl.backends.crate import (
    CrateDescription,
    CrateFile,
    Parameter,
    RunRecord,
    write_crate,
)
from nb2cwl.backends.cwl import hash_seed_requirement, without_blank_names
from nb2cwl.backends.environment_lock import EnvironmentLock, lock_environment
from nb2cwl.backends.explain import explain_data
from nb2cwl.backends.naming import HASH_SEED, notebook_file_name
from nb2cwl.backends.step_scripts import RUNTIME_PACKAGE
from nb2cwl.backends.writer import MANIFEST
from nb2cwl.errors import BundleError, OutputExistsError
from nb2cwl.ir.model import Workflow

SEAL = "nb2cwl-seal.json"
SUMS = "CHECKSUMS.sha256"
MAP = "nb2cwl-map.json"
VERIFY_STEP = "nb2cwl_verify"
VERIFIED_FILE = "nb2cwl-verified.json"
INPUTS = "inputs"
RUN = "run"
PROVENANCE = f"{RUN}/provenance.crate.zip"
OUTPUTS = f"{RUN}/outputs"
CHECK_REPORT = f"{RUN}/nb2cwl-check.json"  # nb2cwl check's report of the run, if it has one
#: The state the global generators start from in a step that inherits none.
START_SEED = 0
#: StreamFlow 0.2.0rc3's Status.COMPLETED in its database.
_COMPLETED = 4

# Runs before anything from the bundle: checks checksums.py against the sha256 in argv[1],
# then lets it check the rest (see nb2cwl_runtime/checksums.py). One line, no $ or quotes
# that a shell or CWL would touch.
BOOTSTRAP = (
    "import sys;sys.path[:]=[p for p in sys.path if p];import hashlib,os;a=sys.argv;"
    "r=os.path.join(a[a.index('--runtime')+1],'checksums.py');"
    "d=open(r,'rb').read() if os.path.isfile(r) else b'';"
    "hashlib.sha256(d).hexdigest()==a[1] or sys.exit('nb2cwl: bundle check failed: "
    "nb2cwl_runtime/checksums.py: changed or missing (sha256 differs); nothing was run');"
    "g={'__name__':'nb2cwl_checksums'};exec(compile(d,r,'exec'),g);"
    "sys.exit(g['guard'](a[2:]))"
)


@dataclass(frozen=True)
class BundleOptions:
    """What `nb2cwl export` was asked for."""

    with_run: str | None = None  # a compiled output directory that StreamFlow has run
    license: str | None = None
    author: str | None = None
    force: bool = False


@dataclass(frozen=True)
class BundleSummary:
    """What was written."""

    path: str
    files: int
    digest: str  # sha256 of CHECKSUMS.sha256: pins the whole bundle
    warnings: tuple[str, ...] = field(default=())


def export_bundle(workflow: Workflow, compiled: str, output: str,
                  options: BundleOptions | None = None) -> BundleSummary:
    """Bundle the workflow compiled into `compiled` as the zip `output`."""
    options = options or BundleOptions()
    check_output(output, options.force)
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="nb2cwl-bundle-") as work:
        root = Path(work) / "bundle"
        root.mkdir()
        _copy_compiled(Path(compiled), root)
        warnings += _carry_deployment_files(root)
        job = _load_yaml(root / "job.yml")
        _copy_inputs(workflow, job, root)
        run = None
        if options.with_run:
            run = _collect_run(Path(options.with_run), Path(compiled), root, Path(work))
        lock = lock_environment(workflow)
        warnings += _lock_warnings(lock)
        seeds = seed_record(workflow, lock)
        if run is not None:  # the random states the original run handed between steps
            seeds["original_run_states"] = [
                {"step": step, "state": var, **where}
                for step, found in sorted(run.values.items())
                for var, where in sorted(found.items()) if var.startswith("rng:")]
        warnings += [f"{workflow.notebook_name}: {note}" for note in seeds["notes"]]
        if not options.license:
            warnings.append("no --license given: the crate says the license is not specified")
        _seal(workflow, root, job, seeds)
        _write_yaml(root / "job.yml", job)
        _write_packed(root)
        _write(root / "environment" / "requirements.txt", lock.requirements_text())
        _write(root / "environment" / "lock.json", lock.to_text())
        _write(root / "environment" / "seeds.json", json.dumps(seeds, indent=1) + "\n")
        _write(root / "environment" / "Dockerfile", _dockerfile(lock))
        _write(root / MAP, json.dumps(cell_map(workflow, job, run), indent=1) + "\n")
        _write(root / "README.md", _readme(workflow, lock, seeds, run))
        write_crate(root, _describe(workflow, root, options, run))
        sums = {rel: _sha256(root / rel) for rel in _files(root) if rel != SUMS}
        _write(root / SUMS, "".join(f"{sums[p]}  {p}\n" for p in sorted(sums)))
        digest = _sha256(root / SUMS)
        count = _zip(root, Path(output))
    return BundleSummary(path=output, files=count, digest=digest, warnings=tuple(warnings))


# --- the compiled files and the inputs beside the notebook --------------------------------

def check_output(output: str, force: bool) -> None:
    """Refuse an output that is not a .zip name, or that exists (unless `force`)."""
    if not output.endswith(".zip"):
        raise BundleError(f"{output}: the bundle is a zip file; name it BUNDLE.zip")
    if os.path.isdir(output):
        raise OutputExistsError(f"{output} is a directory; name a zip file to write")
    if os.path.exists(output) and not force:
        raise OutputExistsError(f"{output} already exists; choose another name or pass --force "
                                "to replace it")


def _copy_compiled(compiled: Path, root: Path) -> None:
    manifest = compiled / MANIFEST
    listed = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    for rel in listed:
        if rel == MANIFEST:
            continue
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(compiled / rel, target)
    if not (root / RUNTIME_PACKAGE / "checksums.py").is_file():
        raise BundleError(f"the compiled workflow has no {RUNTIME_PACKAGE}/checksums.py: "
                          "reinstall nb2cwl")


def _copy_inputs(workflow: Workflow, job: dict[str, Any], root: Path) -> None:
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


def _carry_deployment_files(root: Path) -> list[str]:
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


# --- sealing: the verify step, the guard in every tool --------------------------------------

def _seal(workflow: Workflow, root: Path, job: dict[str, Any], seeds: dict[str, Any]) -> None:
    """Write the seal and rewrite every tool so that it checks its files before it runs."""
    workflow_path = root / "workflow.cwl"
    uri = workflow_path.as_uri()
    main = cwl.load_document_by_yaml(_load_yaml(workflow_path), uri)
    bundle_inputs = {
        name: value["path"] for name, value in job.items()
        if isinstance(value, dict) and value.get("class") in ("File", "Directory")
    }
    files: dict[str, str] = {}
    for rel in bundle_inputs.values():
        target = root / rel
        if target.is_dir():
            for sub in _files(target):
                files[f"{rel}/{sub}"] = _sha256(target / sub)
        else:
            files[rel] = _sha256(target)
    tools: dict[str, tuple[Path, Any]] = {}
    ports: dict[str, dict[str, str]] = {}
    for step in main.steps:
        name = _short(step.id)
        if name == VERIFY_STEP:
            raise BundleError(f"{workflow.notebook_name}: a step is called {VERIFY_STEP}, the "
                              "name of the bundle's check step; rename it")
        if not isinstance(step.run, str):
            raise BundleError(f"step {name}: its tool is not a separate file")
        tool_path = (workflow_path.parent / _relative_run(step.run, uri)).resolve()
        tool = cwl.load_document_by_yaml(_load_yaml(tool_path), tool_path.as_uri())
        tools[name] = (tool_path, tool)
        ports[name] = _step_ports(name, step, tool, bundle_inputs)
    python = _interpreter(tools)
    verify_inputs = sorted(bundle_inputs)
    ports[VERIFY_STEP] = {f"--{port}": bundle_inputs[port] for port in verify_inputs}
    seal = {
        "format": "nb2cwl-seal/1",
        "files": dict(sorted(files.items())),
        "steps": ports,
        "verify_step": VERIFY_STEP,
        "hash_seed": HASH_SEED,
        "seeds": seeds["start"],
    }
    seal_text = json.dumps(seal, indent=1, sort_keys=True) + "\n"
    _write(root / SEAL, seal_text)
    seal_digest = hashlib.sha256(seal_text.encode()).hexdigest()
    guard_digest = _sha256(root / RUNTIME_PACKAGE / "checksums.py")

    def command(step: str) -> list[str]:
        return [python, "-c", BOOTSTRAP, guard_digest, seal_digest, step]

    env = hash_seed_requirement()
    for name, (tool_path, tool) in tools.items():
        tool_uri = tool_path.as_uri()
        tool.baseCommand = command(name)
        tool.inputs.append(cwl.CommandInputParameter(
            id=f"{tool_uri}#nb2cwl_seal", type_="File",
            inputBinding=cwl.CommandLineBinding(position=0, prefix="--nb2cwl-seal")))
        tool.inputs.append(cwl.CommandInputParameter(
            id=f"{tool_uri}#nb2cwl_verified", type_="File",
            doc="the check step's result: this step starts after every file was checked"))
        if not any(isinstance(r, cwl.EnvVarRequirement) for r in tool.requirements or []):
            tool.requirements = [*(tool.requirements or []), env]  # (compiled before it had)
        _write_cwl(tool_path, tool.save(top=True, base_url=tool_uri, relative_uris=True))
    verify_path = root / "tools" / f"{VERIFY_STEP}.cwl"
    verify_tool = _verify_tool(verify_inputs, job, command(VERIFY_STEP), env)
    _write_cwl(verify_path, verify_tool.save())
    main.inputs.append(cwl.WorkflowInputParameter(id=f"{uri}#nb2cwl_seal", type_="File",
                                                  label=SEAL))
    for step in main.steps:
        step.in_.append(cwl.WorkflowStepInput(id=f"{step.id}/nb2cwl_seal",
                                              source=f"{uri}#nb2cwl_seal"))
        step.in_.append(cwl.WorkflowStepInput(id=f"{step.id}/nb2cwl_verified",
                                              source=f"{uri}#{VERIFY_STEP}/verified"))
    wiring = [cwl.WorkflowStepInput(id=f"{uri}#{VERIFY_STEP}/{port}", source=f"{uri}#{port}")
              for port in [*verify_inputs, "nb2cwl_seal"]]
    main.steps.insert(0, cwl.WorkflowStep(
        id=f"{uri}#{VERIFY_STEP}", run=f"tools/{VERIFY_STEP}.cwl", in_=wiring,
        out=[f"{uri}#{VERIFY_STEP}/verified"],
        label="check every file of the bundle against its sha256 before any cell runs"))
    _write_cwl(workflow_path, main.save(top=True, base_url=uri, relative_uris=True))
    job["nb2cwl_seal"] = {"class": "File", "path": SEAL}


def _step_ports(name: str, step: Any, tool: Any, bundle_inputs: dict[str, str]
                ) -> dict[str, str]:
    """Command-line flag -> bundle path, for each tool input fed from a bundle file."""
    bindings = {_short(i.id): i.inputBinding for i in tool.inputs}
    ports: dict[str, str] = {}
    for item in step.in_:
        source = item.source
        if not isinstance(source, str) or _short(source) not in bundle_inputs:
            continue
        port = _short(item.id)
        binding = bindings.get(port)
        if binding is None:
            raise BundleError(f"step {name}: input {port} is not on the command line, so the "
                              "step cannot check it")
        flag = binding.prefix or ""
        if flag in ports:
            raise BundleError(f"step {name}: two bundle inputs share the flag {flag!r}")
        ports[flag] = bundle_inputs[_short(source)]
    if "--runtime" not in ports:
        raise BundleError(f"step {name}: the tool has no --runtime input to check")
    return ports


def _interpreter(tools: dict[str, tuple[Path, Any]]) -> str:
    found = set()
    for name, (_, tool) in tools.items():
        command = tool.baseCommand if isinstance(tool.baseCommand, list) else [tool.baseCommand]
        if command[1:] == ["-S"]:  # a local step's fast start (cwl.interpreter); a bundle's
            command = command[:1]  # steps start through its checking bootstrap instead
        if len(command) != 1:
            raise BundleError(f"tool {name}: expected the Python interpreter alone as its "
                              f"baseCommand, found {command}")
        found.add(command[0])
    if len(found) != 1:
        raise BundleError(f"the steps use different interpreters: {sorted(found)}")
    return found.pop()


def _verify_tool(ports: list[str], job: dict[str, Any], command: list[str], env: Any) -> Any:
    inputs = [cwl.CommandInputParameter(
        id="nb2cwl_seal", type_="File",
        inputBinding=cwl.CommandLineBinding(position=0, prefix="--nb2cwl-seal"))]
    for position, port in enumerate(ports, 1):
        inputs.append(cwl.CommandInputParameter(
            id=port, type_=job[port]["class"],
            inputBinding=cwl.CommandLineBinding(position=position, prefix=f"--{port}")))
    return cwl.CommandLineTool(
        cwlVersion="v1.2",
        label="nb2cwl bundle: check every file against the seal before any step runs",
        baseCommand=command,
        inputs=inputs,
        outputs=[cwl.CommandOutputParameter(
            id="verified", type_="File",
            outputBinding=cwl.CommandOutputBinding(glob=VERIFIED_FILE))],
        requirements=[cwl.ResourceRequirement(coresMin=1), env],
    )


def _short(identifier: str) -> str:
    return identifier.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def _relative_run(run: str, base_uri: str) -> str:
    base = base_uri.rsplit("/", 1)[0] + "/"
    return run[len(base):] if run.startswith(base) else run


# --- seeds, the cell map ------------------------------------------------------------------

_SEEDERS = {
    ("random", "seed"): "random", ("np.random", "seed"): "numpy",
    ("numpy.random", "seed"): "numpy",
}


def seed_record(workflow: Workflow, lock: EnvironmentLock) -> dict[str, Any]:
    """The seeds the notebook sets, the start state bundle runs use, and unseeded draws."""
    found: list[dict[str, Any]] = []
    seeded_cells: dict[str, set[int]] = {"random": set(), "numpy": set()}
    for step in workflow.steps:
        for cell in step.cells:
            for call in _seed_calls(cell.code):
                found.append({"cell": cell.index, "id": cell.cell_id, "step": step.name, **call})
                if call.get("generator"):
                    seeded_cells[call["generator"]].add(cell.index)
    start: dict[str, int] = {"random": START_SEED}
    if "numpy" in lock.imports:
        start["numpy"] = START_SEED
    notes: list[str] = []
    unseeded: list[dict[str, Any]] = []
    for step in workflow.steps:
        cells = [c.index for c in step.cells]
        for generator in ("random", "numpy"):
            state = f"rng:{generator}"
            if any(i.var == state and i.producer for i in step.inputs):
                continue  # it continues the state an earlier step left
            draws = (state in step.outputs or any(i.var == state for i in step.inputs)
                     or any(_draws(c.code, generator) for c in step.cells))
            if not draws or seeded_cells[generator] & set(cells):
                continue
            unseeded.append({"generator": generator, "step": step.name, "cells": cells})
            notes.append(f"cell {cells[0]} draws from the global {generator} generator "
                         "without seeding it: the original run's numbers cannot be reproduced; "
                         f"reruns of the bundle start it from seed {START_SEED} and agree "
                         "with each other")
    return {
        "python_hash_seed": HASH_SEED,
        "start": start,
        "notebook_seeds": found,
        "unseeded_draws": unseeded,
        "notes": notes,
        "how": (f"Every step runs with PYTHONHASHSEED={HASH_SEED}. A step that inherits no "
                "random state from an earlier step starts the global generators of random "
                f"and numpy.random (when something imports numpy) from seed {START_SEED}; a "
                "seed set in the notebook, or the state handed on by the previous step that "
                "drew numbers, replaces it, as in Jupyter."),
    }


_NOT_DRAWS = {"seed", "Random", "SystemRandom", "getstate", "setstate", "get_state",
              "set_state", "default_rng", "RandomState", "Generator", "SeedSequence",
              "BitGenerator", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64"}
_GENERATORS = {"random": "random", "np.random": "numpy", "numpy.random": "numpy"}


def _draws(code: str, generator: str) -> bool:
    """True when `code` calls the global `generator` (random.random(), np.random.rand())."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    for node in _executed(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if _GENERATORS.get(owner) == generator and node.func.attr not in _NOT_DRAWS:
                return True
    return False


def _executed(tree: ast.AST) -> list[ast.AST]:
    """The nodes a cell runs when it runs: not the bodies of the functions it defines."""
    found: list[ast.AST] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                pending += child.decorator_list if not isinstance(child, ast.Lambda) else []
                continue
            pending.append(child)
    return found


def _seed_calls(code: str) -> list[dict[str, Any]]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        owner, _, attr = func.rpartition(".")
        generator = _SEEDERS.get((owner, attr))
        seeding = (generator is not None or attr in (
            "manual_seed", "set_seed", "set_random_seed", "default_rng", "RandomState",
            "Random", "PRNGKey") or any(k.arg in ("random_state", "seed") for k in node.keywords))
        if not seeding:
            continue
        text = ast.unparse(node)
        calls.append({"line": node.lineno, "call": text if len(text) <= 120 else text[:117] + "...",
                      **({"generator": generator} if generator else {})})
    return calls


def cell_map(workflow: Workflow, job: dict[str, Any], run: _Run | None = None
             ) -> dict[str, Any]:
    """Cells (index and id) -> steps, and variables and files -> what carries them."""
    data = explain_data(workflow)
    steps = {s.name: s for s in workflow.steps}
    cell_step = {c.index: s.name for s in workflow.steps for c in s.cells}
    variables: dict[tuple[str, str], dict[str, Any]] = {}
    files: dict[str, dict[str, Any]] = {}
    external = workflow.external_numbers
    for step in workflow.steps:
        for item in step.inputs:
            if item.var.startswith("skeleton:"):
                continue
            if item.var.startswith("file:"):
                path = item.var[len("file:"):]
                if item.producer is None:
                    if path in external:
                        number = external[path]
                        entry = files.setdefault(path, {
                            "path": path, "beside_the_notebook": True,
                            "bundle_path": job[f"external_{number}"]["path"],
                            "workflow_input": f"external_{number}", "read_by": []})
                        entry["read_by"].append(step.name)
                    continue
                entry = files.setdefault(f"{item.producer}:{path}", {
                    "path": path, "written_by": item.producer,
                    "cell": item.producer_cell,
                    "carried_by": {"output": f"{item.producer}/files",
                                   "path": f"nb2cwl-out/files/{path}" if path != "*" else
                                   "nb2cwl-out/files/"}, "read_by": []})
                entry["read_by"].append(step.name)
                continue
            if item.producer is None:
                continue
            key = (item.var, item.producer)
            producer = steps[item.producer]
            entry = variables.setdefault(key, {
                "var": item.var, "cell": item.producer_cell, "step": item.producer,
                "cell_id": next((c.cell_id for c in producer.cells
                                 if c.index == item.producer_cell), None),
                "carried_by": {"output": f"{item.producer}/values",
                               "folder": "nb2cwl-out/values/", "index": "index.json",
                               "file": _value_file(item.var)},
                "read_by": []})
            entry["read_by"].append({"step": step.name,
                                     "cells": [c.index for c in step.cells]})
            if run is not None:
                found = run.values.get(item.producer, {}).get(item.var)
                if found:
                    entry["carried_by"]["in_the_original_run"] = found
    return {
        "notebook": workflow.notebook_name,
        "cells": [{**c, "tool": f"tools/{c['step']}.cwl" if c["step"] else None,
                   "script": f"steps/{c['step']}.py" if c["step"] else None}
                  for c in data["cells"]],
        "steps": [{"name": s["name"], "cells": s["cells"],
                   "cell_ids": [c.cell_id for c in steps[s["name"]].cells],
                   "tool": f"tools/{s['name']}.cwl", "script": f"steps/{s['name']}.py",
                   "depends_on": s["depends_on"], "outputs": s["outputs"]}
                  for s in data["steps"]],
        "cell_to_step": {str(index): name for index, name in sorted(cell_step.items())},
        "variables": sorted(variables.values(), key=lambda v: (v["cell"] or 0, v["var"])),
        "files": sorted(files.values(), key=lambda f: f["path"]),
        "edges": data["edges"],
    }


def _value_file(var: str) -> str:
    if var == "rng:random":
        return "rng-random.pkl"
    if var == "rng:numpy":
        return "rng-numpy.pkl"
    return (f"{var}.npy (numpy array), {var}.pandas.pkl (pandas), {var}.keras (Keras), "
            f"{var}.pkl (other), or group-*.pkl when it shares objects with other values: "
            "chosen by type when saved; index.json names it")


# --- the original run -----------------------------------------------------------------------

@dataclass
class _Run:
    name: str
    start: str | None
    end: str | None
    outputs: list[str]  # bundle paths
    values: dict[str, dict[str, dict[str, Any]]]  # step -> var -> where


def _collect_run(out: Path, compiled: Path, root: Path, work: Path) -> _Run:
    """Take a run of `out` (compiled from the same notebook): provenance and outputs."""
    if not (out / MANIFEST).is_file() or not (out / "streamflow.yml").is_file():
        raise BundleError(f"{out} is not a directory nb2cwl compiled (no {MANIFEST} or "
                          "streamflow.yml)")
    _same_workflow(out, compiled)
    config = _load_yaml(out / "streamflow.yml")
    connection = config.get("database", {}).get("config", {}).get("connection")
    database = (out / connection) if connection else None
    if database is None or not database.is_file():
        raise BundleError(f"{out} has no StreamFlow database: run it first (streamflow run "
                          f"{out / 'streamflow.yml'})")
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection_:
        row = connection_.execute("SELECT name FROM workflow WHERE status = ? ORDER BY id DESC "
                                  "LIMIT 1", (_COMPLETED,)).fetchone()
    if row is None:
        raise BundleError(f"{out} has no completed run: run it first (streamflow run "
                          f"{out / 'streamflow.yml'})")
    name = row[0]
    where = str(out.resolve())
    if quote(where) != where:
        raise BundleError(f"{out}: streamflow prov (StreamFlow 0.2.0rc3) cannot read a run whose "
                          "directory path holds spaces or characters URLs escape; compile and "
                          "run the notebook in a directory without them")
    prov_dir = work / "provenance"
    prov_dir.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom streamflow.main import run\n"
         "sys.argv = ['streamflow', *sys.argv[1:]]\nsys.exit(run())",
         "prov", name, "--file", str((out / "streamflow.yml").resolve()), "--outdir",
         str(prov_dir.resolve()), "--name", "provenance.crate.zip"],
        capture_output=True, text=True)
    archive = prov_dir / "provenance.crate.zip"
    if result.returncode != 0 or not archive.is_file():
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise BundleError(f"streamflow prov failed for {out}: " + " | ".join(tail))
    target = root / PROVENANCE
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(archive, target)
    _copy_check_report(out, root)
    return _read_provenance(target, root)


def _copy_check_report(out: Path, root: Path) -> None:
    """The report of `nb2cwl check`, when the last run of `out` was checked."""
    runs = sorted((p for p in (out / "runs").glob("*") if p.name.isdigit()),
                  key=lambda p: int(p.name))
    if runs and (runs[-1] / "nb2cwl-check.json").is_file():
        shutil.copyfile(runs[-1] / "nb2cwl-check.json", root / CHECK_REPORT)


def _same_workflow(out: Path, compiled: Path) -> None:
    listed = json.loads((compiled / MANIFEST).read_text(encoding="utf-8"))["files"]
    for rel in listed:
        if not (rel in ("workflow.cwl", "streamflow.yml")
                or rel.startswith(("steps/", f"{RUNTIME_PACKAGE}/", "notebook/"))):
            continue
        theirs = out / rel
        if not theirs.is_file() or theirs.read_bytes() != (compiled / rel).read_bytes():
            raise BundleError(
                f"{out} was not compiled from this notebook with these options: {rel} differs "
                "(the notebook, the options or nb2cwl changed since); export with the options "
                "it was compiled with, or run the notebook again")


def _read_provenance(archive: Path, root: Path) -> _Run:
    with zipfile.ZipFile(archive) as crate:
        graph = json.loads(crate.read("ro-crate-metadata.json"))["@graph"]
        entities = {e["@id"]: e for e in graph}
        main = _ref(entities["./"].get("mainEntity"))
        actions = [e for e in graph if e.get("@type") == "CreateAction"]
        top = next((a for a in actions if _ref(a.get("instrument")) == main), None)
        if top is None:
            raise BundleError(f"{archive.name}: the provenance has no run of {main}")
        outputs: list[str] = []
        for ref in _refs(top.get("result")):
            for member, name in _members(entities, ref):
                rel = PurePosixPath(name)
                if rel.is_absolute() or ".." in rel.parts:
                    raise BundleError(f"{archive.name}: output name {name!r} is unsafe")
                target = root / OUTPUTS / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(crate.read(member))
                outputs.append(f"{OUTPUTS}/{rel}")
        values: dict[str, dict[str, dict[str, Any]]] = {}
        for action in actions:
            tool = _ref(action.get("instrument")) or ""
            step = tool[:-len(".cwl")] if tool.endswith(".cwl") else None
            if step is None or tool == main:
                continue
            for ref in _refs(action.get("result")):
                entity = entities.get(ref, {})
                if _first(entity.get("alternateName")) != "values":
                    continue
                parts = dict((name, member) for member, name in _members(entities, ref))
                index_member = parts.get("values/index.json")
                if index_member is None:
                    continue
                index = json.loads(crate.read(index_member))
                for var, where in index.items():
                    member = parts.get(f"values/{where['file']}")
                    values.setdefault(step, {})[var] = {
                        "file": where["file"], "format": where.get("format"),
                        "provenance": PROVENANCE, "member": member}
    return _Run(name=top.get("name", "original run"), start=top.get("startTime"),
                end=top.get("endTime"), outputs=sorted(outputs), values=values)


def _members(entities: dict[str, Any], ref: str) -> list[tuple[str, str]]:
    """(zip member, original relative name) of every file under the entity `ref`."""
    entity = entities.get(ref)
    if entity is None:
        return []
    types = entity.get("@type")
    types = types if isinstance(types, list) else [types]
    if "File" in types:
        return [(ref, _first(entity.get("alternateName")) or ref)]
    found: list[tuple[str, str]] = []
    for part in _refs(entity.get("hasPart")):
        found += _members(entities, part)
    return found


def _ref(value: Any) -> str | None:
    refs = _refs(value)
    return refs[0] if refs else None


def _refs(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [item["@id"] if isinstance(item, dict) else item for item in items]


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return value[0] if value else None
    return value


# --- the other files ------------------------------------------------------------------------

def _lock_warnings(lock: EnvironmentLock) -> list[str]:
    warnings = [f"the notebook imports {module}, which no installed distribution provides: "
                "the lock cannot install it (a module beside the notebook?)"
                for module in lock.unresolved]
    warnings += [f"{p.name} {p.version} was installed from a local path; the lock names it in "
                 "a comment only" for p in lock.local_packages()]
    return warnings


def _dockerfile(lock: EnvironmentLock) -> str:
    major_minor = ".".join(lock.python.split(".")[:2])
    return (
        "# Container recipe for the environment of the original run: its Python and the "
        "packages of\n"
        "# environment/requirements.txt. Build it from the bundle's folder:\n"
        "#   docker build -t nb2cwl-bundle -f environment/Dockerfile .\n"
        "# Run the whole bundle in it:\n"
        "#   docker run --rm -v \"$PWD:/bundle\" -w /bundle nb2cwl-bundle \\\n"
        "#       streamflow run streamflow.yml --outdir results\n"
        "# or tag it as the image of a docker or helm deployment of streamflow.yml, whose "
        "steps then\n"
        "# run in it.\n"
        f"FROM python:{lock.python}-slim\n"
        "COPY environment/requirements.txt /tmp/requirements.txt\n"
        "RUN python -m pip install --no-cache-dir -r /tmp/requirements.txt \\\n"
        f"    && python{major_minor} -c \"import cloudpickle\"\n"
        "ENV PYTHONUNBUFFERED=1\n"
        "WORKDIR /tmp\n"
        'CMD ["/bin/sh"]\n'
    )


def _write_packed(root: Path) -> None:
    write_packed(root / "workflow.cwl", root / "workflow.packed.cwl")


def write_packed(workflow: Path, target: Path) -> None:
    """The workflow `workflow` (workflow.cwl) with every tool packed in, as one file."""
    _write_cwl(target, pack(str(workflow)))


def _readme(workflow: Workflow, lock: EnvironmentLock, seeds: dict[str, Any],
            run: _Run | None) -> str:
    major_minor = ".".join(lock.python.split(".")[:2])
    name = workflow.notebook_name
    lines = [
        f"# {name}: a reproducible workflow bundle",
        "",
        f"Made by nb2cwl from `notebook/{notebook_file_name(workflow)}`: a CWL v1.2 workflow "
        "that StreamFlow runs, one "
        "step per notebook cell, with everything needed to run it again elsewhere.",
        "",
        "## Run it again",
        "",
        "```bash",
        "nb2cwl verify .                       # optional: every file and the crate checked",
        f"python{major_minor} -m venv .venv",
        ".venv/bin/python -m pip install -r environment/requirements.txt",
        'PATH="$PWD/.venv/bin:$PATH" streamflow run streamflow.yml --outdir ../results',
    ]
    if run is not None:
        lines.append("nb2cwl verify . --outputs ../results  # same outputs as the original run?")
    lines += [
        "```",
        "",
        "The steps run `python3` from `PATH`: put the environment's `bin` folder first. "
        f"The lock is for Python {lock.python} ({lock.platform}).",
        "",
        "## What is here",
        "",
        "| Path | What |",
        "| --- | --- |",
        "| `ro-crate-metadata.json` | the Workflow RO-Crate metadata (made with ro-crate-py) |",
        "| `streamflow.yml`, `job.yml` | the StreamFlow configuration and the workflow's inputs |",
        "| `workflow.cwl`, `tools/` | the CWL workflow, one tool per step |",
        "| `workflow.packed.cwl` | the same workflow in one file |",
        "| `steps/`, `nb2cwl_runtime/` | the script each step runs, and the step runtime |",
        "| `notebook/` | the source notebook |",
        "| `inputs/` | the files beside the notebook that cells read (if any) |",
        "| `environment/` | `requirements.txt` (the lock), `lock.json` (why each package), "
        "`seeds.json`, a `Dockerfile` |",
        f"| `{MAP}` | notebook cells (numbers and ids) to steps, variables and files to what "
        "carries them |",
        f"| `{SEAL}` | the sha256 of every file the steps read, checked by each step |",
        f"| `{SUMS}` | the sha256 of every file (`sha256sum -c {SUMS}`) |",
    ]
    if run is not None:
        lines.append(f"| `{RUN}/` | the original run: `provenance.crate.zip` (a Workflow Run "
                     "RO-Crate from `streamflow prov`) and `outputs/` |")
    lines += [
        "",
        "## Integrity",
        "",
        f"`nb2cwl verify .` checks `{SUMS}` before it reads anything else. Without it, the "
        f"workflow checks itself: its first step, `{VERIFY_STEP}`, checks every file the "
        f"steps read against `{SEAL}` and every other step waits for it; each step checks its "
        "own script, runtime and inputs again before it loads anything. The sha256 of the "
        "checking code and of the seal are written into every tool's command.",
        "",
        "What you add beside the bundle's own files and folders (the `.venv` above, a "
        "results folder) is not part of it: `nb2cwl verify` lists it in one line as added "
        "and still verifies the bundle. A file added inside one of the bundle's folders "
        "(`steps/`, `tools/`, ...) or a file changed fails verification: the steps could "
        "read it.",
        "",
        "## Random state",
        "",
        seeds["how"] + " The seeds the notebook sets are listed in `environment/seeds.json`.",
    ]
    for note in seeds["notes"]:
        lines.append(f"- {note}")
    return "\n".join(lines) + "\n"


def _describe(workflow: Workflow, root: Path, options: BundleOptions,
              run: _Run | None) -> CrateDescription:
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
    document = _load_yaml(path)
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
    if rel.startswith(f"{RUNTIME_PACKAGE}/"):
        return CrateFile(rel, f"step runtime: {base}", "the runtime every step imports", "code")
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


# --- small helpers --------------------------------------------------------------------------

def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _load_yaml(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def _write_yaml(path: Path, document: Any) -> None:
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump(document, handle)


def _write_cwl(path: Path, document: dict[str, Any]) -> None:
    document = {k: v for k, v in without_blank_names(document).items() if k != "id"}
    path.parent.mkdir(parents=True, exist_ok=True)
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096  # the bootstrap is one long line: keep it on one
    with path.open("w", encoding="utf-8") as handle:
        handle.write("#!/usr/bin/env cwl-runner\n")
        yaml.dump(document, handle)


_SAFE_NAME = re.compile(r"^[^\n\r\\]+$")


def _zip(root: Path, output: Path) -> int:
    files = _files(root)
    for rel in files:
        if not _SAFE_NAME.match(rel):
            raise BundleError(f"cannot bundle {rel!r}: newlines and backslashes in file names "
                              "do not survive sha256sum lists")
    partial = output.with_name(output.name + ".partial")
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for rel in files:
                archive.write(root / rel, rel)
        os.replace(partial, output)
    finally:
        if partial.exists():
            partial.unlink()
    return len(files)
