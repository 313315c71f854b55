"""Sealing the bundle: the seal file, the check step that runs first, the guard in every tool.

`seal` writes `nb2cwl-seal.json` (the sha256 of every file the steps read, and each step's
command-line flags that name them), rewrites every tool's command to start through the checking
bootstrap with the sha256 of the checking code and of the seal, adds the `nb2cwl_verify` tool
and step that checks every file before any cell runs, and makes every other step wait for it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cwl_utils.parser import cwl_v1_2 as cwl

from nb2cwl.backends.bundle.files import _files, load_yaml, sha256, write, write_cwl
from nb2cwl.backends.bundle.names import BOOTSTRAP, SEAL, VERIFIED_FILE, VERIFY_STEP
from nb2cwl.backends.cwl import hash_seed_requirement
from nb2cwl.backends.naming import HASH_SEED, RUNTIME_ARCHIVE
from nb2cwl.errors import BundleError
from nb2cwl.ir.model import Workflow


def seal(workflow: Workflow, root: Path, job: dict[str, Any], seeds: dict[str, Any]) -> None:
    """Write the seal and rewrite every tool so that it checks its files before it runs."""
    workflow_path = root / "workflow.cwl"
    uri = workflow_path.as_uri()
    main = cwl.load_document_by_yaml(load_yaml(workflow_path), uri)
    bundle_inputs = {
        name: value["path"] for name, value in job.items()
        if isinstance(value, dict) and value.get("class") in ("File", "Directory")
    }
    files: dict[str, str] = {}
    for rel in bundle_inputs.values():
        target = root / rel
        if target.is_dir():
            for sub in _files(target):
                files[f"{rel}/{sub}"] = sha256(target / sub)
        else:
            files[rel] = sha256(target)
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
        tool = cwl.load_document_by_yaml(load_yaml(tool_path), tool_path.as_uri())
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
    write(root / SEAL, seal_text)
    seal_digest = hashlib.sha256(seal_text.encode()).hexdigest()
    guard_digest = sha256(root / RUNTIME_ARCHIVE)

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
        write_cwl(tool_path, tool.save(top=True, base_url=tool_uri, relative_uris=True))
    verify_path = root / "tools" / f"{VERIFY_STEP}.cwl"
    verify_tool = _verify_tool(verify_inputs, job, command(VERIFY_STEP), env)
    write_cwl(verify_path, verify_tool.save())
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
    write_cwl(workflow_path, main.save(top=True, base_url=uri, relative_uris=True))
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
