"""The CWL v1.2 back end: IR -> cwl-utils objects -> YAML files, never hand-written YAML."""

from __future__ import annotations

from typing import Any

from cwl_utils.parser import cwl_v1_2 as cwl

from nb2cwl.backends import parameters
from nb2cwl.backends.naming import (
    EXECUTED_SUFFIX,
    HASH_SEED,
    executed_name,  # noqa: F401  (re-exported)
)
from nb2cwl.backends.resources import gpu_hints, resource_requirement, with_namespaces
from nb2cwl.backends.step_scripts import file_plan
from nb2cwl.ir.model import Step, Workflow, carries_value

VALUES_GLOB = "nb2cwl-out/values"
FILES_GLOB = "nb2cwl-out/files"
REPORT_GLOB = "nb2cwl-out/report.json"
TRAINING_FOLDER = "training-{step}"  # a training step's run folder (models, history, metrics)


def has_values(step: Step) -> bool:
    """True when later steps load variables or rng state from `step`."""
    return any(carries_value(v) for v in step.outputs)


def collections(step: Step) -> int:
    """How many chunked collections a split step writes (two for zip or nested loops)."""
    return len(step.plan.iterables) if step.plan is not None else 0


def step_tool(workflow: Workflow, step: Step, python: str,
              local: bool = False) -> cwl.CommandLineTool:
    """The CommandLineTool that runs one step's script (`local`: on the local deployment)."""
    inputs = _script_inputs()
    for port, prefix in step_ports(workflow, step):
        inputs.append(cwl.CommandInputParameter(
            id=port, type_=_port_type(port, workflow),
            inputBinding=cwl.CommandLineBinding(position=2, prefix=prefix)))
    inputs += _skeleton_inputs(step)
    inputs += parameters.step_inputs(workflow, step.parameters)
    outputs = [cwl.CommandOutputParameter(
        id="report", type_="File", outputBinding=cwl.CommandOutputBinding(glob=REPORT_GLOB))]
    if has_values(step):
        outputs.append(cwl.CommandOutputParameter(
            id="values", type_="Directory",
            outputBinding=cwl.CommandOutputBinding(glob=VALUES_GLOB)))
    if step.writes_files:
        outputs.append(cwl.CommandOutputParameter(
            id="files", type_="Directory",
            outputBinding=cwl.CommandOutputBinding(glob=FILES_GLOB)))
    if step.training is not None:  # none when the cell failed or was skipped
        outputs.append(cwl.CommandOutputParameter(
            id="training", type_=["null", "Directory"],
            outputBinding=cwl.CommandOutputBinding(
                glob="nb2cwl-out/" + TRAINING_FOLDER.format(step=step.name))))
    outputs += _skeleton_outputs(step)
    cells = ", ".join(str(c.index) for c in step.cells)
    return cwl.CommandLineTool(
        cwlVersion="v1.2",
        label=f"{workflow.notebook_name}: cell(s) {cells}",
        doc=_first_line(step),
        baseCommand=interpreter(python, local),
        inputs=inputs,
        outputs=outputs,
        requirements=[resource_requirement(step.resources), hash_seed_requirement()]
        + ([parameters.values_requirement()] if step.parameters else []),
        hints=gpu_hints(step.resources),
    )


def hash_seed_requirement() -> cwl.EnvVarRequirement:
    """PYTHONHASHSEED for a step (see HASH_SEED)."""
    return cwl.EnvVarRequirement(envDef=[cwl.EnvironmentDef(envName="PYTHONHASHSEED",
                                                           envValue=HASH_SEED)])


def _script_inputs() -> list[cwl.CommandInputParameter]:
    """The generated script a tool runs, and the runtime it imports (a zip of its package)."""
    return [
        cwl.CommandInputParameter(id="script", type_="File",
                                  inputBinding=cwl.CommandLineBinding(position=0)),
        cwl.CommandInputParameter(id="runtime", type_="File",
                                  inputBinding=cwl.CommandLineBinding(position=1,
                                                                      prefix="--runtime")),
    ]


def step_ports(workflow: Workflow, step: Step) -> list[tuple[str, str]]:
    """(input port id, command-line prefix) for every value, files and external input."""
    ports: dict[str, str] = {}
    for item in step.inputs:
        if carries_value(item.var):
            ports[f"values_{item.producer}"] = f"--values-{item.producer}"
    for entry in file_plan(workflow, step):
        if "external" in entry:
            ports[f"external_{entry['external']}"] = f"--external-{entry['external']}"
        else:
            ports[f"files_{entry['from']}"] = f"--files-{entry['from']}"
    return sorted(ports.items())


