"""Reaching definitions across cells: which earlier cell feeds each value a cell reads."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field

from nb2cwl.analysis.program import CellAnalysis, NotebookAnalysis, is_builtin
from nb2cwl.analysis.settings import Setting
from nb2cwl.analysis.state import Definition
from nb2cwl.analysis.together import KeptTogether, kept_together
from nb2cwl.errors import Diagnostic

ANY_FILE = "file:*"


@dataclass(frozen=True)
class Input:
    """A value a cell needs: a variable, `rng:*` state or `file:<path>`, and its producer cell.

    `producer` is None for files that exist beside the notebook (workflow inputs).
    """

    var: str
    producer: int | None


@dataclass
class CellFlow:
    """The dataflow facts of one code cell."""

    analysis: CellAnalysis
    inputs: list[Input] = field(default_factory=list)
    replay: list[Definition] = field(default_factory=list)  # in dependency order
    outputs: set[str] = field(default_factory=set)  # values later cells take from this cell
    missing: list[str] = field(default_factory=list)  # names read but defined nowhere before

    @property
    def index(self) -> int:
        """The cell's index (all cells counted)."""
        return self.analysis.cell.index


@dataclass
class Dataflow:
    """The cell-level dataflow graph of a notebook."""

    analysis: NotebookAnalysis
    cells: list[CellFlow]
    external_files: dict[str, str]  # relative path -> "File" or "Directory"
    diagnostics: list[Diagnostic]
    together: list[KeptTogether] = field(default_factory=list)  # cells that share a step
    settings: list[Setting] = field(default_factory=list)  # replayed in later steps
    _index: dict[int, CellFlow] = field(default_factory=dict, repr=False)
    _consumers: dict[int, list[tuple[CellFlow, Input]]] | None = field(default=None, repr=False)

    def cell(self, index: int) -> CellFlow:
        """The CellFlow of cell `index`."""
        if len(self._index) != len(self.cells):
            self._index = {flow.index: flow for flow in self.cells}
        return self._index[index]

    def consumers(self, index: int) -> list[tuple[CellFlow, Input]]:
        """Every (cell, input) that takes a value from cell `index`."""
        if self._consumers is None:
            self._consumers = {}
            for flow in self.cells:
                for item in flow.inputs:
                    if item.producer is not None:
                        self._consumers.setdefault(item.producer, []).append((flow, item))
        return self._consumers.get(index, [])


