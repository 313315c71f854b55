"""User directives on cells: nb2cwl tags, Kale's tags and Jupyter-Workflow `workflow` metadata.

Kale's tags mean here what they mean there, where they mean something: `skip` (not run),
`step:NAME` or the older `block:NAME` (the cells of NAME run as one step; an untagged cell, or
one tagged `block:` alone, after one belongs to the same step, as in Kale), `prev:NAME`
(Kale's declared order: nb2cwl infers its own and says where they disagree),
`limit:nvidia.com/gpu:N` (the step needs N GPUs), `pipeline-parameters` (the parameters cell)
and `pipeline-metrics` (what a sweep reports).
`imports` and `functions` cells need nothing: their definitions are replayed where used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from nb2cwl.errors import DirectiveError, Location
from nb2cwl.frontend.model import Cell

TAG_SKIP = "nb2cwl:skip"
TAG_NOT_CHOSEN = "nb2cwl:not-chosen"  # set by --cells on the cells it leaves out, never by users
TAG_STEP = "nb2cwl:step="
KALE_STEP = ("step:", "block:")
KALE_PREV = "prev:"
KALE_GPU = "limit:nvidia.com/gpu:"
KALE_OWN = ("skip", "imports", "functions", "pipeline-parameters", "pipeline-metrics")


@dataclass(frozen=True)
class CellDirectives:
    """What the user asked for one cell, validated once."""

    skip: bool = False
    step_name: str | None = None  # cells sharing a name run as one step
    declared_in: tuple[str, ...] = ()  # Jupyter-Workflow step.in names
    declared_in_files: tuple[str, ...] = ()  # step.in entries of type "file" with a value
    declared_out: tuple[str, ...] = ()  # Jupyter-Workflow step.out names
    autoin: bool = True  # False: only declared_in are inputs
    scatter: tuple[str, ...] = ()  # names Jupyter-Workflow asks to scatter over
    target: str | None = None  # deployment name from Jupyter-Workflow target
    notes: tuple[str, ...] = field(default=())
    kale_step: str | None = None  # Kale's step:NAME (or block:NAME)
    kale_prev: tuple[str, ...] = ()  # Kale's prev:NAME tags
    kale_role: str | None = None  # skip, imports, functions, pipeline-parameters, -metrics
    gpus: int = 0  # Kale's limit:nvidia.com/gpu:N


def read_directives(cell: Cell, notebook: str) -> CellDirectives:
    """Parse the tags and `workflow` metadata of `cell`; raise DirectiveError when malformed."""
    where = Location(notebook, cell.index, cell.cell_id, prompt=cell.prompt)
    kale = _kale(cell.tags, where)
    skip = TAG_SKIP in cell.tags or TAG_NOT_CHOSEN in cell.tags or kale["kale_role"] == "skip"
    names = [t[len(TAG_STEP):].strip() for t in cell.tags if t.startswith(TAG_STEP)]
    if len(set(names)) > 1:
        raise DirectiveError(f"the cell has several nb2cwl:step= tags: {', '.join(names)}", where)
    step_name = names[0] if names else None
    if step_name == "":
        raise DirectiveError("the tag nb2cwl:step= needs a name, e.g. nb2cwl:step=train", where)
    step_name = step_name or kale["kale_step"]
    workflow = cell.metadata.get("workflow")
    if workflow is None:
        return CellDirectives(skip=skip, step_name=step_name, **kale)
    if not isinstance(workflow, dict):
        raise DirectiveError("the 'workflow' metadata must be an object", where)
    step = workflow.get("step", {}) or {}
    if not isinstance(step, dict):
        raise DirectiveError("the 'workflow.step' metadata must be an object", where)
    ins, in_files, scatter = _read_ports(step.get("in", []), "in", where)
    outs, _, _ = _read_ports(step.get("out", []), "out", where)
    scatter += _scatter_items(step.get("scatter"), where)
    autoin = step.get("autoin", True)
    if not isinstance(autoin, bool):
        raise DirectiveError("'workflow.step.autoin' must be true or false", where)
    target = workflow.get("target")
    target_name = None
    if target is not None:
        if not isinstance(target, dict):
            raise DirectiveError("the 'workflow.target' metadata must be an object", where)
        model = target.get("deployment", target.get("model"))
        if isinstance(model, dict):
            model = model.get("name")
        if not isinstance(model, str) or not model:
            raise DirectiveError("'workflow.target' needs a deployment (or model) name", where)
        target_name = model
    return CellDirectives(skip, step_name, ins, in_files, outs, autoin, scatter, target_name,
                          **kale)


def _kale(tags: tuple[str, ...], where: Location) -> dict:
    """Kale's tags of a cell, checked."""
    # an empty `block:` continues the step before it, as an untagged cell does
    steps = [t.split(":", 1)[1].strip() for t in tags if t.startswith(KALE_STEP)
             and t.split(":", 1)[1].strip()]
    if len(set(steps)) > 1:
        raise DirectiveError(f"the cell has several Kale step tags: {', '.join(steps)}", where)
    gpus = 0
    for tag in tags:
        if tag.startswith(KALE_GPU):
            count = tag[len(KALE_GPU):].strip()
            if not count.isdigit():
                raise DirectiveError(f"{tag}: the GPU count must be a whole number", where)
            gpus = int(count)
    roles = [t for t in tags if t in KALE_OWN]
    return {"kale_step": steps[0] if steps else None,
            "kale_prev": tuple(t[len(KALE_PREV):].strip() for t in tags
                               if t.startswith(KALE_PREV) and t[len(KALE_PREV):].strip()),
            "kale_role": roles[0] if roles else None,
            "gpus": gpus}