def _skeleton_inputs(step: Step) -> list[cwl.CommandInputParameter]:
    if step.role == "map":
        return [cwl.CommandInputParameter(
            id=f"chunk_{n}", type_="File",
            inputBinding=cwl.CommandLineBinding(position=3, prefix=f"--chunk-{n}"))
            for n in range(collections(step))]
    if step.role == "gather":
        results: object = cwl.CommandInputArraySchema(items="File", type_="array")
        if step.plan is not None and step.plan.method == "nested_crossproduct":
            results = cwl.CommandInputArraySchema(items=results, type_="array")
        return [
            cwl.CommandInputParameter(id="results", type_=results, inputBinding=(
                cwl.CommandLineBinding(position=4, prefix="--results"))),
            cwl.CommandInputParameter(id="prefix_report", type_="File", inputBinding=(
                cwl.CommandLineBinding(position=3, prefix="--prefix-report"))),
        ]
    return []


def _skeleton_outputs(step: Step) -> list[cwl.CommandOutputParameter]:
    if step.role == "split":
        return [cwl.CommandOutputParameter(
            id=f"chunks_{n}", type_=cwl.CommandOutputArraySchema(items="File", type_="array"),
            outputBinding=cwl.CommandOutputBinding(glob=f"nb2cwl-out/chunks_{n}/*.pkl"))
            for n in range(collections(step))]
    if step.role == "map":
        return [cwl.CommandOutputParameter(
            id="results", type_="File",
            outputBinding=cwl.CommandOutputBinding(glob="nb2cwl-out/results.pkl"))]
    return []


def _port_type(port: str, workflow: Workflow) -> str:
    if port.startswith("external_"):
        number = int(port.split("_", 1)[1])
        return workflow.external_files[number][1]
    return "Directory"


def interpreter(python: str, local: bool) -> list[str]:
    """The command a step's script runs with. A local step may be handed to `nb2cwl run`'s
    warm step server: its own interpreter starts without `site` (-S, about 10 ms sooner), and
    runs `site.main()` itself when it runs the step after all (step_scripts._LAUNCHER)."""
    return [python, "-S"] if local else [python]


def assemble_tool(workflow: Workflow, python: str,
                  local: bool = False) -> cwl.CommandLineTool:
    """The CommandLineTool that writes the executed notebook and gathers written files."""
    inputs = [
        *_script_inputs(),
        cwl.CommandInputParameter(id="notebook", type_="File",
                                  inputBinding=cwl.CommandLineBinding(position=2,
                                                                      prefix="--notebook")),
        cwl.CommandInputParameter(id="output_name", type_="string",
                                  inputBinding=cwl.CommandLineBinding(position=3,
                                                                      prefix="--output")),
        cwl.CommandInputParameter(
            id="reports",  # optional: a notebook of definitions only has no steps
            type_=["null", cwl.CommandInputArraySchema(items="File", type_="array")],
            inputBinding=cwl.CommandLineBinding(position=4, prefix="--reports")),
    ]
    names = tuple(p.name for p in workflow.parameters)  # for its injected-parameters cell
    inputs += parameters.step_inputs(workflow, names)
    if names:  # in a sweep, each combination's notebook is named by its swept values
        inputs.append(cwl.CommandInputParameter(
            id="name_by", type_=["null", cwl.CommandInputArraySchema(items="string",
                                                                     type_="array")],
            inputBinding=cwl.CommandLineBinding(position=6, prefix="--name-by")))
    outputs = [cwl.CommandOutputParameter(
        id="executed_notebook", type_="File",
        outputBinding=cwl.CommandOutputBinding(glob=f"*{EXECUTED_SUFFIX}"))]
    if any(s.writes_files for s in workflow.steps):
        inputs.append(cwl.CommandInputParameter(
            id="files", type_=cwl.CommandInputArraySchema(items="Directory", type_="array"),
            inputBinding=cwl.CommandLineBinding(position=5, prefix="--files")))
        outputs.append(cwl.CommandOutputParameter(
            id="written_files", type_="Directory",
            outputBinding=cwl.CommandOutputBinding(glob="written-files*")))
    return cwl.CommandLineTool(
        cwlVersion="v1.2",
        label=f"{workflow.notebook_name}: assemble the executed notebook",
        baseCommand=interpreter(python, local),
        inputs=inputs,
        outputs=outputs,
        requirements=[cwl.ResourceRequirement(coresMin=1)]
        + ([parameters.values_requirement()] if names else []),
    )


