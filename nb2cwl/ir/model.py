"""The workflow IR: steps, their ports and the edges between them. Later layers read only this."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from nb2cwl.frontend.model import shown_cells


def carries_value(var: str) -> bool:
    """True for what travels in a step's values folder: variables and `rng:*` state.

    Not `file:<path>` (files travel in the files folder) nor `skeleton:*` (the ports between a
    scattered loop's split, map and gather steps).
    """
    return not var.startswith(("file:", "skeleton:"))


@dataclass(frozen=True)
class CellCode:
    """A cell a step runs: its notebook position, its Python code and original source."""

    index: int
    cell_id: str
    code: str
    source: str
    execution_count: int | None  # Jupyter's In [n]; None for a blank cell (never run)
    quiet: bool = False  # the cell ends with ';': no execute_result, as in IPython
    rewritten: bool = False  # `code` was changed by a pass: run it, not the source
    seconds: float = 0.0  # how long it runs: measured (`seconds_from`) or estimated
    seconds_from: str = "estimate"  # "estimate", "notebook" (recorded timings) or "profile"
    unbounded: str = ""  # estimated only: the loop whose cost the code does not bound


@dataclass(frozen=True)
class Replay:
    """A definition (import, def, class) a step re-executes instead of loading a value."""

    key: str
    cell_index: int
    names: tuple[str, ...]
    code: str
    requires: tuple[str, ...] = ()  # keys of other Replays needed first
    parameter: str | None = None  # a notebook parameter: assigned the run's value instead
    line: int | None = None  # `code` is the statement as written, from this line of its cell


@dataclass(frozen=True)
class Parameter:
    """An input of the workflow: a literal assignment of the notebook's parameters cell.

    `type` is a CWL type ("int", "long", "double", "string", "boolean", "File", "Directory",
    or one of the first five followed by "[]"); `default` is the notebook's value.
    """

    name: str
    type: str
    default: object
    cell_index: int
    line: int

    @property
    def is_path(self) -> bool:
        """True for File and Directory inputs."""
        return self.type in ("File", "Directory")


@dataclass(frozen=True)
class Setting:
    """A statement that changed process-wide state (pandas' options, matplotlib's style, a
    warning filter), which later steps run again before the cells that follow it.

    A step replays it once one of `owners` is imported there ("" means at once): a library
    a step never imports cannot show the state.
    """

    key: str
    cell_index: int
    line: int
    code: str
    owners: tuple[str, ...]
    kinds: tuple[str, ...]  # what it changes, for explain
    requires: tuple[str, ...] = ()  # keys of the Replays it needs first


@dataclass(frozen=True)
class StepInput:
    """A value a step loads: variable, `rng:*` state or `file:<path>`, and where it comes from.

    `producer` is the producing step's name, or None for a file beside the notebook
    (a workflow input).
    """

    var: str
    producer: str | None
    producer_cell: int | None


@dataclass(frozen=True)
class MapPlan:
    """How a cell's loop or comprehension is split, scattered and gathered (runtime payload)."""

    form: str
    method: str  # "scatter", "dotproduct" or "nested_crossproduct"
    line: int
    prefix_code: str
    iterables: tuple[str, ...]
    targets: tuple[str, ...]
    conditions: tuple[tuple[str, ...], ...]  # filters, per collection
    element: str | None
    result: str
    body: str | None
    accumulators: tuple[str, ...]
    gather_code: str
    reads: tuple[str, ...]
    loop_locals: tuple[str, ...]
    keep_locals: tuple[str, ...] = ()  # loop names whose last value is used after the loop
    chunks: int = 0  # 0: one chunk per available core, capped by the item count
    gpu: bool = False
    asked: bool = False  # the user asked for this scatter (@parallel_task, a scatter hint)
    body_at_lines: bool = False  # `body` is at its cell's lines: compiled under its file name
    # each item's seconds in the last run (same cell source): the split balances its chunks
    item_seconds: tuple[float, ...] = ()

    def to_json(self) -> dict:
        """The plan as plain JSON data for the step runtime."""
        def plain(value: object) -> object:
            return [plain(v) for v in value] if isinstance(value, tuple) else value

        return {k: plain(v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class TrainingPlan:
    """How a training cell runs under a tf.distribute strategy (runtime payload).

    `kind` is "keras_fit" or "custom_loop". `distributed` is False when the step runs on the
    default (one-device) strategy because the transformation could not be proved safe; the
    step's reasons say why. `seed` is the notebook's TensorFlow seed expression, if any.
    """

    kind: str
    cell: int
    line: int
    models: tuple[str, ...]
    distributed: bool = True
    step_function: str | None = None
    # (cell, code) run after the inputs load, before the cells: rewritten definitions and the
    # functions lifted from loop bodies, their lines where they are in that cell
    preludes: tuple[tuple[int, str], ...] = ()
    seed: str | None = None
    scale_learning_rate: bool = False
    within: str | None = None  # the notebook function the training is in (the cell calls it)
    reason: str | None = None  # why it stays on one device (when `distributed` is False)
    origin: tuple[int, int] | None = None  # (cell, line) of the loop or fit in `within`

    def to_json(self) -> dict:
        """The plan as plain JSON data for the step runtime."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Resources:
    """What one step needs where it runs; None leaves it to the deployment's default."""

    cores: int | None = None
    memory_mb: int | None = None  # MiB
    gpus: int = 0  # per node
    nodes: int = 1  # more than one: one task per node (multi-node training)

    @property
    def is_default(self) -> bool:
        """True when the step asks for nothing beyond the deployment's default."""
        return self == Resources()


@dataclass(frozen=True)
class Step:
    """One CWL step: one or more notebook cells run in one process."""

    name: str
    cells: tuple[CellCode, ...]
    inputs: tuple[StepInput, ...]
    outputs: tuple[str, ...]  # values later steps load (variables, rng:*, file:*)
    replay: tuple[str, ...]  # Replay keys run before the cells, in order
    alias_groups: tuple[tuple[str, ...], ...] = ()
    writes_files: bool = False  # capture the files the step creates or changes
    sees_all_files: bool = False  # the step may touch any file: stage every earlier file
    target: str | None = None  # deployment name, when the user bound the step to one
    reasons: tuple[str, ...] = ()  # why the step has this shape (merges, fusions, fallbacks)
    role: str = "cell"  # "cell"; for a scattered loop: "split", "map" or "gather"
    plan: MapPlan | None = None  # the loop's plan (cell steps that can be scattered, and
    #                              the split/map/gather steps made from them)
    resources: Resources = Resources()  # cores, memory, GPUs and nodes the step needs
    training: TrainingPlan | None = None  # a training cell run under a tf.distribute strategy
    parameters: tuple[str, ...] = ()  # the notebook parameters whose run values it needs
    defines: tuple[str, ...] = ()  # variables its cells bind or change (not definitions)

    @property
    def first_cell(self) -> int:
        """Index of the step's first cell."""
        return self.cells[0].index

    @property
    def is_skeleton_part(self) -> bool:
        """True for the split, map and gather steps of a scattered loop."""
        return self.role != "cell"

    def depends_on(self) -> tuple[str, ...]:
        """Names of the steps this step loads values from."""
        return tuple(sorted({i.producer for i in self.inputs if i.producer is not None}))


@dataclass(frozen=True)
class Edge:
    """A value flowing from the cell that last defined it to a cell that reads it."""

    var: str
    producer_cell: int | None
    consumer_cell: int


@dataclass(frozen=True)
class CellView:
    """How one notebook cell appears in the workflow (for explain, graph and assembly)."""

    index: int
    cell_id: str
    cell_type: str
    role: str  # "step", "definitions" (replayed where needed), "skipped", "markdown", "empty"
    step: str | None
    inputs: tuple[tuple[str, int | None], ...] = ()
    replayed_from: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    first_line: int | None = None  # a script's cell: the file's line of the cell's line 1
    prompt: int | None = None  # a code cell's In [n] after a Run All in a new kernel

    def file_line(self, line: int) -> int | None:
        """The script's line of the cell's `line` (None for a notebook's cell)."""
        return None if self.first_line is None or not line else self.first_line + line - 1


@dataclass(frozen=True)
class Fallback:
    """A place where nb2cwl chose the safe sequential form, and why."""

    cell: int
    reason: str
    training: str | None = None  # training run as written: its kind ("tf1_session", ...)
    line: int = 0  # where in the cell (for training)
    hazard: str | None = None  # a loop kept sequential: the kind of hazard
    fix: str | None = None  # ... and the smallest change that would let it run in parallel


@dataclass(frozen=True)
class Workflow:
    """The whole compiled notebook."""

    notebook_name: str
    notebook_path: str
    steps: tuple[Step, ...]
    replays: tuple[Replay, ...]
    edges: tuple[Edge, ...]
    cells: tuple[CellView, ...]
    external_files: tuple[tuple[str, str], ...] = ()  # (relative path, "File"|"Directory")
    skeletons: tuple[str, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()
    diagnostics: tuple = field(default=())
    settings: tuple[Setting, ...] = ()  # replayed in later steps, in notebook order
    skipped_magics: tuple[str, ...] = ()  # magics a step does not run (%pip, %tensorboard)
    # deployments the notebook's own (Jupyter-Workflow) metadata defines: name -> entry
    notebook_deployments: dict = field(default_factory=dict, hash=False, compare=False)
    # cells that are no step of their own (definitions only, comments): a step whose cells
    # surround one runs it in its place, so later cells see the definitions it makes then
    quiet_cells: tuple[CellCode, ...] = ()
    parameters: tuple[Parameter, ...] = ()  # the workflow's inputs (the parameters cell)
    parameter_cell: int | None = None  # after it, steps assign the run's parameter values
    content_path: str | None = None  # the notebook file the cells came from, if not the
    #                                  notebook itself (an editor's unsaved copy)
    keep_values: bool = False  # every step also saves what it `defines` (for pulling values)
    # `from __future__ import X` statements (cell, feature): in a kernel they hold for every
    # later cell, so a step compiles its cells with those of earlier cells
    future_imports: tuple[tuple[int, str], ...] = ()
    # libraries a step server may import before any step (analysis/preload.py)
    preload: tuple[str, ...] = ()

    def code_cells(self) -> dict[int, CellCode]:
        """Every code cell a step runs or replays, by index (a cell no step runs as its own,
        as the notebook has it)."""
        found = {c.index: c for s in self.steps for c in s.cells}
        found.update({c.index: c for c in self.quiet_cells})
        return found

    @property
    def source_path(self) -> str:
        """The file holding the cells: the notebook, or the copy they were read from."""
        return self.content_path or self.notebook_path

    def parameter(self, name: str) -> Parameter:
        """The parameter called `name`."""
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        raise KeyError(name)

    def where(self, cell: int, line: int | None = None) -> str:
        """A location as the user reads it: "In [3], line 4" in a notebook (Jupyter's number
        after a Run All; "cell 3" where a cell has none), "train.py, line 57" in a script."""
        view = next((v for v in self.cells if v.index == cell), None)
        file_line = view.file_line(line) if view is not None and line else None
        if file_line is not None:
            return f"{self.notebook_name}, line {file_line}"
        if view is not None and view.first_line is not None:
            return f"{self.notebook_name}, line {view.first_line}"
        shown = self.shown_cells([cell])
        return f"{shown}, line {line}" if line else shown

    def shown_cells(self, indices: Iterable[int]) -> str:
        """Cells as Jupyter numbers them after a Run All: "In [3]", "In [1] to [5]",
        "In [1], [4]"; "cell N" for a script's cells and wherever a cell has no number."""
        views = {v.index: v for v in self.cells}
        wanted = set(indices)
        if not wanted <= set(views):
            return "cell " + ", ".join(str(i) for i in sorted(wanted))
        return shown_cells(views[i] for i in wanted)

    def step(self, name: str) -> Step:
        """The step called `name`."""
        return self.steps_by_name[name]

    @cached_property
    def steps_by_name(self) -> dict[str, Step]:
        """Every step by its name (computed once)."""
        return {step.name: step for step in self.steps}

    @cached_property
    def external_numbers(self) -> dict[str, int]:
        """The number of each external input file, by its relative path."""
        return {path: number for number, (path, _) in enumerate(self.external_files)}

    def replay(self, key: str) -> Replay:
        """The Replay with `key`."""
        for replay in self.replays:
            if replay.key == key:
                return replay
        raise KeyError(key)