def build_dataflow(analysis: NotebookAnalysis) -> Dataflow:
    """Link every read to the last earlier cell that defined, mutated or deleted the value."""
    notebook_dir = os.path.dirname(analysis.notebook.path)
    last: dict[str, tuple[str, object]] = {}  # var -> ("data", cell) | ("replay", Definition)
    #                                                   | ("deleted", cell)
    file_writer: dict[str, int] = {}
    opaque_writers: list[int] = []
    stars: list[Definition] = []
    search_dirs: list[str] = []  # folders sys.path settings add (relative to the notebook)
    flows: list[CellFlow] = []
    external: dict[str, str] = {}
    diagnostics: list[Diagnostic] = list(analysis.diagnostics)
    for cell in analysis.cells:
        flow = CellFlow(cell)
        fx = cell.effects
        needed: dict[str, int | None] = {}
        replay: dict[str, Definition] = {}
        builtins_read = False  # a star import may have rebound them (`from numpy import *`)
        pending = sorted(fx.reads)
        if fx.reads_all:  # %who: every variable bound so far
            pending = sorted(set(pending) | {n for n in last if not n.startswith(("rng:",
                                                                                  "file:"))})
        while pending:
            name = pending.pop(0)
            source = last.get(name)
            if source is None:
                if not is_builtin(name) and name not in fx.writes:
                    flow.missing.append(name)
                builtins_read = builtins_read or is_builtin(name)
                continue
            kind, what = source
            if kind == "data":
                needed[name] = what  # type: ignore[assignment]
            elif kind == "replay":
                _add_replay(what, replay)  # type: ignore[arg-type]
        if stars and (flow.missing or builtins_read or replay):
            # what a star import binds is unknown here: replay it wherever a name may come
            # from it, a builtin included, or where replayed functions may call one
            for definition in stars:
                _add_replay(definition, replay)
        for state in sorted(fx.rng):
            source = last.get(state)
            if source is not None:
                needed[state] = source[1]  # type: ignore[assignment]
        _file_inputs(cell, file_writer, opaque_writers, notebook_dir, needed, external)
        for key in _local_modules([*cell.definitions.values(), *replay.values()], notebook_dir,
                                  set(file_writer), search_dirs):
            path = key.rstrip("/")
            if path in file_writer:  # written by an earlier cell (%%writefile helper.py)
                needed[f"file:{path}"] = file_writer[path]
            else:  # `import helper` finds helper.py beside the notebook
                external[path] = "Directory" if key.endswith("/") else "File"
                needed[f"file:{path}"] = None
        flow.inputs = [Input(var, producer) for var, producer in needed.items()]
        flow.replay = _ordered(replay)
        flows.append(flow)
        # what this cell leaves for later cells
        for name in fx.writes | fx.mutates:
            if name in cell.definitions and name not in fx.mutates:
                last[name] = ("replay", cell.definitions[name])
            else:
                last[name] = ("data", cell.cell.index)
        for name in fx.deletes - fx.writes:
            last[name] = ("deleted", cell.cell.index)
        for state in fx.rng:
            last[state] = ("data", cell.cell.index)
        for path in fx.file_writes:
            file_writer[_normal(path)] = cell.cell.index
        if fx.opaque_io:
            opaque_writers.append(cell.cell.index)
        installs = {line for line, _ in fx.installs}  # said once, by their own warning
        for line, what in [*[(line, what) for line, what in fx.opaque_io
                             if line not in installs], *fx.opaque_reads][:1]:
            diagnostics.append(Diagnostic(
                "unresolved-io",
                f"{what}: the step sees every file earlier cells wrote and the files beside "
                "the notebook that the cell names literally; other files beside the notebook "
                "are not staged",
                analysis.notebook.location(cell.cell, line or None)))
        stars.extend(cell.star_imports)
        search_dirs += _import_dirs(cell)
    for flow in flows:
        fx = flow.analysis.effects
        if fx.opaque_io or fx.opaque_reads:
            # a cell that cannot say which files it reads sees every file the notebook names
            have = {i.var for i in flow.inputs}
            flow.inputs += [Input(f"file:{key}", None) for key in sorted(external)
                            if f"file:{key}" not in have]
    by_index = {flow.index: flow for flow in flows}
    for flow in flows:
        for item in flow.inputs:
            if item.producer is not None and item.producer in by_index:
                by_index[item.producer].outputs.add(item.var)
    _warn_unserializable(analysis, flows, by_index, diagnostics)
    settings = [s for cell in analysis.cells for s in cell.settings]
    return Dataflow(analysis, flows, external, diagnostics, kept_together(analysis.cells),
                    settings)


def needed_cells(flow: Dataflow, chosen: set[int]) -> set[int]:
    """The cells `chosen` (indices) and every cell whose effects they may see: the producers
    of what they read, the definitions they replay, the settings made before them, and the
    cells kept together with them."""
    flows = {cell.index: cell for cell in flow.cells}
    needed: set[int] = set()
    pending = sorted(chosen)
    while pending:
        index = pending.pop()
        if index in needed:
            continue
        needed.add(index)
        cell = flows.get(index)
        if cell is None:
            continue
        found = [item.producer for item in cell.inputs if item.producer is not None]
        definitions = list(cell.replay)
        while definitions:
            definition = definitions.pop()
            found.append(definition.cell_index)
            definitions.extend(definition.requires)
        found += [setting.cell_index for setting in flow.settings if setting.cell_index < index]
        for group in flow.together:
            if group.first <= index <= group.last:
                found += [i for i in flows if group.first <= i <= index]
        pending += [i for i in found if i not in needed]
    return needed


