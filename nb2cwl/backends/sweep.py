"""A sweep: the workflow once per combination of parameter values, as a CWL scatter.

`sweep.cwl` runs, once, every step that no swept parameter reaches (loading data for a sweep
over a training knob), then scatters `sweep-body.cwl` over the swept parameters
(`nested_crossproduct` or `dotproduct`): the steps a swept parameter reaches, directly or
through the values and files they take, and the assembler, which names each executed notebook
by its combination. The body's steps take what the shared steps produced as inputs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from cwl_utils.parser import cwl_v1_2 as cwl

from nb2cwl.backends.cwl import main_workflow
from nb2cwl.backends.parameters import PATH_SUFFIX, input_id
from nb2cwl.ir.model import Workflow

BODY = "combinations"  # the scattered step of sweep.cwl
ASSEMBLE = "assemble"


@dataclass(frozen=True)
class SweepPlan:
    """Which steps run once and which once per combination."""

    swept: tuple[str, ...]  # the swept parameters' workflow input ids
    method: str  # "nested_crossproduct" or "dotproduct"
    shared: tuple[str, ...]  # steps run once, before the scatter
    per_combination: tuple[str, ...]  # steps of the body (the assembler included)


def plan_sweep(workflow: Workflow, swept: list[str], method: str) -> SweepPlan:
    """Split the steps by whether a swept parameter reaches them."""
    main = main_workflow(workflow)
    ids = [input_id(workflow, workflow.parameter(name)) for name in swept]
    reached: set[str] = set()
    changed = True
    while changed:
        changed = False
        for step in main.steps:
            if step.id in reached:
                continue
            sources = _sources(step)
            if any(s in ids or s.removesuffix(PATH_SUFFIX) in ids for s in sources) or any(
                    s.split("/")[0] in reached for s in sources if "/" in s):
                reached.add(step.id)
                changed = True
    reached.add(ASSEMBLE)
    order = [step.id for step in main.steps]
    return SweepPlan(tuple(ids), method, tuple(s for s in order if s not in reached),
                     tuple(s for s in order if s in reached))


def _sources(step: cwl.WorkflowStep) -> list[str]:
    found: list[str] = []
    for item in step.in_:
        source = item.source
        found += source if isinstance(source, list) else [source] if source else []
    return found


def sweep_documents(workflow: Workflow, plan: SweepPlan) -> tuple[cwl.Workflow, cwl.Workflow]:
    """sweep.cwl and sweep-body.cwl (relative to the output directory)."""
    main = main_workflow(workflow)
    inputs = {item.id: item for item in main.inputs}
    steps = {step.id: step for step in main.steps}
    body_steps = [copy.deepcopy(steps[name]) for name in plan.per_combination]
    body_inputs: dict[str, cwl.WorkflowInputParameter] = {}
    outer_wiring: dict[str, str] = {}  # body input -> what feeds it in sweep.cwl
    for step in body_steps:
        for item in step.in_:
            sources = item.source if isinstance(item.source, list) else [item.source]
            renamed = []
            for source in sources:
                if source is None:
                    continue
                if "/" in source and source.split("/")[0] in plan.shared:
                    port = source.replace("/", "__")  # a shared step's output, handed in
                    body_inputs.setdefault(port, cwl.WorkflowInputParameter(
                        id=port, type_=_output_type(steps[source.split("/")[0]], source)))
                    outer_wiring[port] = source
                    renamed.append(port)
                elif "/" not in source:
                    body_inputs.setdefault(source, copy.deepcopy(inputs[source]))
                    outer_wiring[source] = source
                    renamed.append(source)
                else:
                    renamed.append(source)
            item.source = renamed if isinstance(item.source, list) else renamed[0]
    assemble = next(s for s in body_steps if s.id == ASSEMBLE)
    assemble.in_.append(cwl.WorkflowStepInput(id="name_by", source="name_by"))
    names = cwl.InputArraySchema(items="string", type_="array")
    body_inputs["name_by"] = cwl.WorkflowInputParameter(id="name_by", type_=names)
    # fed from sweep.cwl, never a default of the body: StreamFlow 0.2.0rc3 tags a body
    # input's default with the root tag, and then matches the steps' inputs across
    # combinations (an assembler got another combination's report)
    outer_wiring["name_by"] = "name_by"
    outputs = [copy.deepcopy(o) for o in main.outputs
               if o.outputSource.split("/")[0] in plan.per_combination]
    body = cwl.Workflow(cwlVersion="v1.2", label=f"{workflow.notebook_name}: one combination",
                        inputs=list(body_inputs.values()), outputs=outputs, steps=body_steps,
                        requirements=main.requirements)
    outer_inputs = [cwl.WorkflowInputParameter(
        id="name_by", type_=names, default=_swept_names(workflow, plan),
        doc="the parameters that name each combination's executed notebook")]
    for item in main.inputs:
        item = copy.deepcopy(item)
        if item.id in plan.swept:
            item.type_ = cwl.InputArraySchema(items=item.type_, type_="array")
            item.default = None
        outer_inputs.append(item)
    scattered = list(plan.swept)
    outer_steps = [steps[name] for name in plan.shared]
    outer_steps.append(cwl.WorkflowStep(
        id=BODY, run="sweep-body.cwl", scatter=scattered if len(scattered) > 1 else scattered[0],
        scatterMethod=plan.method if len(scattered) > 1 else None,
        in_=[cwl.WorkflowStepInput(id=port, source=source)
             for port, source in outer_wiring.items()],
        out=[o.id for o in outputs], label="the steps a swept parameter reaches, per combination"))
    depth = len(scattered) if plan.method == "nested_crossproduct" else 1
    outer_outputs = []
    for output in outputs:
        kind: Any = output.type_
        for _ in range(depth):
            kind = cwl.OutputArraySchema(items=kind, type_="array")
        outer_outputs.append(cwl.WorkflowOutputParameter(
            id=output.id, type_=kind, outputSource=f"{BODY}/{output.id}"))
    shared_outputs = [o for o in main.outputs
                      if o.outputSource.split("/")[0] in plan.shared]
    sweep = cwl.Workflow(
        cwlVersion="v1.2", label=f"{workflow.notebook_name}: a sweep over "
        + ", ".join(plan.swept), inputs=outer_inputs, outputs=outer_outputs + shared_outputs,
        steps=outer_steps,
        requirements=[cwl.SubworkflowFeatureRequirement(), cwl.ScatterFeatureRequirement(),
                      cwl.MultipleInputFeatureRequirement()])
    return sweep, body


def _swept_names(workflow: Workflow, plan: SweepPlan) -> list[str]:
    return [p.name for p in workflow.parameters if input_id(workflow, p) in plan.swept]


def _output_type(step: cwl.WorkflowStep, source: str) -> Any:
    """The type of a step's output: a report File, a values/files/training Directory, a map
    step's results (an array per scattered collection) or a split step's chunks."""
    port = source.split("/")[1]
    if port == "report":
        return "File"
    if port == "training":
        return ["null", "Directory"]
    if port == "results":
        depth = len(step.scatter) if isinstance(step.scatter, list) and (
            step.scatterMethod == "nested_crossproduct") else 1
        kind: Any = "File"
        for _ in range(depth):
            kind = cwl.InputArraySchema(items=kind, type_="array")
        return kind
    if port.startswith("chunks_"):
        return cwl.InputArraySchema(items="File", type_="array")
    return "Directory"
