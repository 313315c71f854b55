"""The notebook's parameters as CWL: workflow inputs, the steps' ports, job values.

A step gets the run's values as typed CWL inputs, written into its working directory as JSON by
an InitialWorkDirRequirement (`$(inputs)`, a parameter reference: no JavaScript). Not on the
command line: StreamFlow 0.2.0rc3 writes a double such as 1e-10 there as "0" (file and folder
paths go there too, where an exported bundle's steps check them).
A File or Directory parameter comes with a second, optional string input, `NAME_path`: the path
the variable holds in the notebook (where the step puts the staged file); without it, the
notebook's own string.
"""

from __future__ import annotations

import os
from typing import Any

from cwl_utils.parser import cwl_v1_2 as cwl

from nb2cwl.ir.model import Parameter, Workflow

VALUES_FILE = "nb2cwl-parameters.json"  # in the step's working directory
PORT = "param_{name}"
PATH_SUFFIX = "_path"
RESERVED = ("runtime", "notebook", "executed_name", "script_", "external_")


def input_id(workflow: Workflow, parameter: Parameter) -> str:
    """The workflow input of `parameter`: its own name, unless nb2cwl's inputs use it."""
    name = parameter.name
    if name.startswith(RESERVED) or any(
            f"{other.name}{PATH_SUFFIX}" == name for other in workflow.parameters
            if other.is_path):
        return f"parameter_{name}"
    return name


def cwl_type(parameter: Parameter) -> Any:
    """The CWL type of `parameter` (a list: an array schema)."""
    if parameter.type.endswith("[]"):
        return cwl.InputArraySchema(items=parameter.type[:-2], type_="array")
    return parameter.type


def workflow_inputs(workflow: Workflow) -> list[cwl.WorkflowInputParameter]:
    """One typed input per parameter, with the notebook's value as its default."""
    inputs = []
    for parameter in workflow.parameters:
        ident = input_id(workflow, parameter)
        doc = f"{workflow.where(parameter.cell_index, parameter.line)} of the notebook"
        if parameter.is_path:
            inputs.append(cwl.WorkflowInputParameter(id=ident, type_=parameter.type, doc=doc,
                                                     label=parameter.name))
            inputs.append(cwl.WorkflowInputParameter(
                id=ident + PATH_SUFFIX, type_=["null", "string"], label=parameter.name,
                doc=f"the path {parameter.name} holds in the notebook (default: "
                    f"{parameter.default!r})"))
        else:
            inputs.append(cwl.WorkflowInputParameter(id=ident, type_=cwl_type(parameter),
                                                     default=parameter.default, doc=doc,
                                                     label=parameter.name))
    return inputs


def step_inputs(workflow: Workflow, names: tuple[str, ...]) -> list[cwl.CommandInputParameter]:
    """A step tool's ports for the parameters `names` (none on the command line)."""
    ports = []
    for name in names:
        parameter = workflow.parameter(name)
        if parameter.is_path:  # on the command line too: a bundle's step checks its files
            ports.append(cwl.CommandInputParameter(
                id=PORT.format(name=name), type_=parameter.type,
                inputBinding=cwl.CommandLineBinding(position=7, prefix=f"--param-{name}")))
            ports.append(cwl.CommandInputParameter(id=PORT.format(name=name) + PATH_SUFFIX,
                                                   type_=["null", "string"]))
        else:
            ports.append(cwl.CommandInputParameter(id=PORT.format(name=name),
                                                   type_=_command_type(parameter)))
    return ports


def _command_type(parameter: Parameter) -> Any:
    if parameter.type.endswith("[]"):
        return cwl.CommandInputArraySchema(items=parameter.type[:-2], type_="array")
    return parameter.type


def values_requirement() -> cwl.InitialWorkDirRequirement:
    """Writes the step's inputs (the parameters among them) as JSON where the step starts."""
    return cwl.InitialWorkDirRequirement(listing=[cwl.Dirent(entryname=VALUES_FILE,
                                                             entry="$(inputs)")])


def step_wiring(workflow: Workflow, names: tuple[str, ...]) -> list[cwl.WorkflowStepInput]:
    """Workflow inputs -> a step's parameter ports."""
    wiring = []
    for name in names:
        parameter = workflow.parameter(name)
        source = input_id(workflow, parameter)
        port = PORT.format(name=name)
        wiring.append(cwl.WorkflowStepInput(id=port, source=source))
        if parameter.is_path:
            wiring.append(cwl.WorkflowStepInput(id=port + PATH_SUFFIX,
                                                source=source + PATH_SUFFIX))
    return wiring


def job_values(workflow: Workflow, out_dir: str, values: dict[str, Any] | None = None,
               base_dir: str | None = None) -> dict[str, Any]:
    """The job file's entries for the parameters: the notebook's values, or `values`.

    A path value is relative to `base_dir` (the notebook's folder by default), as the kernel
    would resolve it; the job names it relative to `out_dir`, where the job file lives."""
    base = base_dir or os.path.dirname(workflow.notebook_path)
    job: dict[str, Any] = {}
    for parameter in workflow.parameters:
        value = (values or {}).get(parameter.name, parameter.default)
        ident = input_id(workflow, parameter)
        if parameter.is_path:
            full = value if os.path.isabs(str(value)) else os.path.join(base, str(value))
            job[ident] = {"class": parameter.type,
                          "path": os.path.relpath(full, os.path.abspath(out_dir))}
            job[ident + PATH_SUFFIX] = value
        else:
            job[ident] = value
    return job


def runtime_spec(workflow: Workflow, names: tuple[str, ...]) -> dict[str, Any] | None:
    """What a step's runtime needs to assign the parameters `names` (None: no parameters);
    the assembler also learns the notebook's values (to show only values that differ)."""
    if not names:
        return None
    return {"cell": workflow.parameter_cell,
            "names": list(names),
            "types": {n: workflow.parameter(n).type for n in names},
            "defaults": {n: workflow.parameter(n).default for n in names
                         if workflow.parameter(n).is_path},
            "notebook_values": {n: workflow.parameter(n).default for n in names}}