def kale_continuation(cells: list[Cell], directives: dict[int, CellDirectives]
                      ) -> dict[int, CellDirectives]:
    """As in Kale, an untagged cell after a cell of step NAME runs in NAME too (only in a
    notebook that uses Kale's step tags)."""
    if not any(d.kale_step for d in directives.values()):
        return directives
    found = dict(directives)
    current: str | None = None
    for cell in cells:
        own = found[cell.index]
        if own.kale_step:
            current = own.kale_step
        elif (current and own.step_name is None and own.kale_role is None and not own.skip
              and not any(t.startswith(KALE_PREV) for t in cell.tags)):
            found[cell.index] = replace(own, step_name=current)
    return found


#: Jupyter-Workflow's scatter methods (CWL's, and `cartesian` for a product of its items).
_SCATTER_METHODS = frozenset({"cartesian", "dotproduct", "flat_crossproduct",
                              "nested_crossproduct"})


def _scatter_items(scatter: object, where: Location) -> tuple[str, ...]:
    """Jupyter-Workflow's step-level `scatter: {items: [...], method}`: the names to scatter
    over. An item is a name, an object with a `name` (and `size` or `num`), or a nested
    scatter of its own (`{items: [...], method: dotproduct}`, as Jupyter-Workflow's
    1000-genome example has: a cartesian product over a dot product). nb2cwl scatters the
    cell's loops over those names where that is safe, nested as the loops are written."""
    if scatter is None:
        return ()
    if not isinstance(scatter, dict) or not isinstance(scatter.get("items", []), list):
        raise DirectiveError("'workflow.step.scatter' must be an object with an 'items' list",
                             where)
    method = scatter.get("method", "cartesian")
    if method not in _SCATTER_METHODS:
        raise DirectiveError(f"'workflow.step.scatter' method {method!r} is not one of "
                             f"{', '.join(sorted(_SCATTER_METHODS))}", where)
    names: list[str] = []
    for item in scatter.get("items", []):
        if isinstance(item, dict) and "items" in item:
            names += _scatter_items(item, where)
            continue
        name = item.get("name") if isinstance(item, dict) else item
        if not isinstance(name, str) or not name:
            raise DirectiveError("a 'workflow.step.scatter' item must be a name, an object "
                                 "with a 'name', or a nested scatter with 'items'", where)
        names.append(name)
    return tuple(names)


def notebook_deployments(metadata: dict, notebook: str) -> dict[str, dict]:
    """Deployments the notebook's own Jupyter-Workflow metadata defines: `workflow.deployments`,
    or the older `workflow.models`, each `{type, config}` as StreamFlow takes it."""
    where = Location(notebook)
    workflow = metadata.get("workflow")
    if workflow is None:
        return {}
    if not isinstance(workflow, dict):
        raise DirectiveError("the notebook's 'workflow' metadata must be an object", where)
    found: dict[str, dict] = {}
    for key in ("models", "deployments"):  # the newer name wins on a clash
        entries = workflow.get(key) or {}
        if not isinstance(entries, dict):
            raise DirectiveError(f"the notebook's 'workflow.{key}' metadata must map names to "
                                 "{type, config}", where)
        for name, entry in entries.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
                raise DirectiveError(f"deployment {name!r} in the notebook's 'workflow.{key}' "
                                     "needs a 'type' and a 'config'", where)
            found[str(name)] = json.loads(json.dumps(entry))  # plain data, not nbformat's
    return found


def _read_ports(
    entries: object, key: str, where: Location
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    if not isinstance(entries, list):
        raise DirectiveError(f"'workflow.step.{key}' must be a list", where)
    names: list[str] = []
    files: list[str] = []
    scatter: list[str] = []
    for entry in entries:
        if isinstance(entry, str):
            names.append(entry)
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("name", ""), str):
            raise DirectiveError(f"a 'workflow.step.{key}' entry must be a name or an object "
                                 "with a 'name'", where)
        kind = entry.get("type", "name")
        name = entry.get("name", "")
        if kind == "file" and isinstance(entry.get("value"), str):
            files.append(entry["value"])
        elif kind in ("name", "file", "env", "control") and name:
            names.append(name)
        elif kind not in ("name", "file", "env", "control"):
            raise DirectiveError(f"unknown port type {kind!r} in 'workflow.step.{key}'", where)
        if "scatter" in entry and name:
            scatter.append(name)
    return tuple(names), tuple(files), tuple(scatter)
