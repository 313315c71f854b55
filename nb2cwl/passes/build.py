"""Build the workflow IR from the dataflow: one step per code cell, merged as the user asks."""

from __future__ import annotations

import ast

from nb2cwl.analysis.dataflow import Dataflow
from nb2cwl.analysis.preload import preloadable
from nb2cwl.analysis.skeletons import MapSkeleton
from nb2cwl.analysis.training import ONE_DEVICE
from nb2cwl.frontend.directives import notebook_deployments
from nb2cwl.frontend.model import shown_cells
from nb2cwl.ir.model import (
    CellCode,
    CellView,
    Edge,
    Fallback,
    MapPlan,
    Parameter,
    Replay,
    Resources,
    Setting,
    Step,
    StepInput,
    TrainingPlan,
    Workflow,
)
from nb2cwl.passes.cell_groups import WHOLE_NOTEBOOK, check_merges, group_cells, kale_order


def build_workflow(flow: Dataflow) -> Workflow:
    """One step per code cell, except where cells must share one: the cells the analysis keeps
    together, and those a user tags with the same name (definition-only cells are replayed,
    not run as steps)."""
    notebook = flow.analysis.notebook
    counts: dict[int, int | None] = {}
    opaque = [(c.index, line, what) for c in flow.cells
              for line, what in c.analysis.effects.opaque_namespace]
    for cell_flow in flow.cells:  # Jupyter's In [n]: a blank cell is not run, and has none
        counts[cell_flow.index] = cell_flow.analysis.cell.prompt
    step_of, merged_why = group_cells(flow, bool(opaque))
    groups: dict[str, list[int]] = {}
    for index, name in step_of.items():
        groups.setdefault(name, []).append(index)
    replays: dict[str, Replay] = {}
    for cell_flow in flow.cells:
        for definition in cell_flow.replay:
            _collect_replay(definition, replays)
        for definition in cell_flow.analysis.definitions.values():
            _collect_replay(definition, replays)
    for setting in flow.settings:
        for definition in setting.requires:
            _collect_replay(definition, replays)
    steps = [
        _make_step(name, sorted(indices), flow, step_of, counts, merged_why.get(name, ()))
        for name, indices in groups.items()
    ]
    quiet = tuple(_cell_code(c, counts) for c in flow.cells if c.index not in step_of)
    check_merges(flow, step_of, notebook.name)
    edges = tuple(
        Edge(item.var, item.producer, cell_flow.index)
        for cell_flow in flow.cells
        for item in cell_flow.inputs
    )
    views = _cell_views(flow, step_of)
    steps.sort(key=lambda s: s.first_cell)
    diagnostics = list(flow.diagnostics)
    if notebook.parameters is not None:
        diagnostics += notebook.parameters.notes
    diagnostics += kale_order(flow, steps)
    first_lines = {c.index: c.first_line for c in notebook.cells}
    shown = {c.index: c.shown for c in notebook.cells}

    def at(cell: int, line: int) -> str:  # a script's own lines; a notebook's cell's
        first = first_lines.get(cell)
        return f"line {first + line - 1}" if first and line else f"line {line}"

    sequential = [Fallback(c.index, f"{at(c.index, c.analysis.skeleton.line)}: the loop runs "
                                    f"sequentially: its cell shares step {step_of[c.index]} "
                                    "with other cells (see that step's reasons)")
                  for c in flow.cells if c.analysis.skeleton is not None
                  and len(groups.get(step_of.get(c.index, ""), ())) > 1]
    return Workflow(
        notebook_name=notebook.name,
        notebook_path=notebook.path,
        content_path=notebook.content,
        steps=tuple(steps),
        replays=tuple(sorted(replays.values(), key=_replay_position)),
        edges=edges,
        cells=views,
        external_files=tuple(sorted(flow.external_files.items())),
        diagnostics=tuple(diagnostics),
        fallbacks=tuple(
            [Fallback(b.cell_index, f"{at(b.cell_index, b.line)}: {b.reason}; the loop runs "
                                    "sequentially", line=b.line, hazard=b.hazard, fix=b.fix)
             for c in flow.cells for b in c.analysis.blocked]
            + sequential
            + [Fallback(index, f"{at(index, line)}: {what}; the whole notebook runs as one "
                               "sequential step") for index, line, what in opaque]
            + [Fallback(c.index, _one_device(c.index, c.analysis.training, at, shown),
                        c.analysis.training.kind, c.analysis.training.line)
               for c in flow.cells if c.analysis.training is not None
               and c.analysis.training.kind in ONE_DEVICE]),
        settings=tuple(Setting(s.key, s.cell_index, s.line, s.code, s.owners, s.kinds,
                               tuple(d.key for d in s.requires)) for s in flow.settings),
        skipped_magics=tuple(sorted({m for c in flow.cells
                                     for m in _skipped(c.analysis.effects.skipped_magics)})),
        notebook_deployments=notebook_deployments(notebook.metadata, notebook.name),
        quiet_cells=quiet,
        parameters=_workflow_parameters(notebook),
        parameter_cell=notebook.parameters.cell_index if notebook.parameters else None,
        future_imports=tuple((c.index, feature) for c in flow.cells
                             for feature in _future_features(c.analysis.cell.code)),
        preload=preloadable(c.analysis.cell.code for c in flow.cells),
    )


