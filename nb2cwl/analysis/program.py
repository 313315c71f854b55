"""Analyse a whole notebook: per-cell effects, replayable definitions, unserializable values."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field, replace

import astroid
from astroid import nodes
from astroid.exceptions import AstroidError

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.cost import estimate_cell, function_definitions
from nb2cwl.analysis.effects import Effects
from nb2cwl.analysis.history import kernel_history
from nb2cwl.analysis.inference import AstroidInferrer
from nb2cwl.analysis.replayable import (
    as_written,
    changes_values_when_defined,
    is_docstring_or_pass,
    parameter_definition,
    replayable_definition,
)
from nb2cwl.analysis.settings import Setting, settle, snapshot
from nb2cwl.analysis.skeletons import Blocked, MapSkeleton, find_skeleton
from nb2cwl.analysis.state import Definition, NamespaceState
from nb2cwl.analysis.string_values import notebook_names
from nb2cwl.analysis.training import TrainingSite, find_seed, find_training
from nb2cwl.analysis.walker import BUILTIN_NAMES, EffectWalker
from nb2cwl.errors import AnalysisError, Diagnostic
from nb2cwl.frontend.directives import (
    TAG_NOT_CHOSEN,
    TAG_SKIP,
    CellDirectives,
    kale_continuation,
    read_directives,
)
from nb2cwl.frontend.model import Cell, Notebook
from nb2cwl.frontend.parameters import INJECTED_TAG


@dataclass
class CellAnalysis:
    """Everything the analysis found about one code cell."""

    cell: Cell
    directives: CellDirectives
    effects: Effects
    definitions: dict[str, Definition] = field(default_factory=dict)  # final replayable binds
    definition_only: bool = False
    unserializable: dict[str, tuple[str, int]] = field(default_factory=dict)  # name->(what,line)
    alias_groups: list[frozenset[str]] = field(default_factory=list)
    star_imports: list[Definition] = field(default_factory=list)
    skeleton: MapSkeleton | None = None
    blocked: list[Blocked] = field(default_factory=list)
    training: TrainingSite | None = None
    seed: tuple[int, str] | None = None  # (line, expression) of a TensorFlow seed call
    settings: list[Setting] = field(default_factory=list)  # replayed in later steps
    empty: bool = False  # only comments or whitespace: nothing to run
    seconds: float = 0.0  # how long the cell runs, estimated from its code (analysis/cost.py)
    unbounded: str = ""  # the loop whose cost the code does not bound, if any (same)


@dataclass
class NotebookAnalysis:
    """The per-cell analyses of a notebook, in cell order, and what was noticed on the way."""

    notebook: Notebook
    cells: list[CellAnalysis]
    diagnostics: list[Diagnostic]


def analyse_notebook(notebook: Notebook) -> NotebookAnalysis:
    """Run the effect analysis over every code cell of `notebook`, top to bottom."""
    diagnostics: list[Diagnostic] = []
    directives = kale_continuation(
        list(notebook.code_cells),
        {c.index: read_directives(c, notebook.name) for c in notebook.code_cells})
    if notebook.parameters is not None:  # papermill's output as input: its injected cell is
        for cell in notebook.code_cells:  # replaced by the run's values, as papermill does
            if INJECTED_TAG in cell.tags and not directives[cell.index].skip:
                directives[cell.index] = replace(directives[cell.index], skip=True)
                diagnostics.append(Diagnostic(
                    "injected-parameters", "a cell papermill injected earlier: not run, the "
                    "run's values are assigned after the parameters cell instead",
                    notebook.location(cell), "note"))
    active = [c for c in notebook.code_cells if not directives[c.index].skip]
    module, spans, offsets = _whole_module(active, notebook.path)
    line_counts = {c.index: c.code.count("\n") + 1 for c in active}
    inferrer = AstroidInferrer()
    state = NamespaceState(names=notebook_names(cell.code for cell in active))
    results: list[CellAnalysis] = []
    assigned: set[str] = set()  # names earlier cells bound
    functions: dict = {}  # the notebook's function definitions so far, for cost estimates
    for cell in active:
        body = spans.get(cell.index)
        offset = offsets.get(cell.index, 0)
        try:
            if body is None:  # the cell could not be placed in the whole module: parse alone
                body = astroid.parse(cell.code, module_name=f"cell_{cell.index}").body
                offset = 0
            parameters = ({p.name: p.line for p in notebook.parameters.parameters}
                          if notebook.parameters is not None
                          and notebook.parameters.cell_index == cell.index else {})
            analysis = _analyse_cell(cell, directives[cell.index], body, state, inferrer,
                                     offset, assigned, parameters)
        except RecursionError:
            raise AnalysisError("the cell is nested too deeply to analyse; split it into "
                                "smaller expressions or functions",
                                notebook.location(cell)) from None
        _origin(analysis, offsets, line_counts)
        _relative_lines(analysis, offset)
        functions.update(function_definitions(cell.code))
        estimate = estimate_cell(cell.code, functions)
        analysis.seconds, analysis.unbounded = estimate.seconds, estimate.unbounded
        results.append(analysis)
        assigned |= analysis.effects.writes
    del module
    kernel_history([(a.cell, a.effects) for a in results])
    for cell in notebook.code_cells:
        if directives[cell.index].skip and INJECTED_TAG not in cell.tags:
            tag = "skip" if "skip" in cell.tags and TAG_SKIP not in cell.tags else TAG_SKIP
            why = ("not among --cells, and none of them needs it" if TAG_NOT_CHOSEN in cell.tags
                   else f"tag {tag}")
            diagnostics.append(Diagnostic("skipped", f"cell skipped ({why})",
                                          notebook.location(cell), "note"))
    for cell in notebook.code_cells:
        if cell.own_magics:
            diagnostics.append(Diagnostic(
                "own-magic", "nb2cwl's own magics (%nb2cwl, %load_ext nb2cwl) drive nb2cwl "
                "from Jupyter and do not run in a step; a %%nb2cwl step cell runs its body",
                notebook.location(cell), "note"))
    for analysis in results:
        for line, why in analysis.effects.skipped_magics:
            diagnostics.append(Diagnostic("magic-skipped", why,
                                          notebook.location(analysis.cell, line or None)))
        for line, what in analysis.effects.installs:
            diagnostics.append(Diagnostic("installs-packages", what,
                                          notebook.location(analysis.cell, line or None)))
    return NotebookAnalysis(notebook, results, diagnostics)


def _analyse_cell(
    cell: Cell,
    directives: CellDirectives,
    body: list[nodes.NodeNG],
    state: NamespaceState,
    inferrer: AstroidInferrer,
    offset: int,
    assigned: set[str],
    parameters: dict[str, int] | None = None,
) -> CellAnalysis:
    """`parameters`: the notebook's parameters this cell declares, by name, with their line."""
    walker = EffectWalker(state, cell.index, inferrer)
    settings: list[Setting] = []
    replayable_statements = 0
    unserializable: dict[str, tuple[str, int]] = {}
    stars: list[Definition] = []
    skeleton: MapSkeleton | None = None
    blocked: list[Blocked] = []
    for number, stmt in enumerate(body):
        if skeleton is None and walker.depth == 0:
            found = find_skeleton(stmt, state, cell.index, cell.code, offset, inferrer,
                                  frozenset(directives.scatter))
            if isinstance(found, MapSkeleton):
                skeleton = found
            elif isinstance(found, Blocked):
                blocked.append(found)
        definition = (parameter_definition(stmt, cell.index, number, offset, parameters)
                      or replayable_definition(stmt, state, cell.index, number, walker))
        if definition is not None:
            definition = as_written(definition, stmt, cell.code, offset)
        before, changed = snapshot(walker.fx), len(walker.fx.state_changes)
        walker.defining_changes = set()
        walker.statement(stmt)
        if changes_values_when_defined(stmt, walker):
            definition = None  # @register("name") fills a registry: the def is data
        changes = walker.fx.state_changes[changed:]
        if changes:
            setting = settle(stmt, number, cell.index, offset, walker.fx, before, changes, state,
                             assigned | set(before.writes))
            if setting is not None:
                settings.append(setting)
        if definition is not None:
            replayable_statements += 1
            if definition.star:
                state.star_imports.append(definition)
                stars.append(definition)
            for name in definition.names:
                state.definitions[name] = definition
        elif is_docstring_or_pass(stmt):
            replayable_statements += 1
        _note_unserializable(stmt, walker, unserializable)
    effects = walker.finish()
    for name, value in _apply_directives(directives, effects).items():
        effects.notes.append((0, f"{name}: {value}"))
    finals = {
        name: state.definitions[name]
        for name in effects.writes
        if name in state.definitions and state.definitions[name].cell_index == cell.index
    }
    definition_only = (
        replayable_statements == len(body)
        and not (effects.rng or effects.file_writes or effects.file_reads or effects.opaque_io
                 or effects.opaque_reads or effects.holds)
        and not cell.magics
        and not directives.declared_out
        and not effects.mutates
    )
    handed = {state.hand_off_group(n) for n in effects.writes | effects.mutates}
    groups = sorted((group for group in handed if len(group) > 1), key=sorted)
    training = find_training(body, walker.qualify)
    if training is not None and skeleton is not None:
        skeleton = None  # a training loop is distributed by a strategy, not scattered
    return CellAnalysis(cell, directives, effects, finals, definition_only, unserializable,
                        groups, stars, skeleton, blocked, training,
                        find_seed(body, walker.qualify), settings, not body)