def _file_inputs(
    cell: CellAnalysis,
    file_writer: dict[str, int],
    opaque_writers: list[int],
    notebook_dir: str,
    needed: dict[str, int | None],
    external: dict[str, str],
) -> None:
    fx = cell.effects
    last_opaque = opaque_writers[-1] if opaque_writers else None
    sees_all = bool(fx.opaque_io or fx.opaque_reads)
    touched = set(fx.file_reads) | (set(fx.file_writes) if sees_all else set())
    for path in fx.file_writes:  # writing into a folder an earlier cell made needs the folder
        parts = _normal(path).split("/")
        touched |= {"/".join(parts[:end]) for end in range(1, len(parts))
                    if "/".join(parts[:end]) in file_writer}
    for literal in fx.literals - fx.file_writes:
        # a path mentioned in any call (os.path.exists("plot.png"), Image.open(...)) is read;
        # for a pattern such as "data/*.csv", the folder in front of it
        key = _glob_root(_normal(literal))
        if key in (".", "", "..") or key.startswith(("../", "/")):
            continue
        if key in file_writer or os.path.exists(os.path.join(notebook_dir, key)):
            touched.add(key)
    for path in sorted(touched):
        key = _normal(path)
        if key.startswith(("/", "../")):
            continue  # outside the notebook's folder: used where it is, not staged
        writer = file_writer.get(key)
        if last_opaque is not None and (writer is None or writer < last_opaque):
            needed[ANY_FILE] = last_opaque  # that cell may have written it since
        for inside, by in file_writer.items():  # a folder: what earlier cells put in it
            if inside.startswith(key + "/") or key == ".":
                needed[f"file:{inside}"] = by
        if writer is not None:
            needed[f"file:{key}"] = writer
            continue
        full = os.path.join(notebook_dir, key)
        if os.path.isfile(full) or os.path.isdir(full):
            external[key] = "Directory" if os.path.isdir(full) else "File"
            needed[f"file:{key}"] = None
    if sees_all:
        # the cell may touch any file: it sees every file written before it
        for key, writer in sorted(file_writer.items()):
            needed[f"file:{key}"] = writer
        if last_opaque is not None:
            needed[ANY_FILE] = last_opaque


def _import_dirs(cell: CellAnalysis) -> list[str]:
    """Relative folders a cell's settings add to sys.path (`sys.path.append('lib')`)."""
    found: list[str] = []
    for setting in cell.settings:
        if "sys.path" in setting.code:
            found += [path for path in re.findall(r"['\"]([^'\"]+)['\"]", setting.code)
                      if not os.path.isabs(path) and ".." not in path.split("/")]
    return found


def _local_modules(definitions: list[Definition], notebook_dir: str,
                   written: set[str], search_dirs: list[str] = ()) -> list[str]:
    """Modules the imports among `definitions` find beside the notebook, as Jupyter does.

    The kernel runs in the notebook's folder, so `import helper` imports helper.py (or the
    package helper/) from there, or from a folder a setting added to sys.path: a step
    importing it needs that file in its own folder.
    """
    found: list[str] = []
    for definition in definitions:
        try:
            tree = ast.parse(definition.code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                keys = [f"{top}.py", f"{top}/"]
                keys += [_normal(f"{folder}/{key}") + ("/" if key.endswith("/") else "")
                         for folder in search_dirs for key in (f"{top}.py", f"{top}/")]
                for key in keys:
                    there = key.rstrip("/") in written or os.path.exists(
                        os.path.join(notebook_dir, key))
                    if there and key not in found:
                        found.append(key)
    return found


def _glob_root(path: str) -> str:
    parts = path.split("/")
    for number, part in enumerate(parts):
        if any(c in part for c in "*?["):
            return "/".join(parts[:number])
    return path


def _add_replay(definition: Definition, into: dict[str, Definition]) -> None:
    if definition.key in into:
        return
    for required in definition.requires:
        _add_replay(required, into)
    into[definition.key] = definition


def _ordered(replay: dict[str, Definition]) -> list[Definition]:
    def position(d: Definition) -> tuple[int, int]:
        cell, number = d.key.split(":")
        return int(cell), int(number)

    return sorted(replay.values(), key=position)


def _normal(path: str) -> str:
    normal = os.path.normpath(path).replace(os.sep, "/")
    return normal[2:] if normal.startswith("./") else normal


def _warn_unserializable(
    analysis: NotebookAnalysis,
    flows: list[CellFlow],
    by_index: dict[int, CellFlow],
    diagnostics: list[Diagnostic],
) -> None:
    notebook = analysis.notebook
    for flow in flows:
        for name, (what, line) in sorted(flow.analysis.unserializable.items()):
            if name not in flow.outputs:
                continue
            consumers = sorted(f.index for f in flows
                               if any(i.var == name and i.producer == flow.index
                                      for i in f.inputs))
            diagnostics.append(Diagnostic(
                "unserializable",
                f"{name} holds {what}, which cannot be passed to cell "
                f"{', '.join(map(str, consumers))}: create it in the cell that uses it, or tag "
                f"the cells nb2cwl:step=<name> so they run in one step",
                notebook.location(flow.analysis.cell, line)))