def _workflow_parameters(notebook) -> tuple[Parameter, ...]:
    if notebook.parameters is None:
        return ()
    cell = notebook.parameters.cell_index
    return tuple(Parameter(p.name, p.type, p.default, cell, p.line)
                 for p in notebook.parameters.parameters)


def _skipped(found: list[tuple[int, str]]) -> list[str]:
    """The names of the magics a step does not run (from the analysis' reasons)."""
    return [why.split()[0].lstrip("%") for _, why in found]


def _future_features(code: str) -> list[str]:
    """The features `from __future__ import ...` statements of `code` turn on."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
            and node.module == "__future__" for alias in node.names]


def _make_step(
    name: str, indices: list[int], flow: Dataflow, step_of: dict[int, str],
    counts: dict[int, int | None], kept: tuple[str, ...] = (),
) -> Step:
    cells = [flow.cell(i) for i in indices]
    inside = set(indices)
    inputs: dict[str, StepInput] = {}
    replay: dict[str, None] = {}
    outputs: set[str] = set()
    groups: set[tuple[str, ...]] = set()
    target = None
    for cell_flow in cells:
        analysis = cell_flow.analysis
        for item in cell_flow.inputs:
            if item.producer in inside:
                continue
            producer = step_of.get(item.producer) if item.producer is not None else None
            inputs.setdefault(item.var, StepInput(item.var, producer, item.producer))
        for definition in cell_flow.replay:
            if definition.cell_index not in inside:  # cells of the step define it in order
                replay[definition.key] = None
        for other, item in flow.consumers(cell_flow.index):
            if other.index not in inside:
                outputs.add(item.var)
        groups |= {tuple(sorted(g)) for g in analysis.alias_groups}
        target = target or analysis.directives.target
    writes_files = any(c.analysis.effects.file_writes or c.analysis.effects.opaque_io
                       for c in cells) or any(v.startswith("file:") for v in outputs)
    sees_all = any(c.analysis.effects.opaque_io or c.analysis.effects.opaque_reads
                   for c in cells)
    code = tuple(_cell_code(c, counts) for c in cells)
    tags = sorted({c.analysis.directives.step_name for c in cells
                   if c.analysis.directives.step_name is not None})
    if name == WHOLE_NOTEBOOK:
        reasons: tuple[str, ...] = ("the analysis cannot follow some cell's effects on the "
                                    "namespace: every cell runs in order in this one step",)
    elif tags and len(indices) > 1:
        reasons = (f"{shown_cells(c.analysis.cell for c in cells)} merged by tag "
                   f"nb2cwl:step={', '.join(tags)}", *kept)
    else:
        reasons = kept
    # whole groups: a split must know every name a change after its loop reaches
    kept_groups = tuple(g for g in sorted(groups) if set(g) & outputs)
    plan = _plan(cells[0].analysis.skeleton) if len(cells) == 1 else None
    training = None if name == WHOLE_NOTEBOOK else _training(cells, flow)
    gpus = max(c.analysis.directives.gpus for c in cells)  # Kale's limit:nvidia.com/gpu:N
    defines = {name for c in cells for name in c.analysis.effects.writes
               | c.analysis.effects.mutates if name not in c.analysis.definitions
               and not name.startswith(("rng:", "file:"))}
    return Step(name, code, tuple(sorted(inputs.values(), key=lambda i: i.var)),
                tuple(sorted(outputs)), tuple(replay), kept_groups, writes_files, sees_all,
                target, reasons, plan=plan, training=training,
                parameters=_parameters_needed(cells, flow),
                resources=Resources(gpus=gpus) if gpus else Resources(),
                defines=tuple(sorted(defines)))


def _one_device(cell: int, site, at, shown: dict[int, str]) -> str:  # site: a TrainingSite
    """Why training found in `cell` runs as written, on one device, and where it is."""
    where = at(cell, site.line)
    if isinstance(site.origin, tuple):
        origin_cell, origin_line = site.origin
        inner = at(origin_cell, origin_line)
        if origin_cell != cell and at(origin_cell, 1) == "line 1":  # a notebook: which cell
            inner += f" of {shown[origin_cell]}"
        where += f" (in {site.within}() at {inner}, called here)"
    return f"{where}: {site.detail}"


def _parameters_needed(cells: list, flow: Dataflow) -> tuple[str, ...]:
    """The parameters whose run values the step assigns: those it replays, and, when it runs
    the parameters cell itself, those its cells read after it."""
    declared = flow.analysis.notebook.parameters
    if declared is None:
        return ()
    names = {p.name for p in declared.parameters}
    needed = {d.parameter for c in cells for d in c.replay if d.parameter is not None}
    if any(c.index == declared.cell_index for c in cells):
        needed |= {name for c in cells if c.index > declared.cell_index
                   for name in c.analysis.effects.reads & names}
    return tuple(p.name for p in declared.parameters if p.name in needed)


def _training(cells: list, flow: Dataflow) -> TrainingPlan | None:
    """The plan of the first Keras fit or custom loop in the step's cells (TF1: none)."""
    for cell_flow in cells:
        site = cell_flow.analysis.training
        if site is None or site.kind in ONE_DEVICE:
            continue
        return TrainingPlan(site.kind, cell_flow.index, site.line, site.models,
                            step_function=site.step_function,
                            seed=_last_seed(flow, cells[0].index - 1), within=site.within,
                            origin=site.origin if isinstance(site.origin, tuple) else None)
    return None