def _origin(analysis: CellAnalysis, offsets: dict[int, int], sizes: dict[int, int]) -> None:
    """Training in a function the cell calls: the whole-module line of its loop (or fit) as
    (cell, line of that cell)."""
    site = analysis.training
    if site is None or not isinstance(site.origin, int) or not site.origin:
        return
    for index, offset in offsets.items():
        if offset < site.origin <= offset + sizes.get(index, 0):
            analysis.training = replace(site, origin=(index, site.origin - offset))
            return
    analysis.training = replace(site, origin=None)


def _relative_lines(analysis: CellAnalysis, offset: int) -> None:
    """Turn whole-module line numbers into lines of the cell (0 where the line is elsewhere).

    `offset` is the whole-module line before the cell's first line (0: parsed alone)."""
    size = max(analysis.cell.code.count("\n") + 1, 1)

    def fix(line: int) -> int:
        return line - offset if offset < line <= offset + size else 0

    fx = analysis.effects
    fx.notes = [(fix(line), text) for line, text in fx.notes]
    fx.opaque_io = [(fix(line), text) for line, text in fx.opaque_io]
    fx.opaque_reads = [(fix(line), text) for line, text in fx.opaque_reads]
    fx.opaque_namespace = [(fix(line), text) for line, text in fx.opaque_namespace]
    analysis.unserializable = {name: (what, fix(line))
                               for name, (what, line) in analysis.unserializable.items()}
    if analysis.training is not None:
        site = analysis.training
        analysis.training = replace(site, line=fix(site.line),
                                    loops=tuple(fix(line) for line in site.loops))
    if analysis.seed is not None:
        analysis.seed = (fix(analysis.seed[0]), analysis.seed[1])
    fx.holds = [replace(hold, line=fix(hold.line)) for hold in fx.holds]
    fx.reads_all = [(fix(line), text) for line, text in fx.reads_all]
    fx.skipped_magics = [(fix(line), text) for line, text in fx.skipped_magics]
    fx.installs = [(fix(line), text) for line, text in fx.installs]
    fx.views = [(fix(line), name, base, kind) for line, name, base, kind in fx.views]


