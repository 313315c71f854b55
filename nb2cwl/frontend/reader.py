"""Read a notebook file with nbformat, validate it and turn it into front-end cells."""

from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import replace

import nbformat

from nb2cwl.errors import Location, NotebookFormatError
from nb2cwl.frontend.magics import convert_cell, own_magics
from nb2cwl.frontend.model import Cell, Notebook, source_text
from nb2cwl.frontend.parameters import find_parameters
from nb2cwl.frontend.parse import check_syntax

_SAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


SCRIPT_SUFFIXES = (".py",)


def is_script(path: str) -> bool:
    """True for a plain Python script (read with jupytext), False for a notebook."""
    return path.lower().endswith(SCRIPT_SUFFIXES)


def read_notebook(path: str, content: str | None = None) -> Notebook:
    """Read, validate and convert `path`; raise NotebookFormatError or CellSyntaxError.

    `path` is a notebook (.ipynb) or a Python script (.py): see `read_document`. With
    `content`, the cells come from that notebook file instead (an editor's unsaved copy):
    `path` still names the notebook and the folder its files are in.
    """
    name = os.path.basename(path)
    where = Location(name)
    nb = read_document(path) if content is None else read_document(content, name)
    _check_kernel(nb, where)
    prompts: dict[int, int] = {}  # each code cell's In [n] after a Run All in a new kernel
    for index, nb_cell in enumerate(nb.cells):  # a blank one is not run, and gets no number
        if nb_cell.get("cell_type") == "code" and source_text(nb_cell).strip():
            prompts[index] = len(prompts) + 1
    cells = tuple(_make_cell(nb_cell, index, name, prompts.get(index))
                  for index, nb_cell in enumerate(nb.cells))
    if is_script(path):
        cells = _with_file_lines(cells, path)
    parameters = find_parameters(cells, name, os.path.dirname(os.path.abspath(path)))
    notebook = Notebook(path=os.path.abspath(path), name=name, cells=cells, metadata=nb.metadata,
                        parameters=parameters,
                        content=os.path.abspath(content) if content is not None else None)
    if not any(c.is_code and c.source.strip() for c in cells):
        raise NotebookFormatError("the notebook has no code to run (no non-empty code cell)", where)
    return notebook


def read_document(path: str, name: str | None = None) -> nbformat.NotebookNode:
    """The validated nbformat 4 document of `path` (`name`: the notebook's name in messages).

    A script is read with jupytext: cells are marked with `# %%` (the percent format); a script
    without markers has one cell per group of top-level statements separated by blank lines.
    """
    name = name or os.path.basename(path)
    where = Location(name)
    if is_script(path):
        return _read_script(path, where)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise NotebookFormatError(f"cannot read the notebook: {exc.strerror}", where) from None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except UnicodeDecodeError:
        raise NotebookFormatError("not a notebook: the file is not UTF-8 text", where) from None
    except json.JSONDecodeError as exc:
        raise NotebookFormatError(
            f"not a notebook: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            where,
        ) from None
    if not isinstance(data, dict) or ("cells" not in data and "worksheets" not in data):
        raise NotebookFormatError("not a notebook: the JSON has no 'cells'", where)
    major = data.get("nbformat")
    if major != 4:
        if major == 3:
            hint = "upgrade it with: jupyter nbconvert --to notebook --nbformat 4"
        else:
            hint = "nb2cwl reads nbformat 4 notebooks"
        raise NotebookFormatError(f"unsupported nbformat version {major!r}: {hint}", where)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
            nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        field = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        first = str(exc.message).splitlines()[0][:200]
        raise NotebookFormatError(f"invalid notebook at {field}: {first}", where) from None
    except Exception as exc:  # nbformat raises assorted errors on malformed documents
        raise NotebookFormatError(f"invalid notebook: {exc}", where) from None
    return nb


def _read_script(path: str, where: Location) -> nbformat.NotebookNode:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise NotebookFormatError(f"cannot read the script: {exc.strerror}", where) from None
    except UnicodeDecodeError:
        raise NotebookFormatError("not a script: the file is not UTF-8 text", where) from None
    import jupytext  # only scripts need it

    marked = _PERCENT_MARKER.search(text) is not None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = jupytext.reads(text, fmt="py:percent" if marked else "py:light")
    except Exception as exc:  # jupytext raises assorted errors on malformed scripts
        raise NotebookFormatError(f"cannot read the script: {exc}", where) from None
    for index, cell in enumerate(nb.cells):  # stable ids: the script has none of its own
        cell["id"] = f"cell-{index}"
    nb.metadata.setdefault("kernelspec", {"name": "python3", "language": "python",
                                          "display_name": "Python 3"})
    return nb


_PERCENT_MARKER = re.compile(r"^# %%", re.MULTILINE)


def _with_file_lines(cells: tuple[Cell, ...], path: str) -> tuple[Cell, ...]:
    """A script's code cells with the line of the file each starts at (located in order:
    jupytext keeps a code cell's lines as they are in the file)."""
    with open(path, encoding="utf-8") as handle:
        lines = [line.rstrip("\n") for line in handle]
    position = 0
    located = []
    for cell in cells:
        source = cell.source.splitlines()
        first = next((i for i, line in enumerate(source) if line.strip()), None)
        if not cell.is_code or first is None:
            located.append(cell)
            continue
        found = next((i for i in range(position, len(lines))
                      if lines[i] == source[first]), None)
        if found is None:
            located.append(cell)
            continue
        located.append(replace(cell, first_line=found - first + 1))
        position = found + len(source) - first
    return tuple(located)


def _check_kernel(nb: nbformat.NotebookNode, where: Location) -> None:
    spec = nb.metadata.get("kernelspec", {}) or {}
    info = nb.metadata.get("language_info", {}) or {}
    language = (spec.get("language") or info.get("name") or "python").lower()
    if language != "python":
        kernel = spec.get("name") or language
        raise NotebookFormatError(
            f"the notebook's kernel is {kernel!r} ({language}); nb2cwl compiles Python notebooks",
            where,
        )


def _make_cell(nb_cell: nbformat.NotebookNode, index: int, notebook: str,
               prompt: int | None = None) -> Cell:
    source = source_text(nb_cell)
    cell_id = str(nb_cell.get("id") or f"cell-{index}")
    metadata = dict(nb_cell.get("metadata", {}))
    tags = tuple(str(t) for t in metadata.get("tags", []) or [])
    if nb_cell.get("cell_type") != "code":
        return Cell(index, cell_id, str(nb_cell.get("cell_type")), source, tags=tags,
                    metadata=metadata)
    where = Location(notebook, index, cell_id, prompt=prompt)
    source, deployment, turned = own_magics(source)
    if deployment and "workflow" not in metadata:  # %%nb2cwl step --deployment NAME
        metadata["workflow"] = {"target": {"deployment": deployment}}
    code, magics = convert_cell(source, where)
    check_syntax(code, source, where)
    return Cell(index, cell_id, "code", source, code, tags, metadata, magics,
                own_magics=turned, prompt=prompt)


def safe_name(text: str) -> str:
    """`text` reduced to characters safe in CWL ids and file names."""
    cleaned = _SAFE_ID.sub("_", text).strip("_")
    return cleaned or "x"