def _last_seed(flow: Dataflow, last_cell: int) -> str | None:
    """The expression of the last TensorFlow seed call in the cells up to `last_cell`."""
    seeds = [c.analysis.seed[1] for c in flow.cells
             if c.analysis.seed is not None and c.index <= last_cell]
    return seeds[-1] if seeds else None


def _plan(skeleton: MapSkeleton | None) -> MapPlan | None:
    if skeleton is None:
        return None
    return MapPlan(
        form=skeleton.form, method=skeleton.method, line=skeleton.line,
        prefix_code=skeleton.prefix_code, iterables=skeleton.iterables,
        targets=skeleton.targets, conditions=skeleton.conditions, element=skeleton.element,
        result=skeleton.result, body=skeleton.body, accumulators=skeleton.accumulators,
        gather_code=skeleton.gather_code, reads=skeleton.reads,
        loop_locals=skeleton.loop_locals, keep_locals=skeleton.keep_locals, gpu=skeleton.gpu,
        asked=skeleton.forced, body_at_lines=skeleton.body_at_lines)


def _cell_views(flow: Dataflow, step_of: dict[int, str]) -> tuple[CellView, ...]:
    by_index = {c.index: c for c in flow.cells}
    views: list[CellView] = []
    for cell in flow.analysis.notebook.cells:
        if not cell.is_code:
            views.append(CellView(cell.index, cell.cell_id, cell.cell_type, "markdown", None))
            continue
        cell_flow = by_index.get(cell.index)
        if cell_flow is None:
            role = "empty" if not cell.code.strip() else "skipped"
            views.append(CellView(cell.index, cell.cell_id, "code", role, None,
                                  prompt=cell.prompt))
            continue
        analysis = cell_flow.analysis
        role = ("step" if cell.index in step_of
                else "empty" if analysis.empty else "definitions")
        notes = [f"line {line}: {text}" if line else text for line, text in analysis.effects.notes]
        notes += [f"line {line}: {text}" if line else text
                  for line, text in [*analysis.effects.opaque_io,
                                     *analysis.effects.opaque_reads]]
        views.append(CellView(
            cell.index, cell.cell_id, "code", role, step_of.get(cell.index),
            tuple((i.var, i.producer) for i in cell_flow.inputs),
            tuple(sorted({d.cell_index for d in cell_flow.replay})),
            tuple(notes), cell.first_line, cell.prompt,
        ))
    return tuple(views)


def _collect_replay(definition, into: dict[str, Replay]) -> None:
    if definition.key in into:
        return
    for required in definition.requires:
        _collect_replay(required, into)
    into[definition.key] = Replay(definition.key, definition.cell_index, definition.names,
                                  definition.code, tuple(r.key for r in definition.requires),
                                  definition.parameter, definition.line)


def _replay_position(replay: Replay) -> tuple[int, int]:
    cell, number = replay.key.split(":")
    return int(cell), int(number)


def _cell_code(cell_flow, counts: dict[int, int | None]) -> CellCode:
    cell = cell_flow.analysis.cell
    seconds, source = _seconds(cell.metadata, cell_flow.analysis.seconds)
    unbounded = cell_flow.analysis.unbounded if source == "estimate" else ""
    return CellCode(cell.index, cell.cell_id, cell.code, cell.source, counts[cell.index],
                    _quiet(cell.source), seconds=seconds, seconds_from=source,
                    unbounded=unbounded)


def _seconds(metadata: dict, estimate: float) -> tuple[float, str]:
    """How long the cell ran when JupyterLab (or nbclient) recorded it in the notebook's
    metadata, else the analysis' estimate."""
    execution = metadata.get("execution") if isinstance(metadata, dict) else None
    if isinstance(execution, dict):
        began = _instant(execution.get("iopub.execute_input"))
        ended = _instant(execution.get("shell.execute_reply"))
        if began is not None and ended is not None and ended >= began:
            return ended - began, "notebook"
    return estimate, "estimate"


def _instant(text: object) -> float | None:
    import datetime

    if not isinstance(text, str):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _quiet(source: str) -> bool:
    lines = [line.split("#", 1)[0].rstrip() for line in source.rstrip().splitlines()]
    lines = [line for line in lines if line]
    return bool(lines) and lines[-1].endswith(";")