def _apply_directives(directives: CellDirectives, effects: Effects) -> dict[str, str]:
    notes: dict[str, str] = {}
    if not directives.autoin:
        dropped = effects.reads - set(directives.declared_in)
        if dropped:
            notes["autoin"] = ("inputs limited to workflow.step.in; not loaded: "
                               + ", ".join(sorted(dropped)))
        effects.reads = set(directives.declared_in)
    else:
        effects.reads |= set(directives.declared_in)
    effects.file_reads |= set(directives.declared_in_files)
    effects.writes |= set(directives.declared_out)
    return notes


def _note_unserializable(stmt: nodes.NodeNG, walker: EffectWalker,
                         found: dict[str, tuple[str, int]]) -> None:
    if not isinstance(stmt, (nodes.Assign, nodes.With)):
        return
    pairs: list[tuple[nodes.NodeNG, nodes.NodeNG]] = []
    if isinstance(stmt, nodes.Assign):
        pairs = [(t, stmt.value) for t in stmt.targets]
    else:
        pairs = [(var, ctx) for ctx, var in stmt.items if var is not None]
    for target, value in pairs:
        if not isinstance(target, nodes.AssignName):
            continue
        what = None
        if isinstance(value, nodes.GeneratorExp):
            what = "a generator"
        elif isinstance(value, nodes.Call):
            qualified = walker.qualify(value.func)
            if qualified in kb.UNSERIALIZABLE_CONSTRUCTORS:
                what = kb.UNSERIALIZABLE_CONSTRUCTORS[qualified]
            elif isinstance(value.func, nodes.Name):
                what = _generator_function(value.func)
        if what:
            found[target.name] = (what, stmt.lineno)
        else:
            found.pop(target.name, None)


def _generator_function(name: nodes.Name) -> str | None:
    try:
        inferred = next(name.infer())
    except (AstroidError, StopIteration, RecursionError):
        return None
    if isinstance(inferred, nodes.FunctionDef) and inferred.is_generator():
        return "a generator"
    return None


def _whole_module(
    cells: list[Cell], path: str | None = None,
) -> tuple[nodes.Module | None, dict[int, list], dict[int, int]]:
    """One astroid module of every cell in order (inference sees across cells)."""
    chunks: list[str] = []
    starts: list[tuple[int, int, int]] = []  # (first line, last line, cell index)
    line = 1
    for cell in cells:
        code = cell.code if cell.code.endswith("\n") else cell.code + "\n"
        count = code.count("\n")
        starts.append((line, line + count - 1, cell.index))
        chunks.append(code)
        line += count
    try:
        # with the notebook's path: modules beside it are found, as in the kernel
        module = astroid.parse("".join(chunks), module_name="__notebook__", path=path)
    except (AstroidError, SyntaxError, ValueError, RecursionError):
        return None, {}, {}
    spans: dict[int, list] = {index: [] for _, _, index in starts}
    position = 0
    for stmt in module.body:
        while position < len(starts) and stmt.lineno > starts[position][1]:
            position += 1
        if position < len(starts):
            spans[starts[position][2]].append(stmt)
    offsets = {index: first - 1 for first, _, index in starts}
    return module, spans, offsets


def is_builtin(name: str) -> bool:
    """True for names Python provides without an import."""
    return hasattr(builtins, name) or name in BUILTIN_NAMES