def main_workflow(workflow: Workflow) -> cwl.Workflow:
    """The top-level Workflow wiring every step and the assembler."""
    inputs = [
        cwl.WorkflowInputParameter(id="runtime", type_="File"),
        cwl.WorkflowInputParameter(id="notebook", type_="File"),
        cwl.WorkflowInputParameter(id="executed_name", type_="string"),
        cwl.WorkflowInputParameter(id="script_assemble", type_="File"),
    ]
    for number, (path, kind) in enumerate(workflow.external_files):
        inputs.append(cwl.WorkflowInputParameter(id=f"external_{number}", type_=kind,
                                                 label=path))
    inputs += parameters.workflow_inputs(workflow)
    if workflow.parameters:  # a sweep names each combination's notebook by its values
        inputs.append(cwl.WorkflowInputParameter(
            id="name_by", type_=["null", cwl.InputArraySchema(items="string", type_="array")],
            doc="the parameters that name the executed notebook (a sweep's combinations)"))
    steps = []
    for step in workflow.steps:
        inputs.append(cwl.WorkflowInputParameter(id=f"script_{step.name}", type_="File"))
        wiring = [
            cwl.WorkflowStepInput(id="script", source=f"script_{step.name}"),
            cwl.WorkflowStepInput(id="runtime", source="runtime"),
        ]
        for port, _ in step_ports(workflow, step):
            if port.startswith("external_"):
                source = port
            else:
                kind, producer = port.split("_", 1)
                source = f"{producer}/{kind}"
            wiring.append(cwl.WorkflowStepInput(id=port, source=source))
        wiring += parameters.step_wiring(workflow, step.parameters)
        out = ["report"]
        if has_values(step):
            out.append("values")
        if step.writes_files:
            out.append("files")
        if step.training is not None:
            out.append("training")
        scatter, method = None, None
        if step.role == "map":
            split = step.name.removesuffix("_map") + "_split"
            ports = [f"chunk_{n}" for n in range(collections(step))]
            wiring += [cwl.WorkflowStepInput(id=p, source=f"{split}/chunks_{p[-1]}")
                       for p in ports]
            out = ["results"]
            scatter = ports if len(ports) > 1 else ports[0]
            method = step.plan.method if len(ports) > 1 else None  # type: ignore[union-attr]
        elif step.role == "gather":
            base = step.name.removesuffix("_gather")
            wiring += [cwl.WorkflowStepInput(id="results", source=f"{base}_map/results"),
                       cwl.WorkflowStepInput(id="prefix_report", source=f"{base}_split/report")]
        elif step.role == "split":
            out += [f"chunks_{n}" for n in range(collections(step))]
        steps.append(cwl.WorkflowStep(id=step.name, run=f"tools/{step.name}.cwl", in_=wiring,
                                      out=out, scatter=scatter, scatterMethod=method,
                                      label="cell(s) "
                                      + ", ".join(str(c.index) for c in step.cells)))
    assemble_in = [
        cwl.WorkflowStepInput(id="script", source="script_assemble"),
        cwl.WorkflowStepInput(id="runtime", source="runtime"),
        cwl.WorkflowStepInput(id="notebook", source="notebook"),
        cwl.WorkflowStepInput(id="output_name", source="executed_name"),
        *parameters.step_wiring(workflow, tuple(p.name for p in workflow.parameters)),
        *([cwl.WorkflowStepInput(id="name_by", source="name_by")]
          if workflow.parameters else []),
    ]
    reporting = [s for s in workflow.steps if s.role != "map"]
    if reporting:
        assemble_in.append(cwl.WorkflowStepInput(
            id="reports", source=[f"{s.name}/report" for s in reporting],
            linkMerge="merge_flattened"))
    outputs = [cwl.WorkflowOutputParameter(id="executed_notebook", type_="File",
                                           outputSource="assemble/executed_notebook")]
    assemble_out = ["executed_notebook"]
    outputs += [cwl.WorkflowOutputParameter(
        id=f"training_{s.name}", type_=["null", "Directory"], outputSource=f"{s.name}/training",
        label=f"{workflow.shown_cells([s.training.cell])}: trained models, history, metrics "
              "and log")
        for s in workflow.steps if s.training is not None]
    writers = [s for s in workflow.steps if s.writes_files]
    if writers:
        assemble_in.append(cwl.WorkflowStepInput(
            id="files", source=[f"{s.name}/files" for s in writers], linkMerge="merge_flattened"))
        outputs.append(cwl.WorkflowOutputParameter(id="written_files", type_="Directory",
                                                   outputSource="assemble/written_files"))
        assemble_out.append("written_files")
    steps.append(cwl.WorkflowStep(id="assemble", run="tools/assemble.cwl", in_=assemble_in,
                                  out=assemble_out))
    return cwl.Workflow(
        cwlVersion="v1.2",
        label=f"{workflow.notebook_name}, compiled by nb2cwl",
        inputs=inputs,
        outputs=outputs,
        steps=steps,
        requirements=[cwl.MultipleInputFeatureRequirement()] + (
            [cwl.ScatterFeatureRequirement()]
            if any(s.role == "map" for s in workflow.steps) else []),
    )


def as_document(obj: Any) -> dict[str, Any]:
    """A cwl-utils object as the plain mapping ruamel.yaml writes."""
    document = without_blank_names(obj.save())
    return with_namespaces({k: v for k, v in document.items() if k != "id"})


def without_blank_names(node: Any) -> Any:
    """A saved CWL document without the `name: _:<random uuid>` cwl-utils gives every anonymous
    array schema: the same notebook compiles (and exports) to the same files every time."""
    if isinstance(node, dict):
        return {k: without_blank_names(v) for k, v in node.items()
                if not (k == "name" and isinstance(v, str) and v.startswith("_:"))}
    if isinstance(node, list):
        return [without_blank_names(v) for v in node]
    return node


def _first_line(step: Step) -> str:
    for line in step.cells[0].source.splitlines():
        if line.strip():
            return line.strip()[:120]
    return ""
